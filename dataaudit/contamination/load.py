"""Benchmark files -> items (id, text to match, the original record) for contamination checks.

A benchmark is read through the format table (`dataaudit.formats`): the same readers as the training shards, with
the same gzip detection, limits and record numbering. JSONL, JSON (an array of objects, objects one after another,
or an object holding one such array), CSV/TSV (with or without a header row, UTF-8 byte order mark tolerated),
Parquet and any other format of the table. The text of an item is the value of one or more fields (`question`,
`question.stem`, `question.choices.text`: dots walk into objects and over lists; list values are joined), joined
with newlines. The clean subset is written by the format's own writer, byte for byte as the original.

Benchmarks are small (thousands to tens of thousands of items), so their records are held whole; any problem is
one `BenchmarkError` naming the file, the line (or row: 0-based record index) and the field.
"""
from __future__ import annotations

import csv
import datetime
import decimal
import json
import os
import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dataaudit.atomic import write_bytes
from dataaudit.errors import DataAuditError
from dataaudit.formats import BY_NAME, MAX_RECORD, Format, format_of, supported
from dataaudit.io import exists, join, open_input, stat
from dataaudit.sources.base import ERROR, LINE, PROVENANCE_COLUMNS, READ_ERRORS
from dataaudit.sources.json_array import holds_json_array, wrapped_member
from dataaudit.sources.record_stream import open_stream
from dataaudit.writers.base import WriteOptions, is_gzip

from .config import BenchmarkSettings
from .fields import FieldError, kind_name, resolve_field, value_text  # noqa: F401  (re-exported)
from .presets import Preset, find_preset, preset_by_name

LM_EVAL_PREFIX = "lm-eval:"   # --benchmark lm-eval:TASK=PATH: the name is an lm-eval task (`lmeval_tasks`)
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
MAX_BENCHMARK_BYTES = 2 << 30
GENERIC_TEXT_FIELDS = ("text", "content")
GENERIC_ID_FIELDS = ("id",)
SNIFF_BYTES = 65536    # CSV without a header setting or preset: the header is guessed from this much text


class BenchmarkError(DataAuditError, ValueError):
    """A benchmark argument or file that cannot be used; one line naming the file, line and field."""


@dataclass
class Benchmark:
    """One benchmark file, read whole. Lists are parallel, one entry per item, in file order."""
    name: str
    path: str
    format: str                      # a format's name in the format table: jsonl | json | csv | tsv | parquet ...
    compressed: bool
    preset: str | None
    fields: tuple[str, ...]
    id_field: str | None
    ids: list[str]
    lines: list[int | None]          # 1-based line where the item starts (JSONL, CSV, JSON array); None otherwise
    texts: list[str]
    records: list[dict]              # parsed records (JSON objects, CSV rows as dicts, Parquet rows)
    csv_header: bool | None = None   # CSV/TSV: whether the first row names the columns
    csv_columns: tuple[str, ...] | None = None
    nested_in: str | None = None     # JSON: the field of the one object whose array holds the items
    warnings: list[str] = field(default_factory=list)
    # per item: the reference answer(s) and the choices (`answers`); None: the preset has no reader (not checked)
    answers: list[list[str]] | None = None
    choices: list[list[str] | None] | None = None

    def __len__(self) -> int:
        return len(self.ids)

    def describe(self) -> dict:
        return {"path": self.path, "format": self.format, "compressed": self.compressed, "preset": self.preset,
                "fields": list(self.fields), "id_field": self.id_field,
                "header": self.csv_header if self.format in ("csv", "tsv") else None}


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
    if colon and head and "/" not in tail and "\\" not in tail and not exists(rest):
        path, fields = head, tuple(tail.split("+"))
        if any(not f.strip() for f in fields):
            raise BenchmarkError(f"--benchmark {arg!r}: empty field name in {tail!r} (fields are joined by '+')")
        fields = tuple(f.strip() for f in fields)
    return name, path, fields


def detect_format(path: str) -> Format:
    """The benchmark file's format, from the format table."""
    try:
        return format_of(path)
    except ValueError:
        raise BenchmarkError(f"{path}: unsupported benchmark format (expected {supported()})") from None


