"""Preference pairs and KTO records as the trainer sees them (the layout: dataaudit.fields.PairLayout).

`joined` makes the conversation of one side with its prompt (LLaMA-Factory's `conversations` + `chosen`), so
the conversation checks see what the trainer renders, and names each turn by the field it is in. `PairBatch`
gives the pair checks, per record, each side's reply (the side's last turn, or the whole string), where it is,
and each side's own prompt where the layout lets them differ (implicit, v1). All vectorized over the batch.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dataaudit.fields import Column, PairLayout
from dataaudit.provenance import ROW
from dataaudit.texts import Conversation, conversation

# An implicit-prompt pair in Anthropic HH form: the prompt is everything up to the last "\n\nAssistant:".
HH_REPLY = r"(?s)^(?P<prompt>.*\n\nAssistant:)(?P<reply>.*)$"
TURN_JOIN, FIELD_JOIN = "\x1e", "\x1f"


def _np(arr) -> np.ndarray:
    return arr.to_numpy(zero_copy_only=False)


def joined(batch: pa.RecordBatch, prompt: Column, side: Column) -> Conversation:
    """The conversation prompt + side of every record (both conversation columns)."""
    p, _, _ = conversation(batch, prompt)
    s, _, _ = conversation(batch, side)
    rows = np.concatenate([p.rows, s.rows])
    source = np.concatenate([np.zeros(p.rows.size, np.int8), np.ones(s.rows.size, np.int8)])
    local = np.concatenate([p.turn, s.turn])
    order = np.lexsort((local, source, rows))
    rows, source, local = rows[order], source[order], local[order]
    counts = p.counts + s.counts
    starts = np.zeros(batch.num_rows, np.int64)
    starts[1:] = np.cumsum(counts)[:-1]
    turn = np.arange(rows.size, dtype=np.int64) - starts[rows]
    roles = pa.concat_arrays([p.roles, s.roles]).take(pa.array(order, pa.int64()))
    text = pa.concat_arrays([p.text, s.text]).take(pa.array(order, pa.int64()))
    return Conversation(side, batch.num_rows, rows, turn, roles, p.present & s.present, counts,
                        names=(prompt.name, side.name), source=source, local=local,
                        role_keys=(prompt.role_key, side.role_key), text=text)


def joined_views(layout: PairLayout) -> tuple[set[str], list[tuple[Column, Column]]]:
    """(the conversation columns the conversation checks never see alone, the (prompt, side) conversations they
    see instead). A prompt conversation alone ends with the user: it is no `no_assistant_turn`; beside string
    replies it is seen by the text checks only. Sides that are their own transcripts (implicit, v1) and KTO's
    whole `messages` are seen as they are."""
    p = layout.prompt
    sides = layout.sides or tuple(c for c in (layout.completion,) if c is not None)
    if p is None or p.kind != "conversation" or not sides:
        return set(), []
    conv = [s for s in sides if s.kind == "conversation"]
    return {p.name, *(s.name for s in conv)}, [(p, s) for s in conv]


@dataclass
class Side:
    """One side of every pair: its reply text (null: none), the reply's path per record, its own prompt (null
    where the layout has one shared prompt)."""

    name: str
    reply: pa.Array
    path: np.ndarray
    prompt: pa.Array | None


def _by_row(values: pa.Array, rows: np.ndarray, n: int) -> pa.Array:
    """Per record, the value of the (single) segment on its row; null where none."""
    pos = np.full(n, -1, np.int64)
    pos[rows] = np.arange(rows.size)
    return values.take(pa.array(pos, pa.int64(), mask=pos < 0))


def _joined_per_row(values: pa.Array, rows: np.ndarray, n: int, sep: str) -> pa.Array:
    counts = np.bincount(rows, minlength=n)
    offsets = np.zeros(n + 1, np.int32)
    np.cumsum(counts, out=offsets[1:])
    return pc.binary_join(pa.ListArray.from_arrays(pa.array(offsets), pc.fill_null(values, "")), sep)


def _conversation_side(batch: pa.RecordBatch, col: Column, own_prompt: bool) -> Side:
    conv, text, _ = conversation(batch, col)
    n = batch.num_rows
    last = conv.turn == conv.counts[conv.rows] - 1
    idx = np.flatnonzero(last)
    reply = _by_row(text.take(pa.array(idx, pa.int64())), conv.rows[idx], n)
    part = f"[0].{col.part_key}" if col.part_key else ""
    turn = np.zeros(n, np.int64)
    turn[conv.rows[idx]] = conv.turn[idx]
    path = np.char.add(np.char.add(f"{col.name}[", turn.astype(str)), f"].{col.text_key}{part}").astype(object)
    prompt = None
    if own_prompt:
        earlier = np.flatnonzero(~last)
        keys = pc.binary_join_element_wise(pc.fill_null(conv.roles, ""), pc.fill_null(text, ""), FIELD_JOIN)
        prompt = _joined_per_row(keys.take(pa.array(earlier, pa.int64())), conv.rows[earlier], n, TURN_JOIN)
        prompt = pc.if_else(pa.array(conv.counts > 0), prompt, pa.nulls(n, pa.string()))
    return Side(col.name, reply, path, prompt)


def _string_side(batch: pa.RecordBatch, col: Column, implicit: bool) -> Side:
    values = batch.column(col.name)
    values = values.cast(pa.string()) if not pa.types.is_string(values.type) else values
    path = np.full(batch.num_rows, col.name, dtype=object)
    if not implicit:
        return Side(col.name, values, path, None)
    parts = pc.extract_regex(values, HH_REPLY)
    hh = _np(pc.is_valid(parts)).astype(bool)
    reply = pc.if_else(pa.array(hh), pc.struct_field(parts, "reply"), values)
    prompt = pc.if_else(pa.array(hh), pc.struct_field(parts, "prompt"), pa.scalar("", pa.string()))
    return Side(col.name, reply, path, pc.if_else(pc.is_valid(values), prompt, pa.nulls(len(values), pa.string())))


def transcript(batch: pa.RecordBatch, col: Column | None) -> pa.Array:
    """Per record, the whole text of one column: a string as it is; a conversation's turns as role FIELD_JOIN
    text, joined by TURN_JOIN (so two prompts are equal exactly when their roles and texts are); "" where the
    record has none (and when `col` is None)."""
    n = batch.num_rows
    if col is None:
        return pa.array([""] * n, pa.string())
    if col.kind != "conversation":
        values = batch.column(col.name)
        values = values.cast(pa.string()) if not pa.types.is_string(values.type) else values
        return pc.fill_null(values, "")
    conv, text, _ = conversation(batch, col)
    keys = pc.binary_join_element_wise(pc.fill_null(conv.roles, ""), pc.fill_null(text, ""), FIELD_JOIN)
    return _joined_per_row(keys, conv.rows, n, TURN_JOIN)


def batch_rows(batch: pa.RecordBatch) -> np.ndarray:
    """Each record's row in its shard (the reader's provenance column; 0.. without one)."""
    if ROW in batch.schema.names:
        return np.asarray(_np(pc.fill_null(batch.column(ROW), -1)), dtype=np.int64)
    return np.arange(batch.num_rows, dtype=np.int64)


@dataclass
class PairBatch:
    """The "pair" target: both sides of every record of a batch. `prompt`: each record's prompt as one string
    (`transcript` of the shared prompt column; for implicit and v1, the chosen side's own prompt; None when built
    without one); `rows`: each record's row in the shard."""

    layout: PairLayout
    chosen: Side
    rejected: Side
    cache: dict = field(default_factory=dict)   # what several pair checks share (normalized replies)
    prompt: pa.Array | None = None
    rows: np.ndarray | None = None

    @property
    def records(self) -> int:
        return len(self.chosen.reply)

    @classmethod
    def of(cls, batch: pa.RecordBatch, layout: PairLayout) -> "PairBatch":
        own = layout.prompt is None     # implicit and v1: each side carries its prompt
        sides = [_conversation_side(batch, c, own) if c.kind == "conversation" else
                 _string_side(batch, c, own) for c in layout.sides]
        prompt = pc.fill_null(sides[0].prompt, "") if own else transcript(batch, layout.prompt)
        return cls(layout, *sides, prompt=prompt, rows=batch_rows(batch))


