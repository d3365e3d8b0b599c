"""Nested JSON values (objects, lists of objects or strings) as Arrow nested types.

`messages: [{"role": "user", "content": "hi"}]` becomes list<struct<role: string, content: string>>, an object a
struct, `images: ["a.jpg"]` list<string>. pyarrow infers the type from the parsed values in one call. When the
values of a column do not fit one type, they are normalised and inferred again, each step losing as little as
possible and saying so in the records' warnings:
  (a) in a list whose elements are mostly objects, an element that is not an object becomes null;
  (b) a key holding a string in some records and a list of parts in others (OpenAI `content`): the strings
      become one text part, shaped like the column's other text parts;
  (t) a place whose values still mix types (a `content` that is a number in one turn, text in the others) keeps
      the type most of its values have: each other value becomes null, noted (`field_type`) in its record only, so
      the rest is checked as its own type (JSON text for all of them hid empty replies and broken turns);
  (c) a key whose values still mix types (integers beyond int64, or beyond 2**53 next to floats, or only empty
      objects, which Parquet cannot store) becomes JSON text;
  (d) when that still does not fit, `nested_array` returns None and the caller stores the column as JSON text.
Strings that are not valid Unicode (lone surrogates from JSON escapes) are escaped on the way, with a warning.
The walks over the values only happen when inference failed, so well-formed data costs one pa.array call.
"""
from __future__ import annotations

import json
from collections import Counter

import pyarrow as pa

ITEM = None  # path component of a list element; dict keys are str components

_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1
_FLOAT_EXACT = 1 << 53   # pyarrow refuses ints beyond this in a column it infers as float64
_INFER_ERRORS = (pa.ArrowException, ValueError, TypeError, OverflowError, RecursionError)
_NUMBERS = {"int", "bigint", "hugeint", "float"}
_EMPTY = "only empty objects"   # Parquet cannot store a struct without fields: JSON text, and nothing to warn about
# Rule (t): the types one place can hold together (as _Stats counts them), named as a message says them.
_FAMILIES = {"dict": "object", "list": "list", "str": "text", "bool": "boolean", "int": "number", "bigint": "number",
             "hugeint": "number", "float": "number"}
_FAMILY_OF = {dict: "object", list: "list", str: "text", bool: "boolean", int: "number", float: "number"}


def utf8_safe(s: str) -> str:
    # Lone surrogates (from JSON "\ud800" escapes or undecodable tar names) cannot be stored in Arrow strings.
    return s.encode("utf-8", "backslashreplace").decode("utf-8")


def _utf8_ok(s: str) -> bool:
    if s.isascii():
        return True
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _has_empty_struct(t: pa.DataType) -> bool:
    if pa.types.is_struct(t):
        return t.num_fields == 0 or any(_has_empty_struct(f.type) for f in t)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return _has_empty_struct(t.value_type)
    return False


def _infer(values: list) -> pa.Array | None:
    """pyarrow's own inference, or None when the values fit no type that can be stored everywhere."""
    try:
        arr = pa.array(values)
    except _INFER_ERRORS:
        return None
    return None if _has_empty_struct(arr.type) else arr


class _Stats:
    """What one path of a column holds, over every record of the batch."""

    __slots__ = ("types", "keys", "text_keys")

    def __init__(self):
        self.types: Counter = Counter()       # type name -> count; ints beyond 2**53: "bigint", int64: "hugeint"
        self.keys: Counter = Counter()        # dicts only: key -> count
        self.text_keys: Counter = Counter()   # dicts with "type": "text": their other string keys


def _profile(values: list) -> tuple[dict[tuple, _Stats], bool]:
    """Per path (a tuple of keys and ITEM), the types found there; and whether some string or key is not valid
    Unicode."""
    stats: dict[tuple, _Stats] = {}
    bad = False

    def walk(v, path):
        nonlocal bad
        s = stats.get(path)
        if s is None:
            s = stats[path] = _Stats()
        t = type(v)
        if t is dict:
            s.types["dict"] += 1
            s.keys.update(v.keys())
            if v.get("type") == "text":
                s.text_keys.update(k for k, x in v.items() if k != "type" and type(x) is str)
            for k, x in v.items():
                bad = bad or not _utf8_ok(k)
                if x is not None:
                    walk(x, path + (k,))
        elif t is list:
            s.types["list"] += 1
            item = path + (ITEM,)
            for x in v:
                if x is not None:
                    walk(x, item)
        elif t is int:
            s.types["int" if -_FLOAT_EXACT <= v <= _FLOAT_EXACT else
                    "bigint" if _INT64_MIN <= v <= _INT64_MAX else "hugeint"] += 1
        else:
            s.types[t.__name__] += 1   # str, float, bool
            if t is str:
                bad = bad or not _utf8_ok(v)

    for v in values:
        if v is not None:
            walk(v, ())
    return stats, bad