# ------------------------------------------------------------------------------------------- fields
# FieldError, resolve_field and value_text live in .fields (lmeval_render reads them too, without this module).

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
    line: int | None = None   # 1-based line where the record starts, when the format has lines


def _records(path: str, fmt: Format) -> list[tuple[dict, int | None]]:
    """(record, line) of every record the format's reader finds; a record it cannot decode is the file's error."""
    try:
        if stat(path).size > MAX_BENCHMARK_BYTES:
            raise BenchmarkError(f"{path}: larger than {MAX_BENCHMARK_BYTES >> 20} MiB; a benchmark is expected to "
                                 "be small")
        parsed = fmt.records(path, MAX_RECORD)
        if parsed is not None:
            out = []
            for values, error, _warnings, _size, line in parsed:
                if error is not None:
                    raise BenchmarkError(f"{path}: {error}")
                out.append(({k: v for k, (_kind, v) in values.items()}, line))
            return out
        out = []
        for batch in fmt.read(path, None, 4096, MAX_RECORD, True, "line"):
            errors = batch.column(batch.schema.get_field_index(ERROR))
            if errors.null_count < len(errors):
                raise BenchmarkError(f"{path}: {next(e for e in errors.to_pylist() if e is not None)}")
            lines = batch.column(batch.schema.get_field_index(LINE)).to_pylist()
            data = batch.drop_columns([c for c in PROVENANCE_COLUMNS if c in batch.schema.names])
            out += zip(data.to_pylist(), lines)
        return out
    except FileNotFoundError:
        raise BenchmarkError(f"{path}: file not found") from None
    except IsADirectoryError:
        raise BenchmarkError(f"{path}: is a folder, not a benchmark file") from None
    except READ_ERRORS as exc:
        raise BenchmarkError(f"{path}: cannot read it: {exc}") from None


def _json_recs(path: str, records: list[tuple[dict, int | None]]) -> tuple[list[_Rec], str | None]:
    """A JSON file's items: its records as the reader reads them (the elements of a wrapper object's array,
    {"version": 1, "data": [...]}, the reader's rule for every command: sources.json_array); and that array's
    field. A lone object holding containers that is no wrapper is refused (a benchmark item is flat)."""
    nested = wrapped_member(path)
    if nested is not None:
        return [_Rec(i, f"row {i} of {nested!r}", obj, line) for i, (obj, line) in enumerate(records)], nested
    if len(records) == 1 and not holds_json_array(path):
        obj, line = records[0]
        if any(isinstance(v, (list, dict)) for v in obj.values()):
            lists = sum(isinstance(v, list) and bool(v) and all(isinstance(x, dict) for x in v) for v in obj.values())
            raise BenchmarkError(f"{path}: expected a JSON array of objects, or an object holding exactly one such "
                                 f"array (found {lists})")
    return [_Rec(i, f"line {line}", obj, line) for i, (obj, line) in enumerate(records)], None


def _sample_text(path: str) -> str:
    """The start of the file as text (decompressed), for csv.Sniffer."""
    with open_input(path) as raw:
        return open_stream(raw).read(SNIFF_BYTES).decode("utf-8", "replace").removeprefix("\ufeff")


def _csv_header(path: str, rows: list[tuple[int, list[str]]], fields, settings: BenchmarkSettings,
                preset: Preset | None) -> tuple[bool, tuple[str, ...] | None]:
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
            header = csv.Sniffer().has_header(_sample_text(path))
        except csv.Error:
            header = False
    if header:
        return True, None
    if preset is not None and preset.csv_columns is not None and not fields and settings.fields is None:
        return False, preset.csv_columns
    return False, tuple(str(i) for i in range(len(first)))


def _csv_recs(path: str, records: list[tuple[dict, int | None]], fields, settings: BenchmarkSettings,
              preset: Preset | None) -> tuple[list[_Rec], bool, tuple[str, ...]]:
    """A CSV/TSV file's items, from its rows by position: (records, has a header, column names)."""
    rows = [(line, [obj[str(i)] for i in range(len(obj))]) for obj, line in records]
    if not rows:
        return [], False, ()
    header, names = _csv_header(path, rows, fields, settings, preset)
    if header:
        start, cells = rows[0]
        if len(set(cells)) != len(cells):
            dup = next(c for c in cells if cells.count(c) > 1)
            raise BenchmarkError(f"{path}: line {start}: the header names column {dup!r} twice")
        names = tuple(cells)
        rows = rows[1:]
    recs = []
    for start, cells in rows:
        if len(cells) != len(names):
            raise BenchmarkError(f"{path}: line {start}: {len(cells)} columns, expected {len(names)}"
                                 + (" (as in the header)" if header else " (as in the first row)"))
        recs.append(_Rec(start, f"line {start}", dict(zip(names, cells)), start))
    return recs, header, names


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