@dataclass
class KtoBatch:
    """The "kto" target: the label column of KTO records, as stored; `text`: each record's prompt and reply as one
    string (`transcript` of the prompt, FIELD_JOIN twice, `transcript` of the completion; KTO's single
    conversation as it is); `rows`: each record's row in the shard."""

    name: str
    values: pa.Array
    text: pa.Array | None = None
    rows: np.ndarray | None = None

    @classmethod
    def of(cls, batch: pa.RecordBatch, layout: PairLayout) -> "KtoBatch":
        text = transcript(batch, layout.prompt)
        if layout.completion is not None:
            text = pc.binary_join_element_wise(text, transcript(batch, layout.completion), FIELD_JOIN * 2)
        return cls(layout.label, batch.column(layout.label), text, batch_rows(batch))


@dataclass
class RankBatch:
    """The "ranked" target: every response of every record of a batch, flattened, with its number.

    text: one string per response (null: none); row: its record in the batch; pos: its index in the record's
    list; path: where it is (`responses[2]`, `completions[2].response`). count: responses per record (-1: the list
    is null). scores: one value per score, flattened (`score_row`, `score_pos` as for responses), as stored (a
    number array, or whatever the column holds); score_count: scores per record (-1: null list). numeric: the
    scores are numbers. ranks: lower is better (a rank column), else higher is better."""

    layout: PairLayout
    records: int
    text: pa.Array
    row: np.ndarray
    pos: np.ndarray
    path: np.ndarray
    count: np.ndarray
    scores: pa.Array
    score_row: np.ndarray
    score_pos: np.ndarray
    score_count: np.ndarray
    numeric: bool
    ranks: bool

    @classmethod
    def of(cls, batch: pa.RecordBatch, layout: PairLayout) -> "RankBatch":
        n = batch.num_rows
        col = layout.responses
        lists = batch.column(col.name)
        items, row, pos = _flatten(lists)
        count = _list_counts(lists)
        if layout.text_key is not None:
            text = pc.struct_field(items, layout.text_key)
            scores, score_row, score_pos = pc.struct_field(items, layout.score_key), row, pos
            score_count = count
            label = f".{layout.text_key}"
        else:
            text = items
            score_lists = batch.column(layout.scores)
            scores, score_row, score_pos = _flatten(score_lists)
            score_count = _list_counts(score_lists)
            label = ""
        text = text.cast(pa.string()) if not pa.types.is_string(text.type) else text
        t = scores.type
        numeric = pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t) or pa.types.is_null(t)
        path = np.char.add(np.char.add(f"{col.name}[", pos.astype(str)), f"]{label}").astype(object)
        return cls(layout, n, text, row, pos, path, count, scores, score_row, score_pos, score_count, numeric,
                   layout.ranks)


def _flatten(lists) -> tuple[pa.Array, np.ndarray, np.ndarray]:
    """(values, record, position in the record's list) of a list column (null lists hold none)."""
    if isinstance(lists, pa.ChunkedArray):
        lists = lists.combine_chunks()
    values = pc.list_flatten(lists)
    row = np.asarray(_np(pc.list_parent_indices(lists)), dtype=np.int64)
    counts = np.bincount(row, minlength=len(lists))
    starts = np.zeros(len(lists), np.int64)
    starts[1:] = np.cumsum(counts)[:-1]
    return values, row, np.arange(row.size, dtype=np.int64) - starts[row]


def _list_counts(lists) -> np.ndarray:
    if isinstance(lists, pa.ChunkedArray):
        lists = lists.combine_chunks()
    return np.asarray(_np(pc.fill_null(pc.list_value_length(lists), -1)), dtype=np.int64)
