"""Tool calls checked against the tools the record declares, and paired with their results.

Each runs on the "tool_use" target (dataaudit.tool_turns.ToolUse: the tool-use records of one conversation field)
and returns one flag per record naming its first offending call or turn (`messages[2].tool_calls[0].function
.arguments`); value = how many in the record. What cannot be read is not judged here: a call or tools document
that is not JSON is json_invalid's finding, a tool whose parameters are no JSON Schema is tool_schema_invalid's,
and a record with no tools column is not checked for unknown names.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np

from dataaudit.tool_turns import UNPARSED, Call, Record, ToolUse

from .base import CheckOutput, register

NAMES_SHOWN = 6


def hits_output(tu: ToolUse, found: dict[int, list[tuple[str, str | None, str]]], noun: str) -> CheckOutput:
    """One flag per record with hits [(path, role, detail)], naming the first; value = hits in the record."""
    n = tu.records
    flagged, value = np.zeros(n, bool), np.zeros(n)
    detail, where, role = (np.full(n, None, dtype=object) for _ in range(3))
    for row, hits in found.items():
        flagged[row], value[row] = True, len(hits)
        where[row], role[row], detail[row] = hits[0]
        if len(hits) > 1:
            detail[row] += f" ({len(hits)} such {noun})"
    return CheckOutput(flagged=flagged, value=value, detail=detail, where=where, role=role)


@dataclass
class Tool:
    name: str
    where: str                     # path of its parameters inside the tools field
    validator: Any = None          # None: no parameters, or parameters that are no JSON Schema
    invalid: str | None = None     # why the parameters are no JSON Schema


@dataclass
class Declared:
    """A record's tools, parsed once per distinct tools document. readable False: not a list of tools."""

    readable: bool
    tools: dict[str, Tool] = field(default_factory=dict)
    shape: str | None = None       # JSON that is not a list of tools: what it is instead (nothing is checked)


def _no_nulls(x: Any) -> Any:
    """A tools list read from Arrow structs: the keys other rows have are None here, not absent."""
    if isinstance(x, dict):
        return {k: _no_nulls(v) for k, v in x.items() if v is not None}
    if isinstance(x, list):
        return [_no_nulls(v) for v in x]
    return x


def _schema_tool(name: str, where: str, params: Any) -> Tool:
    from jsonschema import validators

    if params is None:
        return Tool(name, where)
    if not isinstance(params, dict):
        return Tool(name, where, invalid=f"{name}: parameters are {type(params).__name__}, not a JSON Schema object")
    try:
        cls = validators.validator_for(params, default=validators.Draft202012Validator)
        # every error, the shallowest first (check_schema's pick among several is not the same from run to run)
        errors = sorted(cls(cls.META_SCHEMA).iter_errors(params),
                        key=lambda e: (len(e.path), [str(p) for p in e.path], e.message))
    except Exception as e:  # noqa: BLE001 (a hostile schema: an unknown $schema, deep nesting)
        return Tool(name, where, invalid=f"{name}: parameters cannot be read as a JSON Schema ({type(e).__name__})")
    if errors:
        at = ".".join(["parameters", *map(str, errors[0].path)])
        return Tool(name, where, invalid=f"{name}: {at}: {errors[0].message}")
    return Tool(name, where, validator=cls(params))


@lru_cache(maxsize=4096)
def _declared(doc: str, column: str, structs: bool) -> Declared:
    try:
        tools = json.loads(doc)
    except (ValueError, RecursionError):
        return Declared(False)
    if structs:
        tools = _no_nulls(tools)
    if not isinstance(tools, list):
        return Declared(False, shape=f"the tools are a JSON {type(tools).__name__}, not a list: calls not checked")
    out = Declared(True)
    for i, entry in enumerate(tools):
        inner = entry.get("function") if isinstance(entry, dict) and isinstance(entry.get("function"), dict) else entry
        if not isinstance(inner, dict) or not isinstance(inner.get("name"), str):
            out.tools[f"\0{i}"] = Tool("", f"{column}[{i}]", invalid=f"tools[{i}] has no name: calls to it not checked")
            continue
        where = f"{column}[{i}]" + (".function" if inner is not entry else "") + ".parameters"
        out.tools.setdefault(inner["name"], _schema_tool(inner["name"], where, inner.get("parameters")))
    return out


