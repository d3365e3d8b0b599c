"""Turns decoded records (tar samples, JSONL lines, JSON array elements) into Arrow record batches with the
provenance columns.

Readers hand over one record at a time as {column: (kind, value)}; the column's Arrow type is chosen per batch
from the kinds seen. When a field's type varies between records, the type most records of the batch hold is the
column's, and each record holding another type is flagged (a `field_type` reader warning) with its value left out
of the column: the rest of the batch is checked as its own type, whatever its neighbours hold (turning the whole
column into JSON text hid empty texts and broken conversations). A column named like a provenance column is
dropped, with a warning per record that had it.
Nested values (objects, lists of objects or strings) become Arrow nested types (see nested.py).
Parquet does not come through here: its batches are already Arrow.
"""
from __future__ import annotations

import json

import numpy as np
import pyarrow as pa

from .base import ERROR, KEY, LINE, PROVENANCE_COLUMNS, ROW, WARNING
from .nested import nested_array, utf8_safe

# Value kinds. A value of kind None is a JSON null: it fits any column.
STR, INT, FLOAT, BOOL = "str", "int", "float", "bool"
LIST_INT, LIST_FLOAT, LIST_EMPTY = "list_int", "list_float", "list_empty"
BYTES = "bytes"    # raw bytes (a WebDataset image member): a binary column
NESTED = "nested"  # an object, or a list that is not all numbers: an Arrow nested type when the column allows
JSON = "json"      # anything else (integers beyond int64): stored as JSON text
_LISTS = {LIST_INT, LIST_FLOAT, LIST_EMPTY}
# What one column can hold at once: the kinds of a family build one Arrow type together.
_FAMILY = {STR: "text", INT: "number", FLOAT: "number", BOOL: "boolean", BYTES: "bytes", JSON: "JSON",
           LIST_INT: "list or object", LIST_FLOAT: "list or object", LIST_EMPTY: "list or object",
           NESTED: "list or object"}

INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1
_FLOAT_EXACT = 1 << 53          # ints beyond this lose precision as float64, so they do not promote
MAX_COLUMNS = 1024              # a shard with thousands of distinct keys would explode memory into null padding
MAX_BATCH_BYTES = 256 << 20     # flush early when records are large, whatever batch_rows says

_STRING = pa.string()
_LIST_TYPES = {LIST_INT: (np.int64, pa.list_(pa.int64())), LIST_FLOAT: (np.float64, pa.list_(pa.float64()))}


def one_line(text: object) -> str:
    """Messages end up in one report cell: no newlines, no runs of whitespace."""
    return " ".join(str(text).split())


def json_value(v: object) -> tuple[str | None, object]:
    """Kind of one parsed JSON value (a top-level field)."""
    t = type(v)
    if v is None:
        return None, None
    if t is bool:
        return BOOL, v
    if t is int:
        return (INT, v) if INT64_MIN <= v <= INT64_MAX else (JSON, v)
    if t is float:
        return FLOAT, v
    if t is str:
        return STR, v
    if t is list:
        if not v:
            return LIST_EMPTY, v
        if all(type(x) is int for x in v):
            return (LIST_INT, v) if INT64_MIN <= min(v) and max(v) <= INT64_MAX else (JSON, v)
        if all(type(x) is int or type(x) is float for x in v):
            return LIST_FLOAT, v
        return NESTED, v
    if t is dict:
        return NESTED, v
    return JSON, v


def flatten_object(obj: dict, prefix: str, out: dict, warnings: list[str], where) -> None:
    """One column per top-level field, named prefix + field; an existing column is kept (first wins). `where`
    names the record in a warning: a string, or a function giving it (formatted only when there is one)."""
    for name, v in obj.items():
        col = prefix + name
        if col in PROVENANCE_COLUMNS:
            warnings.append(f"{where() if callable(where) else where}: field {name!r} clashes with a provenance "
                            "column (dropped)")
        elif col in out:
            warnings.append(f"{where() if callable(where) else where}: field {col!r} duplicates another member's "
                            "column (first kept)")
        else:
            out[col] = json_value(v)


def _approx_bytes(v: object) -> int:
    """Size once in Arrow (numbers widen to 8 bytes): enough to keep a batch of big records bounded."""
    if isinstance(v, np.ndarray):
        return 8 * v.size
    if isinstance(v, list):
        return 8 * len(v)
    if isinstance(v, (str, bytes)):
        return len(v)
    return 8


