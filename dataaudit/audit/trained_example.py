"""The shard's decoded example of what is trained (`trained_example` of a shard summary and of report.json's
shards): its first record with trained tokens, decoded with `[data] tokenizer`, the trained spans wrapped in
TRAINED_OPEN / TRAINED_CLOSE, so a person sees at a glance whether the replies (and their end token) are what the
loss sees. Raw records (conversations, pairs, Alpaca: no token labels) show their rendering
(dataaudit.stats.rendered_records) with the trained turns marked.

Host-side and once per shard (the first batch holding a trained record): one record decoded, no per-record loop.
A token is trained as the checks of dataaudit.checks.trained_tokens say: label != ignore_index (or train mask !=
0) at a real token (attention mask != 0); only real tokens are shown.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dataaudit.provenance import ROW
from dataaudit.stats.rendered_records import trained_spans

TRAINED_OPEN, TRAINED_CLOSE = "⟦", "⟧"
EXAMPLE_CHARS = 2000
CANDIDATES = 16   # rows tried for the example in one batch
EXAMPLE_BEFORE = 500   # characters kept before the first trained span of a long rendering


def _first_trained_rows(col: pa.Array, labels: bool, ignore_index, usable: np.ndarray) -> list[int]:
    """The first usable rows (at most CANDIDATES) whose labels / mask mark a trained position; the attention mask
    is applied by the caller to the row it shows (a row trained only on padding is skipped there)."""
    values = pc.list_flatten(col)
    rows = pc.list_parent_indices(col).to_numpy(zero_copy_only=False)
    v = values.to_numpy(zero_copy_only=False)
    hit = (v != ignore_index) if labels else (v != 0)
    if values.null_count:   # a null element marks nothing
        hit &= values.is_valid().to_numpy(zero_copy_only=False)
    cand = np.unique(rows[hit])
    return cand[usable[cand]][:CANDIDATES].tolist()


def _spans(trained: list[bool]) -> list[tuple[int, int, bool]]:
    """Runs of equal `trained` as (start, end, trained)."""
    out, start = [], 0
    for i in range(1, len(trained) + 1):
        if i == len(trained) or trained[i] != trained[start]:
            out.append((start, i, trained[start]))
            start = i
    return out


def _decode(tokenizer, ids: list[int], trained: list[bool]) -> str:
    parts = []
    for a, b, on in _spans(trained):
        text = tokenizer.decode(ids[a:b], skip_special_tokens=False)
        parts.append(TRAINED_OPEN + text + TRAINED_CLOSE if on else text)
        if sum(map(len, parts)) > EXAMPLE_CHARS:
            break
    return "".join(parts)[:EXAMPLE_CHARS]


def trained_example(batch: pa.RecordBatch, plan, tokenizer, ignore_index, usable: np.ndarray) -> dict | None:
    """{"record", "field", "text"} for the batch's first usable record with trained real tokens, else None.
    `plan`: the batch's FieldPlan (input_ids with token_labels or train_mask); `tokenizer`: a tokenizers.Tokenizer
    (or anything with its `decode`)."""
    if plan.input_ids is None or (plan.token_labels or plan.train_mask) is None:
        return None
    name, labels = (plan.token_labels, True) if plan.token_labels is not None else (plan.train_mask, False)
    col = batch.column(name)
    if not (pa.types.is_list(col.type) or pa.types.is_large_list(col.type) or pa.types.is_fixed_size_list(col.type)):
        return None
    ids_col, mask_col = batch.column(plan.input_ids), batch.column(plan.attention_mask) if plan.attention_mask else None
    for row in _first_trained_rows(col, labels, ignore_index, usable):
        ids = ids_col[row].as_py() or []
        marks = col[row].as_py() or []
        real = mask_col[row].as_py() if mask_col is not None else None
        if real is None or len(real) != len(ids):
            real = [1] * len(ids)
        keep = [i for i in range(min(len(ids), len(marks))) if real[i]]
        trained = [marks[i] is not None and (marks[i] != ignore_index if labels else marks[i] != 0) for i in keep]
        if not any(trained):
            continue   # trained only where the attention mask is 0
        real_ids = [ids[i] for i in keep]
        return {"record": batch.column(ROW)[row].as_py(), "field": plan.input_ids,
                "text": _decode(tokenizer, real_ids, trained)}
    return None


def rendered_example(batch: pa.RecordBatch, rendered, tokenizer) -> dict | None:
    """{"record", "field", "text"} for the batch's first record (of CANDIDATES tried) that renders with a trained
    turn, from its RenderedBatch: at most EXAMPLE_CHARS characters, from EXAMPLE_BEFORE before the first span."""
    for view in rendered.views:
        msgs = view.messages
        rows = np.searchsorted(msgs.starts, np.flatnonzero(msgs.trained), side="right") - 1
        for row in list(dict.fromkeys(rows.tolist()))[:CANDIDATES]:
            found = trained_spans(tokenizer, msgs, row)
            if found is None or not found[1]:
                continue
            text, spans = found
            for start, end in reversed(spans):
                text = text[:start] + TRAINED_OPEN + text[start:end] + TRAINED_CLOSE + text[end:]
            if len(text) > EXAMPLE_CHARS:
                cut = max(0, spans[0][0] - EXAMPLE_BEFORE)
                text = ("..." if cut else "") + text[cut:cut + EXAMPLE_CHARS] + "..."
            return {"record": batch.column(ROW)[row].as_py(), "field": view.key, "text": text}
    return None
