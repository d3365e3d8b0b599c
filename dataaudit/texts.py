"""The texts of a record batch under the field rule (dataaudit.fields), as Arrow arrays, without a per-record
Python loop: every text field's values, every element of a list of texts and every turn of a conversation,
flattened into one string array of *segments* with the batch row, field, turn index and role of each.

Checks run over the flattened segments in one call per check; a finding on segment i belongs to batch row
`rows[i]` and is named by its path: `output`, `images[2]`, `messages[3].content`, `conversations[1].value`.
A conversation's turns also make a `Conversation` (roles and turn counts per record) for the conversation checks,
and `record_text` joins every text of a record into one (what dedup and contamination compare).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dataaudit.fields import ASSISTANT_ROLES, JSON_ROLES, Column

PART_SEPARATOR = "\n"     # the text parts of one turn
TURN_SEPARATOR = "\n"     # the texts of one record, in record_text
# Keys of an OpenAI message that calls tools: such a turn's null or empty content is no text (not an empty reply).
CALL_KEYS = ("tool_calls", "function_call")


def plain_array(arr) -> pa.Array:
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if pa.types.is_null(arr.type):
        return pa.nulls(len(arr), pa.string())
    if pa.types.is_large_string(arr.type):
        return arr.cast(pa.string())
    return arr


def _np(arr) -> np.ndarray:
    return arr.to_numpy(zero_copy_only=False)


def flatten_lists(lists: pa.Array) -> tuple[pa.Array, np.ndarray, np.ndarray]:
    """(values, parent row, position in its list) of a list array (null lists have no values)."""
    lists = plain_array(lists)
    values = pc.list_flatten(lists)
    parents = _np(pc.list_parent_indices(lists)).astype(np.int64)
    idx = np.arange(parents.size, dtype=np.int64)
    start = np.ones(parents.size, bool)
    start[1:] = parents[1:] != parents[:-1]
    position = idx - np.maximum.accumulate(np.where(start, idx, 0)) if parents.size else idx
    return values, parents, position


def turn_lists(batch: pa.RecordBatch, col: Column) -> pa.Array:
    """A conversation column as a list of turns: a one-turn struct (LLaMA-Factory's `chosen`) becomes a list of
    one (a null struct: a null list), so its turn is named `chosen[0].value`."""
    arr = plain_array(batch.column(col.name))
    if not col.single:
        return arr
    valid = _np(pc.is_valid(arr)).astype(bool)
    offsets = np.zeros(len(arr) + 1, np.int32)
    np.cumsum(valid, out=offsets[1:])
    return pa.ListArray.from_arrays(pa.array(offsets), arr.filter(pa.array(valid)), mask=pa.array(~valid))


def _field(struct: pa.Array, key: str) -> pa.Array:
    return plain_array(pc.struct_field(struct, key))


def _turn_text(turns: pa.Array, col: Column) -> tuple[pa.Array, np.ndarray]:
    """(text of every turn, whether the turn has any text at all). A turn whose text is a list of parts joins its
    text parts; a turn made only of non-text parts (an image) has no text: it is not a text segment."""
    text = pc.struct_field(turns, col.text_key)
    if col.part_key is None:
        return plain_array(text), np.ones(len(turns), bool)
    text = plain_array(text)
    parts, parents, _ = flatten_lists(text)
    part_text = _field(parts, col.part_key)
    is_text = np.ones(len(parts), bool)
    if "type" in [f.name for f in parts.type]:
        kind = _field(parts, "type")
        is_text = _np(pc.fill_null(pc.or_(pc.is_null(kind), pc.equal(kind, "text")), True)).astype(bool)
    n = len(text)
    keep = np.flatnonzero(is_text)
    counts = np.bincount(parents[keep], minlength=n)
    offsets = np.zeros(n + 1, np.int32)
    np.cumsum(counts, out=offsets[1:])
    joined_lists = pa.ListArray.from_arrays(pa.array(offsets), pc.fill_null(part_text.take(pa.array(keep)), ""))
    joined = pc.binary_join(joined_lists, PART_SEPARATOR)
    # null content stays null; parts without any text part: no text
    all_parts = np.bincount(parents, minlength=n)
    has_text = (counts > 0) | (all_parts == 0)
    joined = pc.if_else(pc.is_null(text), pa.nulls(n, pa.string()), joined)
    return plain_array(joined), has_text


@dataclass
class Conversation:
    """The turns of one conversation field of a batch: per turn its record, position and role; per record its
    number of turns and whether it has a conversation at all."""

    field: Column
    records: int
    rows: np.ndarray          # int64 record of each turn
    turn: np.ndarray          # int64 position of each turn in its conversation
    roles: pa.Array           # string role of each turn (null: missing or the turn is null)
    present: np.ndarray       # bool per record: the field is there (not null)
    counts: np.ndarray        # int64 turns per record
    # A pair's side seen with its prompt (dataaudit.pairs.joined): per turn, the field it is in and its index there
    names: tuple[str, ...] | None = None
    source: np.ndarray | None = None
    local: np.ndarray | None = None
    role_keys: tuple[str, ...] | None = None
    text: pa.Array | None = None   # string text of each turn (null: none), for the checks that read it

    def where(self, turns: np.ndarray) -> list[str]:
        """The path suffix of the turns `turns` (indexes into this batch's turns): `[3].role`, or for a joined
        conversation the whole path `chosen[0].from`."""
        if self.names is None:
            return [f"[{t}].{self.field.role_key}" for t in self.turn[turns].tolist()]
        return [f"{self.names[s]}[{t}].{self.role_keys[s]}"
                for s, t in zip(self.source[turns].tolist(), self.local[turns].tolist())]


@dataclass
class Segments:
    """Texts flattened over fields, list elements and turns."""

    values: pa.Array          # string, one per segment
    rows: np.ndarray          # int64 batch row
    field: np.ndarray         # int32 index into `fields`
    turn: np.ndarray          # int64 element or turn index; -1 for a flat field
    roles: pa.Array           # string role (null outside conversations)
    fields: tuple[Column, ...]
    # per segment, what inside the turn it is when not the turn's text ("tool_calls[0].function.arguments")
    key: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.values)

    def take(self, idx: np.ndarray) -> "Segments":
        sel = pa.array(idx, pa.int64())
        return Segments(self.values.take(sel), self.rows[idx], self.field[idx], self.turn[idx],
                        self.roles.take(sel), self.fields, None if self.key is None else self.key[idx])

    @classmethod
    def concat(cls, parts: list["Segments"]) -> "Segments":
        """One Segments of several (each with its own fields)."""
        offsets = np.cumsum([0] + [len(p.fields) for p in parts])
        keys = [p.key if p.key is not None else np.full(len(p), None, dtype=object) for p in parts]
        return cls(pa.concat_arrays([p.values for p in parts]), np.concatenate([p.rows for p in parts]),
                   np.concatenate([p.field + o for p, o in zip(parts, offsets)]).astype(np.int32),
                   np.concatenate([p.turn for p in parts]), pa.concat_arrays([p.roles for p in parts]),
                   tuple(c for p in parts for c in p.fields), np.concatenate(keys))

    def paths(self, idx: np.ndarray) -> list[str]:
        """Field paths of the segments `idx`: `output`, `images[2]`, `messages[3].content`."""
        out = []
        keys = [None] * len(idx) if self.key is None else self.key[idx].tolist()
        for f, t, key in zip(self.field[idx].tolist(), self.turn[idx].tolist(), keys):
            col = self.fields[f]
            if t < 0:
                out.append(col.name)
            elif col.kind == "conversation":
                out.append(f"{col.name}[{t}].{key or col.text_key}")
            else:
                out.append(f"{col.name}[{t}]")
        return out

    def assistant(self) -> np.ndarray:
        """bool per segment: a turn on the assistant's side."""
        return _np(pc.fill_null(pc.is_in(pc.utf8_lower(self.roles), pa.array(ASSISTANT_ROLES)), False)).astype(bool)


def _names(arr: pa.Array) -> list[str]:
    return [f.name for f in arr.type] if pa.types.is_struct(arr.type) else []


def _arguments(calls: pa.Array) -> pa.Array | None:
    """The `function.arguments` (or `arguments`) strings of an array of call structs; None when it has none."""
    if "function" in _names(calls):
        calls = pc.struct_field(calls, "function")
    if "arguments" not in _names(calls):
        return None
    args = pc.struct_field(calls, "arguments")
    return plain_array(args) if pa.types.is_string(args.type) or pa.types.is_large_string(args.type) else None


def call_arguments(batch: pa.RecordBatch, fields: tuple[Column, ...]) -> Segments:
    """The JSON arguments of the tool calls in conversation turns (OpenAI `tool_calls[].function.arguments`, the
    older `function_call.arguments`), as segments named `messages[2].tool_calls[0].function.arguments`."""
    parts = []
    for col in fields:
        if col.kind != "conversation":
            continue
        turns, rows, turn = flatten_lists(turn_lists(batch, col))
        roles = _field(turns, col.role_key) if col.role_key in _names(turns) else pa.nulls(len(turns), pa.string())
        if "tool_calls" in _names(turns) and col.text_key != "tool_calls":
            calls = plain_array(pc.struct_field(turns, "tool_calls"))
            if pa.types.is_list(calls.type) or pa.types.is_large_list(calls.type):
                flat, parent, pos = flatten_lists(calls)
                args = _arguments(flat)
                if args is not None:
                    keep = np.flatnonzero(_np(pc.is_valid(args)).astype(bool))
                    parts.append(Segments(args.take(pa.array(keep, pa.int64())), rows[parent[keep]],
                                          np.zeros(keep.size, np.int32), turn[parent[keep]],
                                          plain_array(roles.take(pa.array(parent[keep], pa.int64()))), (col,),
                                          np.char.add(np.char.add("tool_calls[", pos[keep].astype(str)),
                                                      "].function.arguments").astype(object)))
        if "function_call" in _names(turns) and col.text_key != "function_call":
            args = _arguments(pc.struct_field(turns, "function_call"))
            if args is not None:
                keep = np.flatnonzero(_np(pc.is_valid(args)).astype(bool))
                parts.append(Segments(args.take(pa.array(keep, pa.int64())), rows[keep],
                                      np.zeros(keep.size, np.int32), turn[keep],
                                      plain_array(roles.take(pa.array(keep, pa.int64()))), (col,),
                                      np.full(keep.size, "function_call.arguments", dtype=object)))
    if not parts:
        return segments(batch, ())
    return Segments.concat(parts)


def _nested(batch: pa.RecordBatch, col: Column) -> pa.Array:
    """A struct's string by its dotted path."""
    head, *path = col.name.split(".")
    arr = batch.column(head)
    for key in path:
        arr = pc.struct_field(arr, key)
    return arr


def conversation(batch: pa.RecordBatch, col: Column) -> tuple[Conversation, pa.Array, np.ndarray]:
    """The conversation view of one field, with the text of every turn and whether the turn has text."""
    lists = turn_lists(batch, col)
    turns, rows, turn = flatten_lists(lists)
    roles = _field(turns, col.role_key) if col.role_key in [f.name for f in turns.type] else \
        pa.nulls(len(turns), pa.string())
    text, has_text = _turn_text(turns, col)
    # Bug fix: an OpenAI assistant message that only calls tools (content null or "", `tool_calls` set) was an
    # empty reply; its content is no text.
    for key in CALL_KEYS:
        if key in [f.name for f in turns.type] and key != col.text_key:
            calls = pc.struct_field(turns, key)
            called = _np(pc.is_valid(calls)).astype(bool)
            if pa.types.is_list(calls.type) or pa.types.is_large_list(calls.type):
                called &= _np(pc.fill_null(pc.list_value_length(calls), 0)) > 0
            silent = _np(pc.fill_null(pc.equal(text, ""), True)).astype(bool)
            has_text &= ~(called & silent)
    counts = np.bincount(rows, minlength=len(lists)).astype(np.int64)
    present = _np(pc.is_valid(lists)).astype(bool)
    conv = Conversation(col, len(lists), rows, turn, roles, present, counts,
                        text=pc.if_else(pa.array(has_text), text, pa.nulls(len(text), pa.string())))
    return conv, text, has_text


def _pieces(batch: pa.RecordBatch, fields: tuple[Column, ...]):
    """(values, rows, turn, roles) per field."""
    n = batch.num_rows
    for col in fields:
        if col.kind == "conversation":
            conv, text, has_text = conversation(batch, col)
            keep = np.flatnonzero(has_text)
            sel = pa.array(keep, pa.int64())
            yield text.take(sel), conv.rows[keep], conv.turn[keep], conv.roles.take(sel)
        elif col.kind == "strings":
            values, rows, pos = flatten_lists(batch.column(col.name))
            yield plain_array(values), rows, pos, pa.nulls(len(values), pa.string())
        else:
            values = plain_array(_nested(batch, col) if col.nested else batch.column(col.name))
            rows = np.arange(n, dtype=np.int64)
            if col.optional or col.caption:
                # Bug fix: an optional field's null or empty value (Alpaca's empty `input`) is no text, not an
                # empty text (dataaudit.fields.OPTIONAL_TEXT_NAMES). A caption's null or blank value is the
                # pairing checks' finding (missing_caption, empty_caption).
                kept = pc.utf8_trim_whitespace(values) if col.caption else values
                rows = np.flatnonzero(_np(pc.fill_null(pc.not_equal(kept, ""), False)).astype(bool))
                values = values.take(pa.array(rows, pa.int64()))
            m = len(rows)
            yield values, rows, np.full(m, -1, np.int64), pa.nulls(m, pa.string())


def segments(batch: pa.RecordBatch, fields: tuple[Column, ...]) -> Segments:
    """Every text segment of `fields` in the batch."""
    values, rows, field, turn, roles = [], [], [], [], []
    for i, (v, r, t, ro) in enumerate(_pieces(batch, fields)):
        values.append(v)
        rows.append(r)
        turn.append(t)
        roles.append(plain_array(ro))
        field.append(np.full(len(r), i, np.int32))
    if not values:
        empty = np.zeros(0, np.int64)
        return Segments(pa.array([], pa.string()), empty, np.zeros(0, np.int32), empty, pa.array([], pa.string()),
                        fields)
    return Segments(_joined(values), np.concatenate(rows), np.concatenate(field), np.concatenate(turn),
                    _joined(roles), fields)


def _joined(arrays: list[pa.Array]) -> pa.Array:
    """The arrays one after the other; one array as it is (concat_arrays copies even one: a batch's whole text)."""
    return arrays[0] if len(arrays) == 1 else pa.concat_arrays(arrays)


def split_json_turns(segs: Segments) -> tuple[Segments, Segments]:
    """(prose segments, JSON segments): the turns whose role carries a JSON document (a function call, its
    result) are checked as JSON, not as prose."""
    is_json = _np(pc.fill_null(pc.is_in(pc.utf8_lower(segs.roles), pa.array(JSON_ROLES)), False)).astype(bool)
    if not is_json.any():
        return segs, segs.take(np.zeros(0, np.int64))
    return segs.take(np.flatnonzero(~is_json)), segs.take(np.flatnonzero(is_json))


def record_text(batch: pa.RecordBatch, fields: tuple[Column, ...], separator: str = TURN_SEPARATOR) -> pa.Array:
    """One string per record: all its texts (fields in order, then elements and turns in order) joined; null when
    the record has none."""
    segs = segments(batch, fields)
    n = batch.num_rows
    present = _np(pc.is_valid(segs.values)).astype(bool)
    keep = np.flatnonzero(present)
    # stable sort by row keeps the field order, then the turn order, inside each record
    order = keep[np.argsort(segs.rows[keep], kind="stable")]
    counts = np.bincount(segs.rows[order], minlength=n)
    offsets = np.zeros(n + 1, np.int32)
    np.cumsum(counts, out=offsets[1:])
    lists = pa.ListArray.from_arrays(pa.array(offsets), segs.values.take(pa.array(order, pa.int64())))
    joined = pc.binary_join(lists, separator)
    return plain_array(pc.if_else(pa.array(counts > 0), joined, pa.nulls(n, pa.string())))


class DocumentText:
    """The text of each record as one string, for the commands that compare whole records (dedup,
    contamination, tokenizer samples): the fields of the rule (all text fields, or the configured ones) joined.
    Resolved once per batch schema, from the batch's own values (identifiers and JSON are not prose)."""

    def __init__(self, configured: tuple[str, ...] | str | None = None):
        from dataaudit.fields import FieldSpec

        self.spec = FieldSpec(text=configured or None)
        self._fields: dict[pa.Schema, tuple[Column, ...]] = {}
        self._labels: dict[pa.Schema, str | None] = {}   # a KTO record's label column (part of its document)
        self.names: list[str] = []        # every field used so far, in order of first use

    def columns(self, schema: pa.Schema | None) -> list[str] | None:
        """The top-level columns to read from a shard whose footer gives `schema` (None: read all)."""
        from dataaudit.fields import resolve_schema

        if schema is None:
            return None
        fields = resolve_schema(schema, self.spec)
        label = [fields.pairs.label] if fields.pairs is not None and fields.pairs.label else []
        return list(dict.fromkeys([c.top for c in fields.text] + label))

    def fields(self, batch: pa.RecordBatch) -> tuple[Column, ...]:
        from dataaudit.fields import resolve_schema

        found = self._fields.get(batch.schema)
        if found is None:
            resolved = resolve_schema(batch.schema, self.spec, batch)
            found = self._fields[batch.schema] = resolved.text
            pairs = resolved.pairs
            self._labels[batch.schema] = pairs.label if pairs is not None and pairs.layout == "kto" else None
            self.names += [c.name for c in found if c.name not in self.names]
        return found

    def __call__(self, batch: pa.RecordBatch) -> pa.Array:
        """One string per record (null: the record has no text)."""
        fields = self.fields(batch)
        if not fields:
            return pa.nulls(batch.num_rows, pa.string())
        text = record_text(batch, fields)
        label = self._labels.get(batch.schema)
        if label is None:
            return text
        # KTO: the same reply with opposite labels is two records, not a duplicate to drop silently
        tag = pc.binary_join_element_wise("\nlabel=", pc.fill_null(batch.column(label).cast(pa.string()), "null"), "")
        return plain_array(pc.binary_join_element_wise(text, tag, ""))

    @property
    def label(self) -> str | None:
        """The fields as a summary shows them ("question, answer"); None before any text was found."""
        return ", ".join(self.names) or None