def _mostly_dicts(s: _Stats | None) -> bool:
    return s is not None and 2 * s.types["dict"] > sum(s.types.values())


def _part_key(parts: _Stats) -> str:
    """The key other text parts keep their text under ({"type": "text", "value": ...} in LLaMA-Factory)."""
    if parts.text_keys:
        return parts.text_keys.most_common(1)[0][0]
    return next((k for k in ("text", "value", "content") if k in parts.keys), "text")


def _plan_shapes(stats: dict[tuple, _Stats]) -> tuple[set, dict]:
    """Rules (a) and (b): list paths whose non-object elements become null; key paths whose strings become a
    text part (path -> the part's text key)."""
    nullify, wrap = set(), {}
    for path, s in stats.items():
        if not path:
            continue
        if path[-1] is ITEM:
            if len(s.types) > 1 and _mostly_dicts(s):
                nullify.add(path)
        elif set(s.types) == {"str", "list"} and _mostly_dicts(stats.get(path + (ITEM,))):
            wrap[path] = _part_key(stats[path + (ITEM,)])
    return nullify, wrap


def _plan_types(stats: dict[tuple, _Stats], nullify: set, wrap: dict) -> dict[tuple, tuple[str, int, int]]:
    """Rule (t): path -> (the family most of its values have, how many, of how many) where values of several
    families meet (and rules (a) and (b) do not already settle it). A tie goes to the first family seen."""
    plan = {}
    for path, s in stats.items():
        if path in nullify or path in wrap:
            continue
        counts: dict[str, int] = {}
        for t, n in s.types.items():
            counts[_FAMILIES[t]] = counts.get(_FAMILIES[t], 0) + n
        if len(counts) > 1:
            keep = max(counts, key=counts.get)
            plan[path] = (keep, counts[keep], sum(counts.values()))
    return plan


def _conflict(s: _Stats) -> str | None:
    """Why the values at one path fit no single Arrow type, or None."""
    types = set(s.types)
    numbers = types & _NUMBERS
    if len(types - _NUMBERS) + bool(numbers) > 1:
        return "mixed types: " + ", ".join(sorted({"int" if t in _NUMBERS - {"float"} else t for t in types}))
    if "hugeint" in types:
        return "integers beyond int64"
    if "bigint" in types and "float" in types:
        return "integers beyond 2**53 next to floats"
    if "dict" in types and not s.keys:
        return _EMPTY
    return None


def _enclosing_key(path: tuple) -> tuple | None:
    """The path up to its last dict key: the value that becomes JSON text for a conflict at `path`."""
    for i in range(len(path) - 1, -1, -1):
        if path[i] is not ITEM:
            return path[:i + 1]
    return None


def _plan_text(stats: dict[tuple, _Stats]) -> tuple[dict[tuple, str], str | None]:
    """Rule (c): key path -> why its values become JSON text; and why the column as a whole cannot be typed when
    a conflict sits outside any key (rule (d)), else None."""
    found: dict[tuple, str] = {}
    for path, s in stats.items():
        why = _conflict(s)
        if why is not None:
            key = _enclosing_key(path)
            if key is None:
                return {}, why
            found.setdefault(key, why)
    # A key inside one that becomes text is already in that text.
    return {p: w for p, w in found.items() if not any(p[:i] in found for i in range(1, len(p)))}, None


def _show(name: str, path: tuple) -> str:
    return name + "".join("[]" if c is ITEM else f".{c}" for c in path)