def string_array(values: list, bad_rows: list[int] | None = None) -> pa.Array:
    """Arrow string array; values that are not valid Unicode are escaped and their rows reported."""
    try:
        return pa.array(values, _STRING)
    except UnicodeEncodeError:
        pass
    out = []
    for i, v in enumerate(values):
        if v is not None and not v.isascii():
            try:
                v.encode("utf-8")
            except UnicodeEncodeError:
                v = utf8_safe(v)
                if bad_rows is not None:
                    bad_rows.append(i)
        out.append(v)
    return pa.array(out, _STRING)


def _to_jsonable(v: object) -> object:
    return v.tolist() if isinstance(v, np.ndarray) else v


def _list_array(values: list, kind: str) -> pa.Array:
    """list<int64>/list<float64> from lists or numpy arrays without a per-element Python loop."""
    np_type, pa_type = _LIST_TYPES[kind]
    n = len(values)
    lengths = np.zeros(n, np.int64)
    valid = np.ones(n, bool)
    pieces = []
    for i, v in enumerate(values):
        if v is None:
            valid[i] = False
            continue
        a = np.asarray(v).ravel()
        pieces.append(a)
        lengths[i] = a.size
    # unsafe casting: bool/uint -> int64 and int -> float64 are intended; uint64 overflow was routed to float
    flat = np.concatenate(pieces, dtype=np_type, casting="unsafe") if pieces else np.empty(0, np_type)
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    mask = None if valid.all() else pa.array(~valid)
    return pa.ListArray.from_arrays(pa.array(offsets.astype(np.int32)), pa.array(flat), type=pa_type, mask=mask)