def _read(path: str, fmt: Format, fields, settings: BenchmarkSettings, preset: Preset | None
          ) -> tuple[list[_Rec], bool | None, tuple[str, ...] | None, str | None]:
    """(items' records, CSV header, CSV column names, JSON array field) of the file."""
    records = _records(path, fmt)
    header, columns, nested_in = None, None, None
    if fmt.name in ("csv", "tsv"):
        recs, header, columns = _csv_recs(path, records, fields, settings, preset)
    elif fmt.name == "json":
        recs, nested_in = _json_recs(path, records)
    else:   # line-based formats number items by line; the others by row
        recs = [_Rec(line if line is not None else i, f"line {line}" if line is not None else f"row {i}", obj, line)
                for i, (obj, line) in enumerate(records)]
    if not recs:
        raise BenchmarkError(f"{path}: holds no records")
    return recs, header, columns, nested_in


def _lm_eval_entry(name: str, fields, settings: BenchmarkSettings, lm_eval: bool, tasks: str | None):
    """The lm-eval task to render: `lm-eval:TASK` (`lm_eval`), or a name that no built-in preset matches but an
    lm-eval task of the installed package (or of `tasks`) does, when no fields are given."""
    from .lmeval_tasks import installed_tasks_dir, task_config, tasks_dir

    if lm_eval:
        if fields or settings.fields or settings.preset:
            raise BenchmarkError(f"--benchmark lm-eval:{name}: the task names the text; give no fields or preset")
        return task_config(name, tasks_dir(tasks))
    if fields or settings.fields or settings.preset or find_preset(name) is not None:
        return None
    root = tasks if tasks is not None else installed_tasks_dir()
    if root is None:
        return None
    from .lmeval_tasks import find_task

    return task_config(name, tasks_dir(root)) if find_task(name, tasks_dir(root)) is not None else None


def load_benchmark(name: str, path: str, fields: tuple[str, ...] | None = None,
                   settings: BenchmarkSettings | None = None, lm_eval: bool = False,
                   lm_eval_tasks: str | None = None) -> Benchmark:
    """Read one benchmark file. `fields` from the command line win over the config's, which win over the
    preset implied by `name` (or named in the config), which wins over an lm-eval task of that name (`lm_eval`:
    the task is required; `lm_eval_tasks`: a folder of task YAMLs instead of the installed package's)."""
    settings = settings or BenchmarkSettings()
    path = os.fspath(path)
    fmt = detect_format(path)
    task = _lm_eval_entry(name, fields, settings, lm_eval, lm_eval_tasks)
    if task is not None:
        from .lmeval_tasks import LmEvalError

        try:
            return _load_lm_eval(name, path, fmt, task, settings)
        except LmEvalError as exc:
            if lm_eval:
                raise
            raise LmEvalError(f"{exc} (the name {name!r} is an lm-eval task; to match fields instead: "
                              f"{name}=PATH:FIELD)") from None
    preset = preset_by_name(settings.preset) if settings.preset else find_preset(name)
    recs, header, columns, nested_in = _read(path, fmt, fields or settings.fields, settings, preset)
    chosen, _origin = _choose_fields(name, path, recs[0], fields, settings, preset)
    id_field = settings.id_field
    if id_field is None:
        candidates = (preset.id_fields if preset is not None else ()) + GENERIC_ID_FIELDS
        id_field = next((f for f in candidates if _has(recs[0].obj, f)), None)
    texts = []
    for rec in recs:
        try:
            texts.append(item_text(rec.obj, chosen))
        except FieldError as exc:
            raise BenchmarkError(f"{path}: {rec.where}: {exc}") from None
    ids = _ids(recs, id_field, path)
    bench = Benchmark(name=name, path=path, format=fmt.name, compressed=_compressed(path),
                      preset=preset.name if preset is not None and _origin.startswith("preset") else None,
                      fields=chosen, id_field=id_field, ids=ids, lines=[r.line for r in recs], texts=texts,
                      records=[r.obj for r in recs], csv_header=header, csv_columns=columns, nested_in=nested_in)
    from .answers import answers_of
    read = answers_of(preset.name if preset is not None else None, bench.records)
    if read is not None:
        bench.answers, bench.choices = read
    _dup_warning(bench)
    return bench