class _Rewriter:
    """Copies a column's values applying a plan, noting per record what changed (one note per kind of change
    and path, with how many more places it happened)."""

    def __init__(self, name: str, n: int, nullify=frozenset(), wrap=None, as_text=None, escape=False, types=None):
        self.name = name
        self.nullify, self.wrap, self.as_text, self.escape = nullify, wrap or {}, as_text or {}, escape
        self.types = types or {}
        self.notes: list[dict] = [{} for _ in range(n)]
        self._row: dict = {}

    def run(self, values: list) -> list:
        out = []
        for i, v in enumerate(values):
            self._row = self.notes[i]
            out.append(None if v is None or not self._typed(v, (), [self.name]) else self._fix(v, (), [self.name]))
        return out

    def _typed(self, v, path: tuple, trail: list) -> bool:
        """Whether a value is of the type its place keeps (rule (t)); noted when it is not."""
        plan = self.types.get(path)
        if plan is None:
            return True
        family = _FAMILY_OF.get(type(v))
        if family == plan[0]:
            return True
        self._note(("type", path), f"field_type: {_where(trail)} is {family} here, {plan[0]} in {plan[1]} of the "
                                   f"batch's {plan[2]} values (value not read)")
        return False

    def warnings(self, row: int) -> list[str]:
        return [f"column {self.name!r}: {text}" + (f" (+{count - 1} more)" if count > 1 else "")
                for text, count in self.notes[row].values()]

    def _note(self, key: tuple, text: str) -> None:
        note = self._row.get(key)
        if note is None:
            self._row[key] = [text, 1]
        else:
            note[1] += 1

    def _str(self, s: str, trail: list, key: bool = False) -> str:
        if not self.escape or _utf8_ok(s):
            return s
        safe = utf8_safe(s)
        self._note(("unicode",), f"invalid Unicode escaped ({_where(trail + [safe] if key else trail)})")
        return safe

    def _fix(self, v, path: tuple, trail: list):
        t = type(v)
        if t is str:
            return self._str(v, trail)
        if t is list:
            item = path + (ITEM,)
            drop = item in self.nullify
            out = []
            for i, x in enumerate(v):
                if x is not None:
                    trail.append(i)
                    if drop and type(x) is not dict:
                        self._note(("null", item), f"{_where(trail)} is not an object ({type(x).__name__}), "
                                                   "read as null")
                        x = None
                    elif not self._typed(x, item, trail):
                        x = None
                    else:
                        x = self._fix(x, item, trail)
                    trail.pop()
                out.append(x)
            return out
        if t is dict:
            out = {}
            for k, x in v.items():
                sub = path + (k,)   # the plan knows the keys as they were read
                trail.append(self._str(k, trail, key=True) if self.escape else k)
                if x is not None:
                    if sub in self.as_text:
                        x = self._text(x, sub, trail)
                    elif not self._typed(x, sub, trail):
                        x = None
                    else:
                        if type(x) is str and sub in self.wrap:
                            x = [{"type": "text", self.wrap[sub]: x}]
                        x = self._fix(x, sub, trail)
                out[trail.pop()] = x
            return out
        return v

    def _text(self, v, path: tuple, trail: list) -> str | None:
        why = self.as_text[path]
        if why != _EMPTY and ("text", path) not in self._row:   # said once per record: it is about the key
            self._note(("text", path), f"{_show(self.name, path)} read as JSON text ({why})")
        try:
            return self._str(json.dumps(v, ensure_ascii=False), trail)
        except (ValueError, RecursionError) as e:
            self._note(("unencodable", path), f"{_show(self.name, path)}: value not encodable ({e})")
            return None


def _where(trail: list) -> str:
    """messages[1].content: the place of one value, for a record's warning."""
    return str(trail[0]) + "".join(f"[{c}]" if type(c) is int else f".{c}" for c in trail[1:])


def nested_array(name: str, values: list, warnings: list[list[str]]) -> tuple[pa.Array | None, str | None]:
    """(the Arrow array, None) for a column whose values are lists, dicts or None; row i's notes go to warnings[i].

    (None, why) when the values fit no Arrow type even after normalising: the caller stores them as JSON text,
    and names `why` in each record's warnings unless it is None (nothing wrong with the data: empty objects).
    """
    arr = _infer(values)
    if arr is not None:
        return arr, None
    try:
        stats, bad = _profile(values)
        nullify, wrap = _plan_shapes(stats)
        types = _plan_types(stats, nullify, wrap)
        fixed = _Rewriter(name, len(values), nullify, wrap, escape=bad, types=types)
        if nullify or wrap or bad or types:
            values = fixed.run(values)
            arr = _infer(values)
        if arr is None:
            as_text, why = _plan_text(_profile(values)[0])
            if not as_text:
                return None, None if why == _EMPTY else why or "unknown conflict"
            texts = _Rewriter(name, len(values), as_text=as_text)
            arr = _infer(texts.run(values))
            if arr is None:
                return None, "unknown conflict"
            fixed.notes = [{**a, **b} for a, b in zip(fixed.notes, texts.notes)]
    except RecursionError:   # deeper than Python's stack: json.dumps may still manage it
        return None, "nested too deep"
    for i, notes in enumerate(fixed.notes):
        if notes:
            warnings[i].extend(fixed.warnings(i))
    return arr, None
