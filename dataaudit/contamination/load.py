"""Benchmark files -> items (id, text to match, the original record) for contamination checks.

Formats: JSONL, JSON (an array of objects, or an object holding one such array), CSV/TSV (with or without a
header row, UTF-8 byte order mark tolerated) and Parquet; any of them gzipped (detected by magic bytes).
The text of an item is the value of one or more fields (`question`, `question.stem`, `question.choices.text`:
dots walk into objects and over lists; list values are joined), joined with newlines.

Benchmarks are small (thousands to tens of thousands of items), so they are read whole; any problem is one
`BenchmarkError` naming the file, the line (or row: 0-based record index) and the field.
"""
from __future__ import annotations

import csv
import datetime
import decimal
import gzip
import json
import os
import re
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dataaudit.atomic import write_bytes, write_parquet
from dataaudit.errors import DataAuditError
from dataaudit.io import join

from .config import BenchmarkSettings
from .presets import Preset, find_preset, preset_by_name

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
BOM = b"\xef\xbb\xbf"
MAX_BENCHMARK_BYTES = 2 << 30
GENERIC_TEXT_FIELDS = ("text", "content")
GENERIC_ID_FIELDS = ("id",)
_FORMATS = ((".jsonl", "jsonl"), (".ndjson", "jsonl"), (".json", "json"), (".csv", "csv"), (".tsv", "tsv"),
            (".parquet", "parquet"), (".pq", "parquet"))


class BenchmarkError(DataAuditError, ValueError):
    """A benchmark argument or file that cannot be used; one line naming the file, line and field."""


@dataclass
class Benchmark:
    """One benchmark file, read whole. Lists are parallel, one entry per item, in file order."""
    name: str
    path: str
    format: str                      # jsonl | json | csv | tsv | parquet
    compressed: bool
    preset: str | None
    fields: tuple[str, ...]
    id_field: str | None
    ids: list[str]
    lines: list[int | None]          # 1-based line where the item starts (JSONL, CSV, JSON array); None otherwise
    texts: list[str]
    records: list[dict]              # parsed records (JSON objects, CSV rows as dicts, Parquet rows)
    raw: list[bytes] | None = None   # JSONL: each original line; CSV: each original row (with its line ends)
    csv_header: bytes | None = None  # CSV: the original header row, if the file has one
    csv_columns: tuple[str, ...] | None = None
    table: Any = None                # Parquet: the pyarrow Table, for clean.parquet
    warnings: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.ids)

    def describe(self) -> dict:
        return {"path": self.path, "format": self.format, "compressed": self.compressed, "preset": self.preset,
                "fields": list(self.fields), "id_field": self.id_field, "header": self.csv_header is not None
                if self.format in ("csv", "tsv") else None}


# ------------------------------------------------------------------------------------------- arguments

def parse_benchmark_arg(arg: str) -> tuple[str, str, tuple[str, ...] | None]:
    """`NAME=PATH[:field1+field2]` -> (name, path, fields or None)."""
    name, sep, rest = arg.partition("=")
    if not sep or not name or not rest:
        raise BenchmarkError(f"--benchmark {arg!r}: expected NAME=PATH or NAME=PATH:field1+field2")
    if not NAME_RE.match(name):
        raise BenchmarkError(f"--benchmark {arg!r}: the name {name!r} must be letters, digits, '.', '_' or '-' "
                             "(it names the output folder)")
    if rest.endswith(":"):
        raise BenchmarkError(f"--benchmark {arg!r}: empty field spec after ':'")
    path, fields = rest, None
    head, colon, tail = rest.rpartition(":")
    if colon and head and "/" not in tail and "\\" not in tail and not os.path.exists(rest):
        path, fields = head, tuple(tail.split("+"))
        if any(not f.strip() for f in fields):
            raise BenchmarkError(f"--benchmark {arg!r}: empty field name in {tail!r} (fields are joined by '+')")
        fields = tuple(f.strip() for f in fields)
    return name, path, fields


def detect_format(path: str) -> tuple[str, bool]:
    name = os.fspath(path).lower()
    gz = name.endswith(".gz")
    if gz:
        name = name[:-3]
    for suffix, fmt in _FORMATS:
        if name.endswith(suffix):
            return fmt, gz
    raise BenchmarkError(f"{path}: unsupported benchmark format (expected .jsonl, .ndjson, .json, .csv, .tsv, "
                         ".parquet or .pq, optionally .gz)")