class BatchBuilder:
    """Accumulates records and emits RecordBatches; numbers rows consecutively across batches of one shard."""

    def __init__(self, columns: list[str] | None = None, max_columns: int = MAX_COLUMNS):
        self._wanted = None if columns is None else set(columns)
        self._max_columns = max_columns
        self.next_row = 0  # __row__ of the first pending record
        self._reset()

    def _reset(self) -> None:
        self._keys: list[str] = []
        self._lines: list[int | None] = []
        self._errors: list[str | None] = []
        self._warnings: list[list[str]] = []
        self._cols: dict[str, tuple[list[int], list, list]] = {}  # name -> (row indices, values, kinds)
        self.nbytes = 0

    def __len__(self) -> int:
        return len(self._keys)

    def wants(self, column: str) -> bool:
        """Whether the reader asked for this column (a member nobody reads need not be kept)."""
        return self._wanted is None or column in self._wanted

    def full(self, batch_rows: int) -> bool:
        return len(self._keys) >= batch_rows or self.nbytes >= MAX_BATCH_BYTES

    def add(self, key: str, values: dict, error: str | None = None, warnings: list[str] = (),
            size: int | None = None, line: int | None = None) -> None:
        """One record. With an error its values are dropped: an undecodable record has null data columns.

        size: the record's size in memory as the reader estimates it (its encoded size, or more for many JSON
        values: json_budget.memory_bytes); nested values are not walked to estimate it.
        line: the 1-based physical line where the record starts (text formats), else None.
        """
        i = len(self._keys)
        warnings = list(warnings)
        dropped = 0
        if size is not None:
            self.nbytes += size
        if error is None:
            for col, (kind, v) in values.items():
                if self._wanted is not None and col not in self._wanted:
                    continue
                c = self._cols.get(col)
                if c is None:
                    if len(self._cols) >= self._max_columns:
                        dropped += 1
                        continue
                    c = self._cols[col] = ([], [], [])
                c[0].append(i)
                c[1].append(v)
                c[2].append(kind)
                if size is None:
                    self.nbytes += _approx_bytes(v)
        if dropped:
            warnings.append(f"{dropped} field(s) dropped: more than {self._max_columns} columns in one batch")
        self._keys.append(key)
        self._lines.append(line)
        self._errors.append(error)
        self._warnings.append(warnings)

    def _column(self, name: str, idx: list[int], vals: list, kinds: list, n: int) -> pa.Array:
        full = [None] * n
        for i, v in zip(idx, vals):
            full[i] = v
        seen = set(kinds)
        seen.discard(None)
        if len({_FAMILY[k] for k in seen}) > 1:
            seen = self._one_family(name, idx, full, kinds)
        return self._typed(name, full, seen, n)

    def _one_family(self, name: str, idx: list[int], full: list, kinds: list) -> set:
        """Keep the values of the family most records hold (the first seen on a tie); each other record is
        flagged and its value left out (null). The kinds kept are returned."""
        counts: dict[str, int] = {}
        for k in kinds:
            if k is not None:
                counts[_FAMILY[k]] = counts.get(_FAMILY[k], 0) + 1
        keep = max(counts, key=counts.get)   # dicts keep insertion order: a tie goes to the first seen
        kept = set()
        for i, k in zip(idx, kinds):
            if k is None:
                continue
            if _FAMILY[k] == keep:
                kept.add(k)
            else:
                full[i] = None
                self._warnings[i].append(f"field_type: column {name!r} is {_FAMILY[k]} here, {keep} in "
                                         f"{counts[keep]} of the batch's {sum(counts.values())} records "
                                         "(value not read)")
        return kept

    def _typed(self, name: str, full: list, kinds: set, n: int) -> pa.Array:
        if kinds <= _LISTS and kinds:
            return _list_array(full, LIST_FLOAT if LIST_FLOAT in kinds else LIST_INT)
        if NESTED in kinds and kinds <= _LISTS | {NESTED}:
            return self._nested(name, full, kinds)
        if kinds == {INT, FLOAT}:
            kinds = {FLOAT}  # JSON has one number type: 1 and 0.5 in one field is not a conflict
            for i, v in enumerate(full):
                if type(v) is int and abs(v) > _FLOAT_EXACT:   # float64 would change it: flagged, not read
                    full[i] = None
                    self._warnings[i].append(f"field_type: column {name!r} holds an integer beyond 2**53 among "
                                             "floats (value not read)")
        if len(kinds) == 1 and JSON not in kinds:
            (kind,) = kinds
            if kind == STR:
                return self._strings(name, full)
            return pa.array(full, {INT: pa.int64(), FLOAT: pa.float64(), BOOL: pa.bool_(), BYTES: pa.binary()}[kind])
        if not kinds:
            return pa.nulls(n, _STRING)
        # Only integers beyond int64 (JSON): JSON text keeps every value without guessing a type.
        return self._json_text(name, full)

    def _nested(self, name: str, full: list, kinds: set) -> pa.Array:
        """Objects and lists as Arrow nested types; JSON text (with a warning per record) when they fit none."""
        if kinds & {LIST_INT, LIST_FLOAT}:
            full = [_to_jsonable(v) for v in full]  # .npy members arrive as numpy arrays
        arr, why = nested_array(name, full, self._warnings)
        if arr is not None:
            return arr
        return self._json_text(name, full, why and f"nested values fit no single Arrow type ({why}), read as JSON text")

    def _strings(self, name: str, values: list) -> pa.Array:
        bad: list[int] = []
        arr = string_array(values, bad)
        for i in bad:
            self._warnings[i].append(f"column {name!r}: invalid Unicode escaped")
        return arr

    def _json_text(self, name: str, full: list, note: str | None = None) -> pa.Array:
        """Every non-null value as JSON text; `note` (if any) becomes a warning of each such record."""
        text = []
        for i, v in enumerate(full):
            if v is not None:
                if note is not None:
                    self._warnings[i].append(f"column {name!r}: {note}")
                try:
                    v = json.dumps(_to_jsonable(v), ensure_ascii=False)
                except (ValueError, RecursionError) as e:
                    self._warnings[i].append(f"column {name!r}: value not encodable ({one_line(e)})")
                    v = None
            text.append(v)
        return self._strings(name, text)

    def build(self) -> pa.RecordBatch:
        n = len(self._keys)
        names, arrays = [], []
        for name, (idx, vals, kinds) in self._cols.items():
            if name in PROVENANCE_COLUMNS:   # e.g. a tar member `KEY.__row__.cls`: the reader's column wins
                for i in idx:
                    self._warnings[i].append(f"field {name!r} is a reserved name (dropped)")
                continue
            names.append(utf8_safe(name) if not name.isascii() else name)
            arrays.append(self._column(name, idx, vals, kinds, n))
        bad_keys: list[int] = []
        keys = string_array(self._keys, bad_keys)
        for i in bad_keys:
            self._warnings[i].append("key is not valid Unicode (escaped)")
        rows = pa.array(np.arange(self.next_row, self.next_row + n, dtype=np.int64))
        lines = pa.array(self._lines, pa.int64())
        errors = string_array(self._errors)
        warnings = string_array(["; ".join(w) if w else None for w in self._warnings])
        batch = pa.RecordBatch.from_arrays(arrays + [keys, rows, lines, errors, warnings],
                                           names=names + [KEY, ROW, LINE, ERROR, WARNING])
        self.next_row += n
        self._reset()
        return batch
