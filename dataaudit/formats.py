"""The one format table: every shard format dataaudit reads and writes is one row of FORMATS, and every command
finds a file's reader, schema and writer here (the audit's batches, `clean`'s rewrite, benchmark loading, the
messages that list what is supported).

A format is one class (the shape of litdata's serializers): its name, its file suffixes, `read` (the shard as
Arrow batches with the provenance columns, `dataaudit.sources`), `schema_peek` (what is known before reading: a
Parquet footer; None elsewhere), `records` (for formats with one parsed object per record: the reader's records
before they become Arrow, what benchmark loading takes) and `write` (the shard without some records, byte for byte
in its own layout, `dataaudit.writers`, imported when a shard is written: a command that only reads loads no writer). A new
format is one reader, one writer, one class and one row.
"""
from __future__ import annotations

import os
from typing import Iterator

import numpy as np
import pyarrow as pa

from dataaudit.io import is_file, special
from dataaudit.sources.base import READ_ERRORS, ShardReadError
from dataaudit.sources.delimited import delimited_records, iter_delimited
from dataaudit.sources.json_array import holds_json_array, iter_json_array, json_records
from dataaudit.sources.jsonl import iter_jsonl, jsonl_records
from dataaudit.sources.parquet import iter_parquet, read_parquet_schema
from dataaudit.sources.plain_text import iter_text, text_records
from dataaudit.sources.record_stream import Record
from dataaudit.sources.webdataset_tar import MAX_MEMBER_BYTES, iter_webdataset
from dataaudit.writers.base import WriteOptions


class Format:
    """One shard format. `read` takes the record size limit as `limit` (bytes one record may hold: a tar
    member, a JSON line or element) and `decode_all` (Parquet: decode every column, yield only `columns`)."""

    name = ""
    title = ""                 # what a message calls it
    suffixes: tuple[str, ...] = ()
    shown = ""                 # the suffixes as a message lists them
    embeds_media = False       # media inside the shard (tar members), not referenced by path beside it

    def read(self, path: str, columns: list[str] | None, batch_rows: int, limit: int,
             decode_all: bool, text_unit: str) -> Iterator[pa.RecordBatch]:
        raise NotImplementedError

    def schema_peek(self, path: str) -> pa.Schema | None:
        """The Arrow schema known before reading (ShardReadError when it cannot be read); None for formats whose
        records carry their own fields."""
        return None

    def records(self, path: str, limit: int, text_unit: str = "line") -> Iterator[Record] | None:
        """The parsed records before they become Arrow, for formats that parse one object per record (None for
        the others: their Arrow batches are what they hold)."""
        return None

    def write(self, src: str, dst: str, drop: np.ndarray, expected: int, options: WriteOptions) -> dict:
        raise NotImplementedError

    def walked(self, path: str) -> bool:
        """Whether a folder walk takes this file as a shard of this format."""
        return True


class Parquet(Format):
    name, title, suffixes, shown = "parquet", "Parquet", (".parquet", ".pq"), ".parquet/.pq"

    def read(self, path, columns, batch_rows, limit, decode_all, text_unit):
        return iter_parquet(path, columns, batch_rows, decode_all=decode_all)

    def schema_peek(self, path):
        return read_parquet_schema(path)

    def write(self, src, dst, drop, expected, options):
        from dataaudit.writers.parquet import rewrite_parquet   # pyarrow.dataset: only a Parquet write pays for it

        return rewrite_parquet(src, dst, drop, expected, options)


class Arrow(Format):
    """Arrow IPC, stream or file: Hugging Face `datasets`' save_to_disk folders (data-*.arrow beside
    dataset_info.json and state.json, which a walk leaves out) and cache files; read memory-mapped like Parquet."""

    name, title, suffixes, shown = "arrow", "Arrow IPC", (".arrow",), ".arrow"

    def read(self, path, columns, batch_rows, limit, decode_all, text_unit):
        from dataaudit.sources.arrow_ipc import iter_arrow

        return iter_arrow(path, columns, batch_rows)

    def write(self, src, dst, drop, expected, options):
        from dataaudit.writers.arrow_ipc import rewrite_arrow

        return rewrite_arrow(src, dst, drop, expected, options)


class WebDataset(Format):
    name, title, suffixes, shown = "webdataset", "WebDataset", (".tar", ".tar.gz", ".tgz"), ".tar/.tar.gz/.tgz"
    embeds_media = True

    def read(self, path, columns, batch_rows, limit, decode_all, text_unit):
        return iter_webdataset(path, columns, batch_rows, max_member_bytes=limit)

    def write(self, src, dst, drop, expected, options):
        from dataaudit.writers.tar import rewrite_tar

        return rewrite_tar(src, dst, drop, expected, options)


class Jsonl(Format):
    name, title = "jsonl", "JSONL"
    suffixes, shown = (".jsonl", ".jsonl.gz", ".ndjson", ".ndjson.gz"), ".jsonl/.jsonl.gz/.ndjson"

    def read(self, path, columns, batch_rows, limit, decode_all, text_unit):
        return iter_jsonl(path, columns, batch_rows, max_line_bytes=limit)

    def records(self, path, limit, text_unit="line"):
        return jsonl_records(path, limit)

    def write(self, src, dst, drop, expected, options):
        from dataaudit.writers.jsonl import rewrite_jsonl

        return rewrite_jsonl(src, dst, drop, expected, options)