def declared(tu: ToolUse, rec: Record) -> Declared | None:
    """The record's tools (None: it has no tools column or a null one: not checked)."""
    if tu.tools_field is None or rec.tools is None:
        return None
    if "declared" not in rec.memo:
        structs = not isinstance(rec.tools, str)
        doc = json.dumps(rec.tools, sort_keys=True) if structs else rec.tools
        rec.memo["declared"] = _declared(doc, tu.tools_field, structs)
    return rec.memo["declared"]


def _turn_role(rec: Record, call: Call) -> str | None:
    return rec.roles[call.turn] if call.turn < len(rec.roles) else None


@register("tool_schema_invalid", target="tool_use", severity="warning",
          detail="a tool's parameters are not a valid JSON Schema",
          description="A tools entry whose `parameters` is not a valid JSON Schema (e.g. `\"type\": \"dict\"`), "
                      "or has no name, or tools that are JSON but not a list: the model is shown tools no validator "
                      "reads, and the calls to them are not checked. value = such tools in the record.")
def tool_schema_invalid(tu: ToolUse, **params) -> CheckOutput:
    found = {}
    for rec in tu.items:
        decl = declared(tu, rec)
        hits = [(t.where, None, t.invalid) for t in (decl.tools.values() if decl else ()) if t.invalid]
        if decl is not None and decl.shape:
            hits.append((tu.tools_field, None, decl.shape))
        if hits:
            found[rec.row] = hits
    return hits_output(tu, found, "tools")


@register("tool_unknown", target="tool_use", severity="error",
          detail="a call names a tool the record does not declare",
          description="A tool call whose function name is not among the record's `tools` (records without a tools "
                      "column are not checked): the model learns to call a function it was never offered. "
                      "value = such calls.")
def tool_unknown(tu: ToolUse, **params) -> CheckOutput:
    found = {}
    for rec in tu.items:
        decl = declared(tu, rec)
        if decl is None or not decl.readable:
            continue
        names = sorted(n for n in decl.tools if not n.startswith("\0"))   # unnamed entries aside
        offered = ", ".join(names[:NAMES_SHOWN]) + (", ..." if len(names) > NAMES_SHOWN else "")
        hits = [(c.where, _turn_role(rec, c), f"{c.name!r} is not one of the record's tools ({offered})" if names
                 else f"{c.name!r} is called but the record declares no tools")
                for c in rec.calls if c.name is not None and c.name not in decl.tools]
        if hits:
            found[rec.row] = [(f"{tu.field.name}{w}", r, d) for w, r, d in hits]
    return hits_output(tu, found, "calls")


# Keywords a plain `parameters` schema uses, checked here without jsonschema (the common case, ~20x faster); any
# other keyword, or a value this finds wrong, goes to jsonschema, which words the finding.
_PLAIN_KEYS = {"type", "properties", "required", "additionalProperties", "description", "title"}
_PLAIN_PROPERTY_KEYS = {"type", "enum", "description", "title", "default", "examples"}
_IS = {"string": lambda v: isinstance(v, str), "boolean": lambda v: isinstance(v, bool),
       "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
       "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
       "array": lambda v: isinstance(v, list), "object": lambda v: isinstance(v, dict), "null": lambda v: v is None}


def _plainly_valid(schema: dict, args: Any) -> bool:
    """True only when `args` surely meets a plain object schema (False: unsure, ask jsonschema)."""
    if not isinstance(args, dict) or schema.get("type") != "object" or not _PLAIN_KEYS.issuperset(schema):
        return False
    props = schema.get("properties", {})
    if not isinstance(props, dict) or not all(k in args for k in schema.get("required", ())):
        return False
    if schema.get("additionalProperties", True) is not True and not all(k in props for k in args):
        return False
    for key, value in args.items():
        prop = props.get(key)
        if prop is None:
            continue
        if not isinstance(prop, dict) or not _PLAIN_PROPERTY_KEYS.issuperset(prop):
            return False
        kinds = prop.get("type")
        if kinds is not None and not any(_IS.get(k, lambda v: False)(value) for k in
                                         (kinds if isinstance(kinds, list) else [kinds])):
            return False
        if "enum" in prop and not any(type(e) is type(value) and e == value for e in prop["enum"]):
            return False
    return True


