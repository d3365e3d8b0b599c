"""Reasoning traces in assistant turns: `<think>...</think>` in the text, and v1 `{"type": "reasoning"}` parts.

The tag checks run on the assistant's text turns with Arrow string kernels (no per-record Python); the parts
check reads the tool-use records (dataaudit.tool_turns), the only ones with reasoning parts. An assistant turn
that is only a `reasoning_content` with an empty content is `empty_reply`'s finding.
"""
from __future__ import annotations

import re

import numpy as np
import pyarrow.compute as pc

from dataaudit.tool_turns import ToolUse

from .base import CheckOutput, register
from .text_common import as_string_array, to_bool, to_int64
from .tool_calls import hits_output

OPEN, CLOSE = "<think>", "</think>"


def _locate_unpaired(text: str, **params) -> tuple[int, int] | None:
    """The first '</think>' with no '<think>' open before it, else the last '<think>' left open."""
    opened = []
    for m in re.finditer(f"{re.escape(OPEN)}|{re.escape(CLOSE)}", text):
        if m.group() == OPEN:
            opened.append(m.span())
        elif opened:
            opened.pop()
        else:
            return m.span()
    return opened[-1] if opened else None


def _tagged(arr) -> tuple[np.ndarray, object]:
    """The rows holding "think>" (both tags end so: one pass, where most text has none) and those rows alone."""
    rows = np.flatnonzero(to_bool(pc.match_substring(arr, "think>")))
    return rows, arr.take(rows) if rows.size else None


@register("think_unbalanced", target="text", turns="assistant", severity="warning", locate=_locate_unpaired,
          detail="'<think>' and '</think>' are not paired",
          description="An assistant turn whose `<think>` and `</think>` tags are not paired (different counts, or "
                      "a `</think>` before the first `<think>`): the trace and the answer are split where the "
                      "template does not expect. value = `<think>` count minus `</think>` count.")
def think_unbalanced(arr, **params) -> CheckOutput:
    arr = as_string_array(arr)
    n = len(arr)
    opens, closes = np.zeros(n, np.int64), np.zeros(n, np.int64)
    rows, tagged = _tagged(arr)
    early = np.zeros(n, bool)
    if rows.size:
        opens[rows] = to_int64(pc.count_substring(tagged, OPEN))
        closes[rows] = to_int64(pc.count_substring(tagged, CLOSE))
        first_open = to_int64(pc.find_substring(tagged, OPEN))
        first_close = to_int64(pc.find_substring(tagged, CLOSE))
        early[rows] = (closes[rows] > 0) & ((first_open < 0) | (first_close < first_open))
    flagged = (opens != closes) | early
    detail = np.full(n, None, dtype=object)
    for i in np.flatnonzero(flagged).tolist():
        detail[i] = f"{opens[i]} '<think>' and {closes[i]} '</think>'" + \
            (" ('</think>' comes first)" if opens[i] == closes[i] else "")
    return CheckOutput(flagged=flagged, value=(opens - closes).astype(np.float64), detail=detail)


@register("think_empty_answer", target=("text", "tool_use"), turns="assistant", severity="error",
          detail="the reasoning has no answer after it",
          description="An assistant turn with nothing after its last `</think>` (tags paired), or a reasoning part with no text "
                      "or tool-call part after it in the turn: the model learns to think and stop. value = 1 per "
                      "turn (text), such parts in the record (parts).")
def think_empty_answer(arg, **params) -> CheckOutput:
    if isinstance(arg, ToolUse):
        found = {rec.row: [(f"{arg.field.name}{w}", rec.roles[int(w[1:w.index("]")])],
                            "a reasoning part with no text or tool call after it in the turn") for w in rec.empty_reasoning]
                 for rec in arg.items if rec.empty_reasoning}
        return hits_output(arg, found, "turns")
    arr = as_string_array(arg)
    flagged = np.zeros(len(arr), bool)
    rows, tagged = _tagged(arr)
    if rows.size:
        # paired tags only: a stray '</think>' is think_unbalanced's
        paired = to_int64(pc.count_substring(tagged, OPEN)) == to_int64(pc.count_substring(tagged, CLOSE))
        ends = pc.fill_null(pc.match_substring_regex(tagged, r"</think>\s*$"), False).to_numpy(zero_copy_only=False)
        flagged[rows] = ends & paired
    return CheckOutput(flagged=flagged, value=flagged.astype(np.float64),
                       detail=np.where(flagged, "nothing after '</think>': the turn is all reasoning", None))


PROBE_CHARS = 200   # a trace's first characters (stripped) must appear in the rendering


@register("reasoning_dropped_by_template", target="tool_use", severity="warning",
          params={"tokenizer": None}, data={"tokenizer": "tokenizer"}, required=("tokenizer",),
          detail="the chat template leaves the reasoning out",
          description="With `[data] tokenizer` holding a chat template: a reasoning trace (a reasoning part, a "
                      "`reasoning_content` key) that the template's rendering of the conversation does not contain, "
                      "as when a template ignores `reasoning_content` or keeps only the last turn's: the model is "
                      "not trained on it. A tokenizer without a template checks nothing. value = such traces.")
def reasoning_dropped_by_template(tu: ToolUse, tokenizer=None, **params) -> CheckOutput:
    found = {}
    for rec in tu.items if tu.render is not None else ():
        traces = [(t, w, text.strip()[:PROBE_CHARS]) for t, w, text in rec.reasoning if text.strip()]
        if not traces:
            continue
        try:
            rendered = tu.render(rec)
        except Exception:  # noqa: BLE001 (a render error is the token lengths' finding, counted there)
            continue
        hits = [(f"{tu.field.name}{w}", rec.roles[t], f"the chat template's rendering leaves out this reasoning "
                 f"({probe[:40]!r}...)") for t, w, probe in traces if probe not in rendered]
        if hits:
            found[rec.row] = hits
    return hits_output(tu, found, "traces")
