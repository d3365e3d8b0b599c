"""How long the reasoning of each record is, against its answer and the context length.

Reasoning is the text of `<think>...</think>` in the assistant's turns (up to the last `</think>`, tags left
out) and of `{"type": "reasoning"}` content parts; the answer is the rest of the assistant's text. Per
conversation field, for the records that carry reasoning: `<field>.reasoning` and `<field>.answer` in
characters, and with `[data] tokenizer` `<field>.reasoning.tokens` (the reasoning alone, encoded without special
tokens), measured against the context length: a trace longer than the context leaves its answer to the cut.
Arrow kernels over the flattened turns and parts; no per-record Python.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dataaudit.fields import ASSISTANT_ROLES, Column
from dataaudit.texts import Segments, flatten_lists, plain_array, turn_lists

THINK = r"(?s)^(?P<reasoning>.*)</think>(?P<answer>.*)$"     # greedy: split at the last </think>
REASONING_PART = "reasoning"


def _np(arr) -> np.ndarray:
    return arr.to_numpy(zero_copy_only=False)


def _chars(arr: pa.Array) -> np.ndarray:
    return _np(pc.fill_null(pc.utf8_length(arr), 0)).astype(np.int64)


def _parts(batch: pa.RecordBatch, col: Column) -> tuple[np.ndarray, pa.Array]:
    """(row, text) of every reasoning part of the field's turns."""
    if col.part_key is None:
        return np.zeros(0, np.int64), pa.array([], pa.string())
    turns, rows, _ = flatten_lists(turn_lists(batch, col))
    if col.text_key not in [f.name for f in turns.type]:
        return np.zeros(0, np.int64), pa.array([], pa.string())
    parts, parents, _ = flatten_lists(pc.struct_field(turns, col.text_key))
    names = [f.name for f in parts.type]
    if "type" not in names or col.part_key not in names:
        return np.zeros(0, np.int64), pa.array([], pa.string())
    keep = _np(pc.fill_null(pc.equal(plain_array(pc.struct_field(parts, "type")), REASONING_PART), False)).astype(bool)
    text = plain_array(pc.struct_field(parts, col.part_key)).filter(pa.array(keep))
    return rows[parents[keep]], text


def reasoning_lengths(batch: pa.RecordBatch, col: Column, segs: Segments, mine: np.ndarray, usable: np.ndarray,
                      tokenizer=None) -> dict[str, np.ndarray]:
    """The statistics' lengths of one conversation field (`mine`: its prose segments in `segs`); empty when no
    record carries reasoning."""
    n = batch.num_rows
    assistant = mine & _np(pc.fill_null(pc.is_in(pc.utf8_lower(segs.roles), pa.array(ASSISTANT_ROLES)), False))
    idx = np.flatnonzero(assistant)
    values = segs.values.take(pa.array(idx, pa.int64()))
    rows = segs.rows[idx]
    split = pc.extract_regex(values, THINK)
    tagged = _np(pc.is_valid(split)).astype(bool)
    think = pc.replace_substring(pc.struct_field(split, "reasoning"), "<think>", "")
    answer = pc.if_else(pa.array(tagged), pc.struct_field(split, "answer"), values)
    part_rows, part_text = _parts(batch, col)
    r_rows = np.concatenate([rows[tagged], part_rows])
    r_text = pa.concat_arrays([plain_array(think.filter(pa.array(tagged))), part_text])
    reasoning = np.bincount(r_rows, weights=_chars(r_text), minlength=n).astype(np.int64)
    has = np.zeros(n, bool)
    has[r_rows] = True
    has &= usable
    if not has.any():
        return {}
    answers = np.bincount(rows, weights=_chars(answer), minlength=n).astype(np.int64)
    out = {f"{col.name}.reasoning": reasoning[has], f"{col.name}.answer": answers[has]}
    if tokenizer is not None:
        order = np.argsort(r_rows, kind="stable")
        counts = np.bincount(r_rows, minlength=n)
        offsets = np.zeros(n + 1, np.int32)
        np.cumsum(counts, out=offsets[1:])
        joined = pc.binary_join(pa.ListArray.from_arrays(pa.array(offsets), pc.fill_null(
            r_text.take(pa.array(order, pa.int64())), "")), "\n")
        texts = joined.filter(pa.array(has)).to_pylist()
        encoded = tokenizer.encode_batch(texts, add_special_tokens=False) if texts else []
        out[f"{col.name}.reasoning.tokens"] = np.fromiter((len(e) for e in encoded), np.int64, len(encoded))
    return out
