"""A benchmark record's fields: a dotted path's value (`question.stem`, `choices.text`) and a value as text, with
the error that names a missing or wrong-typed field. Shared by the loader and the lm-eval renderer."""
from __future__ import annotations

import decimal
from typing import Any


class FieldError(Exception):
    pass


def kind_name(v: Any) -> str:
    return {dict: "an object", list: "a list", str: "text", bool: "a boolean", type(None): "null"}.get(
        type(v), "a number" if isinstance(v, (int, float)) else type(v).__name__)


def resolve_field(record: Any, path: str) -> Any:
    """The value at a dotted path. A key containing dots is matched whole first; over a list, the rest of the
    path is applied to every element (`choices.text` -> the list of every choice's text); an integer part
    indexes a list. FieldError names the missing part."""
    return _resolve(record, path.split("."), path)


def _resolve(value: Any, parts: list[str], full: str, done: str = "") -> Any:
    if not parts:
        return value
    if isinstance(value, list):
        if parts[0].lstrip("-").isdigit():
            i = int(parts[0])
            if not -len(value) <= i < len(value):
                raise FieldError(f"field {full!r}: {done or 'the record'} has no element {i} "
                                 f"(length {len(value)})")
            return _resolve(value[i], parts[1:], full, f"{done}.{parts[0]}" if done else parts[0])
        return [_resolve(v, parts, full, done) for v in value]
    if not isinstance(value, dict):
        raise FieldError(f"field {full!r}: {done or 'the record'} is {kind_name(value)}, it has no field "
                         f"{parts[0]!r}")
    for k in range(len(parts), 0, -1):           # longest key first: a literal "a.b" key wins over a -> b
        key = ".".join(parts[:k])
        if key in value:
            return _resolve(value[key], parts[k:], full, f"{done}.{key}" if done else key)
    have = ", ".join(list(map(str, value))[:20]) or "none"
    where = f"{done!r} has" if done else "the record has"
    raise FieldError(f"field {full!r} not found ({where} fields: {have})")


def value_text(value: Any, full: str) -> str:
    """Text of a field value: strings as they are, numbers and booleans written out, lists joined by newlines,
    null as empty. An object is an error (name a nested field)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float, decimal.Decimal)):
        return str(value)
    if isinstance(value, list):
        return "\n".join(t for t in (value_text(v, full) for v in value) if t)
    if isinstance(value, dict):
        keys = ", ".join(list(map(str, value))[:10])
        raise FieldError(f"field {full!r} is an object, not text; name a nested field ({full}.KEY with KEY "
                         f"one of: {keys})")
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8", "replace")
    return str(value)