# ------------------------------------------------------------------------------------------- fields

class FieldError(Exception):
    pass


def _kind(v: Any) -> str:
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
        raise FieldError(f"field {full!r}: {done or 'the record'} is {_kind(value)}, it has no field "
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


def item_text(record: dict, fields: tuple[str, ...]) -> str:
    parts = [value_text(resolve_field(record, f), f) for f in fields]
    return "\n".join(p for p in parts if p)


def _has(record: Any, path: str) -> bool:
    try:
        resolve_field(record, path)
    except FieldError:
        return False
    return True


# ------------------------------------------------------------------------------------------- readers

@dataclass
class _Rec:
    number: int          # the id when there is no id field: the line (JSONL, CSV) or the row (JSON, Parquet)
    where: str           # "line 12" or "row 11", for messages
    obj: dict
    raw: bytes | None = None
    line: int | None = None   # 1-based line where the record starts, when the format has lines


def _read_bytes(path: str) -> tuple[bytes, bool]:
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_BENCHMARK_BYTES + 1)
    except FileNotFoundError:
        raise BenchmarkError(f"{path}: file not found") from None
    except IsADirectoryError:
        raise BenchmarkError(f"{path}: is a folder, not a benchmark file") from None
    except OSError as exc:
        raise BenchmarkError(f"{path}: cannot read: {exc.strerror or exc}") from None
    compressed = data[:2] == b"\x1f\x8b"
    if compressed:
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as exc:
            raise BenchmarkError(f"{path}: not a valid gzip file: {exc}") from None
    if len(data) > MAX_BENCHMARK_BYTES:
        raise BenchmarkError(f"{path}: larger than {MAX_BENCHMARK_BYTES >> 20} MiB; a benchmark is expected to "
                             "be small")
    return data, compressed


def _split_lines(data: bytes) -> list[bytes]:
    """Lines with their terminators (\\n or \\r\\n); only \\n ends a line."""
    lines = data.split(b"\n")
    out = [ln + b"\n" for ln in lines[:-1]]
    if lines[-1]:
        out.append(lines[-1])
    return out


def _read_jsonl(path: str, data: bytes) -> list[_Rec]:
    recs = []
    for lineno, line in enumerate(_split_lines(data), 1):
        if lineno == 1 and line.startswith(BOM):
            line = line[len(BOM):]
        body = line.rstrip(b"\r\n")
        if not body.strip():
            continue
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise BenchmarkError(f"{path}: line {lineno}: invalid UTF-8 at byte {exc.start + 1}") from None
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as exc:
            raise BenchmarkError(f"{path}: line {lineno}: not valid JSON: {exc.msg} at column {exc.colno}") from None
        except (ValueError, RecursionError) as exc:
            raise BenchmarkError(f"{path}: line {lineno}: not valid JSON: {exc}") from None
        if not isinstance(obj, dict):
            raise BenchmarkError(f"{path}: line {lineno}: expected a JSON object, got {_kind(obj)}")
        recs.append(_Rec(lineno, f"line {lineno}", obj, line if line.endswith(b"\n") else line + b"\n", lineno))
    return recs


def _decode(path: str, data: bytes) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        raise BenchmarkError(f"{path}: line {line}: invalid UTF-8") from None


def _skip_ws(text: str, i: int) -> int:
    while i < len(text) and text[i] in " \t\r\n":
        i += 1
    return i