def _ids(recs: list[_Rec], id_field: str | None, path: str) -> list[str]:
    if id_field is None:
        return [str(rec.number) for rec in recs]
    ids = []
    for rec in recs:
        try:
            v = resolve_field(rec.obj, id_field)
        except FieldError as exc:
            raise BenchmarkError(f"{path}: {rec.where}: id {exc}") from None
        if v is None or isinstance(v, (dict, list)) or v == "":
            what = "empty" if v == "" else kind_name(v)
            raise BenchmarkError(f"{path}: {rec.where}: id field {id_field!r} is {what}")
        ids.append(value_text(v, id_field))
    return ids


def _dup_warning(bench: Benchmark) -> None:
    seen: dict[str, int] = {}
    for i in bench.ids:
        seen[i] = seen.get(i, 0) + 1
    dups = [i for i, c in seen.items() if c > 1]
    if dups:
        bench.warnings.append(f"{len(dups)} item ids occur more than once (first: {dups[0]!r}); items are told "
                              "apart by their index")


def _load_lm_eval(name: str, path: str, fmt: Format, task, settings: BenchmarkSettings) -> Benchmark:
    """A benchmark whose item input, answer and choices are the lm-eval task's renderings of each record."""
    from .lmeval_render import render_task

    recs, header, columns, nested_in = _read(path, fmt, None, settings, None)
    texts, answers, choices, notes = render_task(task, [r.obj for r in recs], [f"{path}: {r.where}" for r in recs])
    id_field = settings.id_field or next((f for f in GENERIC_ID_FIELDS if _has(recs[0].obj, f)), None)
    bench = Benchmark(name=name, path=path, format=fmt.name, compressed=_compressed(path),
                      preset=f"lm-eval:{task.name}", fields=(), id_field=id_field, ids=_ids(recs, id_field, path),
                      lines=[r.line for r in recs], texts=texts, records=[r.obj for r in recs], csv_header=header,
                      csv_columns=columns, nested_in=nested_in, warnings=notes, answers=answers, choices=choices)
    _dup_warning(bench)
    return bench


def _compressed(path: str) -> bool:
    return path.lower().endswith(".gz") or is_gzip(path)


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
    """The kept items' records as JSON lines (CSV: column -> cell text)."""
    return [(json.dumps(bench.records[i], ensure_ascii=False, default=_json_default) + "\n").encode("utf-8")
            for i in range(len(bench)) if keep[i]]


def write_clean(bench: Benchmark, keep, folder: str, stem: str) -> list[str]:
    """Write the uncontaminated items' original records; returns the file names written.

    `<stem>` plus the format's own suffix (`clean.jsonl`, `clean.csv`, `clean.parquet`, ...), written by the
    format's writer: the kept records byte for byte as in the original (plain, not gzipped), so the subset loads
    with the same loader; and, for formats other than JSONL, `<stem>.jsonl` with the records as JSON lines. Items
    nested in one object's array ({"data": [...]}) get the JSON lines only."""
    fmt = BY_NAME[bench.format]
    keep = np.asarray(keep, bool)
    files = []
    if fmt.name != "jsonl":
        write_bytes(join(folder, f"{stem}.jsonl"), clean_lines(bench, keep))
        files.append(f"{stem}.jsonl")
    if bench.nested_in is None:
        own = f"{stem}{fmt.suffixes[0]}"
        fmt.write(bench.path, join(folder, own), np.flatnonzero(~keep), len(bench),
                  WriteOptions(compress=False, header=bench.csv_header))
        files.append(own)
    return files


__all__ = ["Benchmark", "BenchmarkError", "load_benchmark", "parse_benchmark_arg", "detect_format",
           "resolve_field", "item_text", "write_clean", "clean_lines", "NAME_RE"]