class JsonArray(Format):
    name, title, suffixes, shown = "json", "JSON-array", (".json", ".json.gz"), ".json/.json.gz"

    def read(self, path, columns, batch_rows, limit, decode_all, text_unit):
        return iter_json_array(path, columns, batch_rows, max_record_bytes=limit)

    def records(self, path, limit, text_unit="line"):
        return json_records(path, limit)

    def write(self, src, dst, drop, expected, options):
        from dataaudit.writers.json_array import rewrite_json_array

        return rewrite_json_array(src, dst, drop, expected, options)

    def walked(self, path):
        # the metadata objects beside shards (manifest.json, dataset_info.json) are no data; named, any is read
        return holds_json_array(path)


class Text(Format):
    name, title, suffixes, shown = "text", "plain text", (".txt", ".txt.gz", ".text"), ".txt/.txt.gz/.text"

    def read(self, path, columns, batch_rows, limit, decode_all, text_unit):
        return iter_text(path, columns, batch_rows, text_unit, limit)

    def records(self, path, limit, text_unit="line"):
        return text_records(path, text_unit, limit)

    def write(self, src, dst, drop, expected, options):
        from dataaudit.writers.plain_text import rewrite_text

        return rewrite_text(src, dst, drop, expected, options.text_unit, options)

    def walked(self, path):
        # a folder's notes (README.txt, LICENSE.txt, requirements.txt) are no data; named, any is read
        return os.path.basename(path).lower().split(".")[0] not in NOT_DATA_NAMES


class Csv(Format):
    name, title, suffixes, shown = "csv", "CSV", (".csv", ".csv.gz"), ".csv/.csv.gz"
    delimiter = ","

    def read(self, path, columns, batch_rows, limit, decode_all, text_unit):
        return iter_delimited(path, self.delimiter, columns, batch_rows, max_line_bytes=limit)

    def records(self, path, limit, text_unit="line"):
        # by position, the first row included: a benchmark file may or may not have a header row
        return delimited_records(path, self.delimiter, header=False, max_line_bytes=limit)

    def write(self, src, dst, drop, expected, options):
        from dataaudit.writers.delimited import rewrite_delimited

        return rewrite_delimited(src, dst, drop, expected, self.delimiter, options)


class Tsv(Csv):
    name, title, suffixes, shown = "tsv", "TSV", (".tsv", ".tsv.gz"), ".tsv/.tsv.gz"
    delimiter = "\t"


FORMATS: tuple[Format, ...] = (Parquet(), WebDataset(), Jsonl(), JsonArray(), Csv(), Tsv(), Text(), Arrow())
BY_NAME = {f.name: f for f in FORMATS}
# The notes a dataset folder holds beside its shards, by file name before the first dot: a walk skips them.
NOT_DATA_NAMES = frozenset({"readme", "license", "licence", "copying", "notice", "authors", "changelog", "changes",
                            "citation", "requirements", "version", "manifest"})
MAX_RECORD = MAX_MEMBER_BYTES      # the default limit of one record (tar member, JSON line or element)


def _listed(words: list[str]) -> str:
    return ", ".join(words[:-1]) + " or " + words[-1]


def supported() -> str:
    """The suffixes every format takes, as a message lists them."""
    return _listed([f.shown for f in FORMATS])


def titles() -> str:
    """Every format's name, as a message lists them ("Parquet, WebDataset, ... or JSON-array")."""
    return _listed([f.title for f in FORMATS])


def format_of(path: str | os.PathLike) -> Format:
    """The format of a shard, from its file name; ValueError for anything else."""
    name = os.fspath(path).lower()
    for fmt in FORMATS:
        if name.endswith(fmt.suffixes):
            return fmt
    raise ValueError(f"{os.fspath(path)}: unsupported shard format (expected {supported()})")


def read_schema(path: str) -> pa.Schema | None:
    """The schema known before reading (Parquet's footer); None for formats that have none. ShardReadError when
    the shard cannot be read or is not there."""
    schema = format_of(path).schema_peek(path)
    if schema is None and not is_file(path):
        what = special(path)
        raise ShardReadError(f"{os.fspath(path)}: " + (f"not a regular file ({what})" if what else "no such file"))
    return schema


def peek_schema(path: str, rows: int = 256) -> pa.Schema | None:
    """The shard's columns without reading it all: Parquet's footer, else the schema of its first `rows` records
    (JSONL, JSON and tar records carry their own fields). None when the shard cannot be read (the job reports it)."""
    try:
        schema = read_schema(path)
        if schema is not None:
            return schema
        batches = iter(iter_shard(path, batch_rows=rows))
        try:
            first = next(batches, None)
        finally:
            getattr(batches, "close", lambda: None)()   # release the file now, not at garbage collection
    except READ_ERRORS:
        return None
    return None if first is None else first.schema


def iter_shard(path: str, columns: list[str] | None = None, batch_rows: int = 4096, *,
               max_member_bytes: int = MAX_RECORD, decode_all: bool = False,
               text_unit: str = "line") -> Iterator[pa.RecordBatch]:
    """Record batches of one shard: data columns plus __key__, __row__, __line__, __error__, __warning__.

    `max_member_bytes`: the most one record may hold (a tar member, a JSON line or element). `decode_all`: Parquet
    decodes every column of every row group even when `columns` names fewer (a column that cannot be decoded breaks
    the shard, naming it), and yields `columns`. The other formats always read every field of every record (a
    record is parsed whole), so it changes nothing for them. `text_unit`: plain text, one record per "line" or
    per "paragraph" (`text_records.TEXT_UNITS`); the other formats have their own records.

    Raises ValueError at once for an unsupported file name; ShardReadError while iterating when the shard as
    a whole cannot be read further (batches already yielded stay valid).
    """
    if batch_rows < 1:
        raise ValueError(f"batch_rows must be >= 1, got {batch_rows}")
    return format_of(path).read(path, columns, batch_rows, max_member_bytes, decode_all, text_unit)