def _read_json(path: str, data: bytes) -> list[_Rec]:
    text = _decode(path, data)
    start = _skip_ws(text, 0)
    if start == len(text):
        return []
    start_line = text.count("\n", 0, start) + 1
    dec = json.JSONDecoder()

    def fail(exc: json.JSONDecodeError):
        raise BenchmarkError(f"{path}: line {exc.lineno}: not valid JSON: {exc.msg} at column {exc.colno}") \
            from None

    if text[start] == "[":                       # an array: parse element by element to know each one's line
        recs: list[_Rec] = []
        i = _skip_ws(text, start + 1)
        line, last = 1, 0
        if i < len(text) and text[i] == "]":
            return recs
        while True:
            line += text.count("\n", last, i)
            last = i
            try:
                obj, end = dec.raw_decode(text, i)
            except json.JSONDecodeError as exc:
                fail(exc)
            except RecursionError:
                raise BenchmarkError(f"{path}: line {line}: JSON nested too deeply") from None
            if not isinstance(obj, dict):
                raise BenchmarkError(f"{path}: line {line}: expected a JSON object in the array, got {_kind(obj)}")
            recs.append(_Rec(len(recs), f"line {line}", obj, line=line))
            i = _skip_ws(text, end)
            if i < len(text) and text[i] == ",":
                i = _skip_ws(text, i + 1)
                continue
            if i < len(text) and text[i] == "]":
                if _skip_ws(text, i + 1) != len(text):
                    line += text.count("\n", last, i + 1)
                    raise BenchmarkError(f"{path}: line {line}: extra data after the JSON array")
                return recs
            line += text.count("\n", last, i)
            raise BenchmarkError(f"{path}: line {line}: not valid JSON: expected ',' or ']' in the array")
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        if exc.msg == "Extra data":              # one object per line in a .json file: it is JSONL
            return _read_jsonl(path, data)
        fail(exc)
    except RecursionError:
        raise BenchmarkError(f"{path}: JSON nested too deeply") from None
    if isinstance(obj, dict):
        lists = [k for k, v in obj.items() if isinstance(v, list) and v and all(isinstance(x, dict) for x in v)]
        if len(lists) == 1:
            return [_Rec(i, f"row {i} of {lists[0]!r}", o) for i, o in enumerate(obj[lists[0]])]
        if not any(isinstance(v, (list, dict)) for v in obj.values()):
            return [_Rec(0, "row 0", obj, line=start_line)]    # a single flat record
        raise BenchmarkError(f"{path}: expected a JSON array of objects, or an object holding exactly one such "
                             f"array (found {len(lists)})")
    raise BenchmarkError(f"{path}: expected a JSON array of objects, got {_kind(obj)}")


class _LineFeed:
    """Feeds csv.reader one line at a time and remembers how many lines it took, so every row's original text
    (which can span lines inside quotes) is known."""

    def __init__(self, lines: list[str]):
        self.lines = lines
        self.i = 0

    def __iter__(self):
        return self

    def __next__(self) -> str:
        if self.i >= len(self.lines):
            raise StopIteration
        self.i += 1
        return self.lines[self.i - 1]


def _csv_rows(path: str, data: bytes, delimiter: str) -> list[tuple[int, list[str], str]]:
    """(start line, cells, original text) of every non-blank row."""
    text = _decode(path, data)
    pieces = text.split("\n")
    lines = [p + "\n" for p in pieces[:-1]] + ([pieces[-1]] if pieces[-1] else [])
    feed = _LineFeed(lines)
    reader = csv.reader(feed, delimiter=delimiter, strict=True)
    rows, prev = [], 0
    while True:
        try:
            row = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            raise BenchmarkError(f"{path}: line {prev + 1}: not valid CSV: {exc}") from None
        start, prev = prev + 1, feed.i
        if not row or (len(row) == 1 and not row[0].strip()):
            continue
        rows.append((start, row, "".join(lines[start - 1:prev])))
    return rows


def _csv_header(path: str, rows, fields, settings: BenchmarkSettings, preset: Preset | None,
                sample: bytes) -> tuple[bool, tuple[str, ...] | None]:
    """(first row is a header, column names for a headerless file)."""
    first = rows[0][1]
    if settings.header is not None:
        header = settings.header
    elif fields:
        tops = [f.split(".")[0] for f in fields]
        if all(t in first for t in tops):
            header = True
        elif all(t.isdigit() for t in tops):
            header = False
        else:
            missing = [t for t in tops if t not in first]
            raise BenchmarkError(f"{path}: line {rows[0][0]}: field {missing[0]!r} not found in the header "
                                 f"(columns: {', '.join(first[:20])}); a headerless file names columns by "
                                 "number: 0, 1, ...")
    elif preset is not None and any(all(f.split(".")[0] in first for f in alt) for alt in preset.alternatives):
        header = True
    elif preset is not None and preset.csv_columns is not None:
        header = False
    else:
        try:
            header = csv.Sniffer().has_header(sample.decode("utf-8", "replace")[:65536])
        except csv.Error:
            header = False
    if header:
        return True, None
    if preset is not None and preset.csv_columns is not None and not fields and settings.fields is None:
        return False, preset.csv_columns
    return False, tuple(str(i) for i in range(len(first)))


