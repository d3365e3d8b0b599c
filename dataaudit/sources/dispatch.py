"""Picks the reader for a shard from its file name."""
from __future__ import annotations

import os
from typing import Iterator

import pyarrow as pa

from .base import READ_ERRORS, ShardReadError
from .json_array import iter_json_array
from .jsonl import iter_jsonl
from .parquet import iter_parquet, read_parquet_schema
from .webdataset_tar import MAX_MEMBER_BYTES, iter_webdataset

_SUFFIXES = (
    (".parquet", "parquet"), (".pq", "parquet"),
    (".tar", "webdataset"), (".tar.gz", "webdataset"), (".tgz", "webdataset"),
    (".jsonl", "jsonl"), (".jsonl.gz", "jsonl"), (".ndjson", "jsonl"), (".ndjson.gz", "jsonl"),
    (".json", "json"), (".json.gz", "json"),
)


def shard_format(path: str) -> str:
    """'parquet', 'webdataset', 'jsonl' or 'json' (an array of records), from the file name; ValueError for
    anything else."""
    name = os.fspath(path).lower()
    for suffix, fmt in _SUFFIXES:
        if name.endswith(suffix):
            return fmt
    hint = ""
    if name.endswith((".txt", ".txt.gz", ".md", ".text")):
        # plain text has no records: where one record ends is the user's choice (a line, a paragraph, the file)
        hint = ("; plain text has no records: write one JSON object per record, e.g. "
                "python -c 'import json,sys; [print(json.dumps({\"text\": l.rstrip(\"\\n\")})) for l in sys.stdin]' "
                "< corpus.txt > corpus.jsonl")
    raise ValueError(f"{os.fspath(path)}: unsupported shard format "
                     f"(expected .parquet/.pq, .tar/.tar.gz/.tgz, .jsonl/.jsonl.gz/.ndjson or .json/.json.gz){hint}")


def read_schema(path: str) -> pa.Schema | None:
    """Parquet: the Arrow schema from the footer. Other formats have no schema before reading: None."""
    if shard_format(path) == "parquet":
        return read_parquet_schema(path)
    if not os.path.isfile(path):
        raise ShardReadError(f"{os.fspath(path)}: no such file")
    return None


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
               max_member_bytes: int = MAX_MEMBER_BYTES, decode_all: bool = False) -> Iterator[pa.RecordBatch]:
    """Record batches of one shard: data columns plus __key__, __row__, __line__, __error__, __warning__.

    `decode_all`: Parquet decodes every column of every row group even when `columns` names fewer (a column that
    cannot be decoded breaks the shard, naming it), and yields `columns`. The other formats always read every
    field of every record (a record is parsed whole), so it changes nothing for them.

    Raises ValueError at once for an unsupported file name; ShardReadError while iterating when the shard as
    a whole cannot be read further (batches already yielded stay valid).
    """
    if batch_rows < 1:
        raise ValueError(f"batch_rows must be >= 1, got {batch_rows}")
    fmt = shard_format(path)
    if fmt == "parquet":
        return iter_parquet(path, columns, batch_rows, decode_all=decode_all)
    if fmt == "webdataset":
        return iter_webdataset(path, columns, batch_rows, max_member_bytes=max_member_bytes)
    if fmt == "json":
        return iter_json_array(path, columns, batch_rows, max_record_bytes=max_member_bytes)
    return iter_jsonl(path, columns, batch_rows, max_line_bytes=max_member_bytes)
