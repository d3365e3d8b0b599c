"""What a record still trains on once the trainer has rendered it and cut it to the context length (targets
"rendered" and "rendered_pair": dataaudit.stats.rendered_records, with `[data] tokenizer` and
`[data] context_length`): pair_truncated_identical, and no_trainable_tokens's rendered half (registered with its
tokenized half in dataaudit.checks.trained_tokens: one check, one name, two kinds of data).

Cutting keeps the first context_length tokens (right-side truncation, what trainers do by default). Only the
records at or over the context length are located (their trained start, their first tokens); the others keep
everything. A record whose trained start could not be located (a template that renders a conversation's
prefix otherwise) is never flagged.
"""
from __future__ import annotations

import numpy as np

from .base import CheckOutput, register

# The target is a dataaudit.stats.rendered_records.RenderedBatch, built by the audit; not imported here (the
# statistics import the checks, never the other way round).

# They run only with a tokenizer and a context length (`[data]`), skipped with a note otherwise.
_PARAMS = {"tokenizer": None, "context_length": None}
_NEEDS = {"data": {"tokenizer": "tokenizer", "context_length": "context_length"},
          "required": ("tokenizer", "context_length")}


def _empty(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    return np.zeros(n, bool), np.zeros(n, np.float64), np.full(n, None, object), np.full(n, None, object)


def untrained_rendered(rendered, train_on_prompt: bool = False) -> CheckOutput:
    """no_trainable_tokens on rendered records (dataaudit.checks.trained_tokens registers it on both its
    targets): the first trained token past the context length. value = that token's position."""
    flagged, value, detail, where = _empty(rendered.records)
    ctx = rendered.context_length
    if train_on_prompt or ctx is None:
        return CheckOutput(flagged, value, detail, where=where)
    for view in rendered.views:
        t = view.tokens
        start = t.train_start
        hit = (start >= ctx) & ~flagged[t.rows]
        rows, at = t.rows[hit], start[hit]
        flagged[rows], value[rows], where[rows] = True, at, view.path
        detail[rows] = [f"{view.key}: the first trained token is token {a} of {n}, past the context length {ctx}: "
                        "the cut leaves no trained token" for a, n in zip(at.tolist(), t.tokens[hit].tolist())]
    return CheckOutput(flagged, value, detail, where=where)


def _replied_heads(view) -> dict[int, np.ndarray]:
    """Batch row -> first context_length ids, of the records at or over the context whose side has a reply (an
    empty side is pair_empty_side's)."""
    replied, rows = view.replied, view.tokens.rows
    return {int(rows[j]): h for j, h in view.tokens.heads.items() if replied[rows[j]]}


@register("pair_truncated_identical", target="rendered_pair", severity="error", params=_PARAMS, **_NEEDS,
          detail="both sides are the same tokens once cut to the context length",
          description="With `[data] tokenizer` and `[data] context_length`: prompt + chosen and prompt + rejected, "
                      "rendered as the trainer does and cut to the context length, are the same token sequence "
                      "(they differ only past the cut, e.g. a long prompt): the pair teaches nothing and its reward "
                      "margin is 0. Pairs that are identical uncut are pair_identical's. value = the context length.")
def pair_truncated_identical(rendered, **params) -> CheckOutput:
    flagged, value, detail, where = _empty(rendered.records)
    sides, ctx = rendered.sides(), rendered.context_length
    if sides is None or ctx is None:
        return CheckOutput(flagged, value, detail, where=where)
    chosen, rejected = (_replied_heads(v) for v in sides)
    longer = set(np.concatenate([v.tokens.rows[v.tokens.tokens > ctx] for v in sides]).tolist())
    for row in sorted(chosen.keys() & rejected.keys() & longer):
        if np.array_equal(chosen[row], rejected[row]):
            flagged[row], value[row], where[row] = True, ctx, sides[0].path
            detail[row] = (f"prompt + chosen and prompt + rejected are the same {ctx} tokens once cut to the "
                           "context length: the sides differ only past the cut")
    return CheckOutput(flagged, value, detail, where=where)