def _read_csv(path: str, data: bytes, fmt: str, fields, settings: BenchmarkSettings,
              preset: Preset | None) -> tuple[list[_Rec], bytes | None, tuple[str, ...]]:
    rows = _csv_rows(path, data, "\t" if fmt == "tsv" else ",")
    if not rows:
        return [], None, ()
    header, names = _csv_header(path, rows, fields, settings, preset, data)
    header_raw = None
    if header:
        start, cells, raw = rows[0]
        if len(set(cells)) != len(cells):
            dup = next(c for c in cells if cells.count(c) > 1)
            raise BenchmarkError(f"{path}: line {start}: the header names column {dup!r} twice")
        names = tuple(cells)
        header_raw = raw.lstrip("\ufeff").encode("utf-8")
        rows = rows[1:]
    recs = []
    for start, cells, raw in rows:
        if len(cells) != len(names):
            raise BenchmarkError(f"{path}: line {start}: {len(cells)} columns, expected {len(names)}"
                                 + (" (as in the header)" if header else " (as in the first row)"))
        recs.append(_Rec(start, f"line {start}", dict(zip(names, cells)), raw.encode("utf-8"), start))
    return recs, header_raw, names


def _read_parquet(path: str, data: bytes):
    import pyarrow as pa
    import pyarrow.parquet as pq
    try:
        table = pq.read_table(pa.BufferReader(data))
    except Exception as exc:  # pyarrow raises several unrelated types for a corrupt file
        raise BenchmarkError(f"{path}: not a readable Parquet file: {' '.join(str(exc).split())}") from None
    recs = [_Rec(i, f"row {i}", r) for i, r in enumerate(table.to_pylist())]
    return recs, table


# ------------------------------------------------------------------------------------------- loading

def _choose_fields(name: str, path: str, first: _Rec, cli_fields, settings: BenchmarkSettings,
                   preset: Preset | None) -> tuple[tuple[str, ...], str | None]:
    """(text fields, description of where they came from)."""
    if cli_fields:
        return tuple(cli_fields), "field spec"
    if settings.fields:
        return tuple(settings.fields), "config"
    have = ", ".join(list(map(str, first.obj))[:20]) or "none"
    if preset is not None:
        for alt in preset.alternatives:
            if all(_has(first.obj, f) for f in alt):
                return alt, f"preset {preset.name}"
        wanted = " or ".join("+".join(a) for a in preset.alternatives)
        raise BenchmarkError(f"{path}: {first.where}: preset {preset.name!r} expects fields {wanted}, the record "
                             f"has: {have}; name the fields: {name}=PATH:FIELD1+FIELD2")
    for f in GENERIC_TEXT_FIELDS:
        if f in first.obj:
            return (f,), "default"
    raise BenchmarkError(f"{path}: {first.where}: no preset for benchmark name {name!r} and no 'text' field "
                         f"(the record has: {have}); name the fields: {name}=PATH:FIELD1+FIELD2")


