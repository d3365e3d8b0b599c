"""Tool calls, tool results and reasoning parts of one conversation field, as the trainer sees them.

Three layouts on disk:
  OpenAI      assistant turns with `tool_calls: [{id, type, function: {name, arguments (JSON string)}}]` (or the
              older `function_call: {name, arguments}`), results in `tool`/`function` turns with `tool_call_id`
  ShareGPT    a `function_call` turn whose value is `{"name", "arguments"}` JSON, its result an `observation` turn
  v1 parts    content parts `{"type": "tool_call", "value": "{name, arguments}"}` and `{"type": "reasoning"}`
The tools a record declares are its `tools` column (dataaudit.fields.TOOLS_NAMES): a JSON string or a list, of
`{type: function, function: {name, description, parameters}}` or `{name, description, parameters}`.

Records without any call, result, reasoning part or tools are found with Arrow kernels and never reach Python;
the others (the tool-use records) are walked turn by turn here.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dataaudit.fields import ASSISTANT_ROLES, Column

RESULT_ROLES = ("tool", "function", "observation", "ipython")
CALL_ROLES = ("function_call",)
CALL_PARTS = ("tool_call", "function_call")
REASONING_PARTS = ("reasoning", "thinking")
ANSWER_PARTS = ("text", *CALL_PARTS)
UNPARSED = object()        # arguments that are not JSON (json_invalid's finding): not checked against a schema


@dataclass
class Call:
    turn: int
    where: str             # path inside the field: "[2].tool_calls[0].function"
    name: str | None       # None: the call is not readable JSON (json_invalid's finding)
    args: Any              # parsed arguments, or UNPARSED
    args_where: str
    id: str | None = None


@dataclass
class Record:
    row: int
    role_key: str
    roles: list[str | None] = field(default_factory=list)
    # the turns in order: ("call", [Call]), ("result", tool_call_id), ("answer", None), ("user", None)
    steps: list[tuple[int, str, Any]] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)
    empty_reasoning: list[str] = field(default_factory=list)   # paths of reasoning parts with no answer after
    texts: list[str | None] = field(default_factory=list)      # each turn's text (its text parts joined)
    reasoning: list[tuple[int, str, str]] = field(default_factory=list)   # (turn, path, text) of each trace
    tools: Any = None                                          # the record's tools (string or list), None: none
    memo: dict = field(default_factory=dict)                   # what the checks derive once (its parsed tools)


@dataclass
class ToolUse:
    """The "tool_use" target: the tool-use records of one conversation field of a batch."""

    field: Column
    tools_field: str | None
    records: int                 # rows in the batch
    items: list[Record]
    results_seen: bool           # the field has result turns in this batch (a layout with results)
    # the record as the chat template of `[data] tokenizer` renders it (None: no tokenizer with a template)
    render: Callable[[Record], str] | None = None


def _np(arr) -> np.ndarray:
    return arr.to_numpy(zero_copy_only=False)


def _names(t) -> list[str]:
    return [f.name for f in t] if pa.types.is_struct(t) else []


def _active(lists: pa.Array, col: Column, tools: pa.Array | None) -> np.ndarray:
    """bool per row: the record has a call, a result, a reasoning part or declared tools (Arrow kernels only)."""
    n = len(lists)
    active = np.zeros(n, bool)
    turns = pc.list_flatten(lists)
    parents = _np(pc.list_parent_indices(lists)).astype(np.int64)
    keys = _names(turns.type)
    hit = np.zeros(len(turns), bool)
    if col.role_key in keys:
        roles = pc.utf8_lower(pc.struct_field(turns, col.role_key))
        hit |= _np(pc.fill_null(pc.is_in(roles, pa.array(RESULT_ROLES + CALL_ROLES)), False)).astype(bool)
    for key in ("tool_calls", "function_call", "reasoning_content"):
        if key in keys and key != col.text_key:
            values = pc.struct_field(turns, key)
            if pa.types.is_list(values.type) or pa.types.is_large_list(values.type):   # `tool_calls: []` calls nothing
                hit |= _np(pc.fill_null(pc.list_value_length(values), 0)) > 0
            else:
                hit |= _np(pc.is_valid(values)).astype(bool)
    if col.part_key is not None:
        parts = pc.struct_field(turns, col.text_key)
        if "type" in _names(parts.type.value_type):
            flat = pc.list_flatten(parts)
            kinds = pc.struct_field(flat, "type")
            tooly = _np(pc.fill_null(pc.is_in(kinds, pa.array(CALL_PARTS + REASONING_PARTS)), False)).astype(bool)
            part_turn = _np(pc.list_parent_indices(parts)).astype(np.int64)
            hit[part_turn[tooly]] = True
    active[parents[hit]] = True
    if tools is not None:
        if pa.types.is_string(tools.type) or pa.types.is_large_string(tools.type):
            blank = pc.fill_null(pc.is_in(pc.utf8_trim_whitespace(tools), pa.array(["", "[]", "{}"])), True)
            active |= ~_np(blank).astype(bool)
        elif pa.types.is_list(tools.type) or pa.types.is_large_list(tools.type):
            active |= _np(pc.fill_null(pc.list_value_length(tools), 0)) > 0
    return active


def _load(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except (ValueError, RecursionError):
            return UNPARSED
    return value


def _call(turn: int, where: str, doc: Any, args_where: str, call_id: str | None = None) -> Call:
    """A call from its document `{name, arguments}` (arguments a JSON string or an object)."""
    doc = _load(doc)
    if not isinstance(doc, dict):
        return Call(turn, where, None, UNPARSED, args_where, call_id)
    args = doc.get("arguments", doc.get("parameters", {}))
    name = doc.get("name")
    return Call(turn, where, name if isinstance(name, str) else None, _load(args), args_where, call_id)


def _turn_calls(t: int, turn: dict, col: Column, role: str, rec: Record) -> tuple[list[Call], bool]:
    """(calls, has answer text) of one turn; its text, reasoning traces and reasoning parts with nothing after
    them go to `rec`."""
    calls, answer, texts = [], False, []
    if isinstance(turn.get("reasoning_content"), str) and col.text_key != "reasoning_content":
        rec.reasoning.append((t, f"[{t}].reasoning_content", turn["reasoning_content"]))
    for k, c in enumerate(turn.get("tool_calls") or () if col.text_key != "tool_calls" else ()):
        c = c or {}
        fn = c.get("function") or {}
        calls.append(_call(t, f"[{t}].tool_calls[{k}].function.name", fn,
                           f"[{t}].tool_calls[{k}].function.arguments", c.get("id")))
    if col.text_key != "function_call" and isinstance(turn.get("function_call"), dict):
        calls.append(_call(t, f"[{t}].function_call.name", turn["function_call"], f"[{t}].function_call.arguments"))
    text = turn.get(col.text_key)
    if role in CALL_ROLES:
        where = f"[{t}].{col.text_key}"
        calls.append(_call(t, where, text, where))
    elif col.part_key is not None and isinstance(text, list):
        open_reasoning = None
        for p, part in enumerate(text):
            part = part or {}
            kind, value = part.get("type"), part.get(col.part_key)
            where = f"[{t}].{col.text_key}[{p}].{col.part_key}"
            if kind in CALL_PARTS:
                calls.append(_call(t, where, value, where))
            if kind in (None, "text") and isinstance(value, str):
                texts.append(value)
            if kind in REASONING_PARTS:
                open_reasoning = where
                if isinstance(value, str):
                    rec.reasoning.append((t, where, value))
            elif (kind in ANSWER_PARTS or kind is None) and (kind in CALL_PARTS or (value or "").strip()):
                answer, open_reasoning = answer or kind not in CALL_PARTS, None
        if open_reasoning is not None:
            rec.empty_reasoning.append(open_reasoning)
        text = "\n".join(texts)
    elif isinstance(text, str) and text.strip():
        answer = True
    rec.texts.append(text if isinstance(text, str) else None)
    return calls, answer


def _record(row: int, turns: list, col: Column, tools: Any) -> Record:
    rec = Record(row, col.role_key, tools=tools)
    for t, turn in enumerate(turns or ()):
        turn = turn or {}
        role = turn.get(col.role_key)
        rec.roles.append(role)
        low = (role or "").lower()
        if low in RESULT_ROLES:
            text = turn.get(col.text_key)
            rec.texts.append(text if isinstance(text, str) else
                             "\n".join(p.get(col.part_key) or "" for p in text or () if isinstance(p, dict)))
            rec.steps.append((t, "result", turn.get("tool_call_id")))
            continue
        calls, answer = _turn_calls(t, turn, col, low, rec)
        if calls:
            rec.calls += calls
            rec.steps.append((t, "call", calls))
        elif answer and low in ASSISTANT_ROLES:   # a reply that also calls is a call: its result comes next
            rec.steps.append((t, "answer", None))
        elif low not in ASSISTANT_ROLES and not calls:
            rec.steps.append((t, "user", None))
    return rec


def tool_use(batch: pa.RecordBatch, col: Column, tools_field: str | None,
             render: Callable[[Record], str] | None = None) -> ToolUse:
    """The tool-use records of conversation field `col` in `batch`."""
    lists = batch.column(col.name)
    if isinstance(lists, pa.ChunkedArray):
        lists = lists.combine_chunks()
    tools = batch.column(tools_field) if tools_field in batch.schema.names else None
    rows = np.flatnonzero(_active(lists, col, tools))
    take = pa.array(rows, pa.int64())
    turns = lists.take(take).to_pylist()
    declared = tools.take(take).to_pylist() if tools is not None else [None] * rows.size
    items = [_record(int(r), t, col, d) for r, t, d in zip(rows.tolist(), turns, declared)]
    results = any(kind == "result" for rec in items for _, kind, _ in rec.steps)
    return ToolUse(col, tools_field, batch.num_rows, items, results, render)