def _args_error(tool: Tool, args: Any) -> str | None:
    from jsonschema import exceptions

    if _plainly_valid(tool.validator.schema, args):
        return None
    try:
        err = exceptions.best_match(tool.validator.iter_errors(args))
    except Exception as e:  # noqa: BLE001 (an unresolvable $ref, deep nesting: not checked)
        return None if not isinstance(e, exceptions.ValidationError) else e.message
    if err is None:
        return None
    at = ".".join(map(str, err.path))
    return f"{tool.name}: {at + ': ' if at else ''}{err.message}"


@register("tool_args_schema", target="tool_use", severity="error",
          detail="a call's arguments do not match its tool's parameters",
          description="A tool call whose arguments break the JSON Schema `parameters` of the tool it names "
                      "(required properties, types, enums, additionalProperties). value = such calls.")
def tool_args_schema(tu: ToolUse, **params) -> CheckOutput:
    found = {}
    for rec in tu.items:
        decl = declared(tu, rec)
        if decl is None or not rec.calls:
            continue
        hits = []
        for c in rec.calls:
            tool = decl.tools.get(c.name) if c.name is not None else None
            if tool is None or tool.validator is None or c.args is UNPARSED:
                continue
            why = _args_error(tool, c.args)
            if why is not None:
                hits.append((f"{tu.field.name}{c.args_where}", _turn_role(rec, c), why))
        if hits:
            found[rec.row] = hits
    return hits_output(tu, found, "calls")


def pairing(rec: Record) -> tuple[list[tuple[int, str]], list[Call]]:
    """(orphan results as (turn, why), unanswered calls) of one record.

    Calls since the last answer or user turn form a group; a result answers the call whose id it names, or (no
    ids) the group. A group still unanswered at the next answer or user turn is unanswered; at the end of the
    conversation it is not (the sample trains the call itself)."""
    ids = {c.id for c in rec.calls if c.id}
    orphans, unanswered = [], []
    group, answered, matched = [], False, set()

    def close():
        for c in group:
            ok = c.id in matched if c.id and matched else answered or bool(matched)
            if not ok:
                unanswered.append(c)

    for t, kind, x in rec.steps:
        if kind == "call":
            if group and (answered or matched):
                close()
                group, answered, matched = [], False, set()
            group += x
        elif kind == "result":
            if ids and x:
                if x in ids:
                    matched.add(x)
                else:
                    orphans.append((t, f"tool_call_id {x!r} matches no call"))
            elif group:
                answered = True
            else:
                orphans.append((t, "a tool result with no call before it"))
        else:
            close()
            group, answered, matched = [], False, set()
    return orphans, unanswered


@register("tool_result_orphan", target="tool_use", severity="error",
          detail="a tool result with no call before it",
          description="A tool/observation turn with no tool call before it (since the last reply or user turn), "
                      "or whose `tool_call_id` matches no call: the model is trained on a result of nothing. "
                      "value = such turns.")
def tool_result_orphan(tu: ToolUse, **params) -> CheckOutput:
    found = {}
    for rec in tu.items:
        orphans, _ = pairing(rec)
        if orphans:
            found[rec.row] = [(f"{tu.field.name}[{t}].{rec.role_key}", rec.roles[t], why) for t, why in orphans]
    return hits_output(tu, found, "turns")


@register("tool_call_unanswered", target="tool_use", severity="warning",
          detail="a tool call with no result before the next reply",
          description="A tool call followed by the next assistant reply or user turn with no tool result in "
                      "between, in data whose conversations have result turns: the reply is trained on a result "
                      "the model never saw. A conversation ending with a call is not flagged. value = such calls.")
def tool_call_unanswered(tu: ToolUse, **params) -> CheckOutput:
    found = {}
    if tu.results_seen:
        for rec in tu.items:
            _, calls = pairing(rec)
            if calls:
                found[rec.row] = [(f"{tu.field.name}{c.where}", _turn_role(rec, c),
                                   f"{c.name or 'a call'}: no tool result before the next turn") for c in calls]
    return hits_output(tu, found, "calls")