def load_benchmark(name: str, path: str, fields: tuple[str, ...] | None = None,
                   settings: BenchmarkSettings | None = None) -> Benchmark:
    """Read one benchmark file. `fields` from the command line win over the config's, which win over the
    preset implied by `name` (or named in the config)."""
    settings = settings or BenchmarkSettings()
    path = os.fspath(path)
    fmt, gz_name = detect_format(path)
    preset = preset_by_name(settings.preset) if settings.preset else find_preset(name)
    data, compressed = _read_bytes(path)
    header_raw, columns, table = None, None, None
    if fmt == "jsonl":
        recs = _read_jsonl(path, data)
    elif fmt == "json":
        recs = _read_json(path, data)
    elif fmt in ("csv", "tsv"):
        recs, header_raw, columns = _read_csv(path, data, fmt, fields or settings.fields, settings, preset)
    else:
        recs, table = _read_parquet(path, data)
    if not recs:
        raise BenchmarkError(f"{path}: holds no records")
    chosen, _origin = _choose_fields(name, path, recs[0], fields, settings, preset)
    id_field = settings.id_field
    if id_field is None:
        candidates = (preset.id_fields if preset is not None else ()) + GENERIC_ID_FIELDS
        id_field = next((f for f in candidates if _has(recs[0].obj, f)), None)
    ids, texts = [], []
    for rec in recs:
        try:
            texts.append(item_text(rec.obj, chosen))
        except FieldError as exc:
            raise BenchmarkError(f"{path}: {rec.where}: {exc}") from None
        if id_field is None:
            ids.append(str(rec.number))
        else:
            try:
                v = resolve_field(rec.obj, id_field)
            except FieldError as exc:
                raise BenchmarkError(f"{path}: {rec.where}: id {exc}") from None
            if v is None or isinstance(v, (dict, list)) or v == "":
                what = "empty" if v == "" else _kind(v)
                raise BenchmarkError(f"{path}: {rec.where}: id field {id_field!r} is {what}")
            ids.append(value_text(v, id_field))
    bench = Benchmark(name=name, path=path, format=fmt, compressed=compressed or gz_name,
                      preset=preset.name if preset is not None and _origin.startswith("preset") else None,
                      fields=chosen, id_field=id_field, ids=ids, lines=[r.line for r in recs], texts=texts,
                      records=[r.obj for r in recs],
                      raw=[r.raw for r in recs] if fmt in ("jsonl", "csv", "tsv") or recs[0].raw is not None
                      else None,
                      csv_header=header_raw, csv_columns=columns, table=table)
    seen: dict[str, int] = {}
    for i in ids:
        seen[i] = seen.get(i, 0) + 1
    dups = [i for i, c in seen.items() if c > 1]
    if dups:
        bench.warnings.append(f"{len(dups)} item ids occur more than once (first: {dups[0]!r}); items are told "
                              "apart by their index")
    return bench


# ------------------------------------------------------------------------------------------- clean subset

def _json_default(v: Any):
    if isinstance(v, (datetime.date, datetime.datetime, datetime.time)):
        return v.isoformat()
    if isinstance(v, decimal.Decimal):
        return str(v)
    if isinstance(v, (bytes, bytearray)):
        return bytes(v).decode("utf-8", "replace")
    if hasattr(v, "tolist"):
        return v.tolist()
    return str(v)


def clean_lines(bench: Benchmark, keep) -> list[bytes]:
    """The clean.jsonl lines: JSONL inputs' original lines byte for byte; other formats' records as one JSON
    object per line (CSV: column -> cell text)."""
    if bench.format in ("jsonl", "json") and bench.raw is not None:
        return [bench.raw[i] for i in range(len(bench)) if keep[i]]
    return [(json.dumps(bench.records[i], ensure_ascii=False, default=_json_default) + "\n").encode("utf-8")
            for i in range(len(bench)) if keep[i]]


def write_clean(bench: Benchmark, keep, folder: str, stem: str) -> list[str]:
    """Write the uncontaminated items' original records as `<stem>.jsonl` and more; returns the file names written.

    Always `<stem>.jsonl`; CSV inputs also get `<stem>.csv` (header and rows byte for byte) and Parquet inputs
    `<stem>.parquet` (the same schema), so the subset can be evaluated with the same loader as the original."""
    write_bytes(join(folder, f"{stem}.jsonl"), clean_lines(bench, keep))
    files = [f"{stem}.jsonl"]
    if bench.format in ("csv", "tsv"):
        ext = "csv" if bench.format == "csv" else "tsv"
        rows = [bench.raw[i] for i in range(len(bench)) if keep[i]]
        if rows and not rows[-1].endswith(b"\n"):
            rows[-1] = rows[-1] + b"\n"
        write_bytes(join(folder, f"{stem}.{ext}"), ([bench.csv_header] if bench.csv_header else []) + rows)
        files.append(f"{stem}.{ext}")
    elif bench.format == "parquet" and bench.table is not None:
        import pyarrow as pa
        t = bench.table.filter(pa.array([bool(k) for k in keep]))
        write_parquet(join(folder, f"{stem}.parquet"), [t], t.schema)
        files.append(f"{stem}.parquet")
    return files


__all__ = ["Benchmark", "BenchmarkError", "load_benchmark", "parse_benchmark_arg", "detect_format",
           "resolve_field", "item_text", "write_clean", "clean_lines", "NAME_RE"]
