"""Arrow IPC shards (`.arrow`): the files Hugging Face `datasets` writes (`save_to_disk` folders' data-*.arrow and
its cache files, both IPC streams) and IPC files (Feather v2). Read like Parquet: memory-mapped where local, batch by
batch, record number = row, the provenance columns built vectorized.

Hostile files: each batch is validated in full before use (offsets inside their buffers, UTF-8 of every string:
an IPC batch is not decoded, so nothing else checks what its buffers claim); a batch that fails makes the shard
unreadable from that record on, the records before it counted.
"""
from __future__ import annotations

from typing import Iterator

import pyarrow as pa

from dataaudit.io import open_arrow

from .base import PROVENANCE_COLUMNS, ShardReadError
from .batch import one_line
from .parquet import _PROVENANCE_FIELDS, _with_provenance

_ARROW_ERRORS = (pa.ArrowException, OSError)


def _error(e: BaseException) -> ShardReadError:
    return ShardReadError(f"arrow: {one_line(e) or type(e).__name__}")


def open_ipc(path: str) -> tuple[pa.Schema, Iterator[pa.RecordBatch]]:
    """The schema and batches of an IPC file, else of an IPC stream (what `datasets` writes)."""
    source = open_arrow(path)
    try:
        reader = pa.ipc.open_file(source)
        return reader.schema, (reader.get_batch(i) for i in range(reader.num_record_batches))
    except pa.ArrowInvalid:
        source.seek(0)
        stream = pa.ipc.open_stream(source)
        return stream.schema, iter(stream)


def iter_arrow(path: str, columns: list[str] | None = None, batch_rows: int = 4096) -> Iterator[pa.RecordBatch]:
    """Batches of `columns` (None: every column) plus the provenance columns, `batch_rows` records at most each."""
    try:
        file_schema, batches = open_ipc(path)
    except _ARROW_ERRORS as e:
        raise _error(e) from e
    names = [n for n in file_schema.names if n not in PROVENANCE_COLUMNS and (columns is None or n in set(columns))]
    keep = [file_schema.get_field_index(n) for n in names]
    schema = pa.schema([file_schema.field(i) for i in keep] + _PROVENANCE_FIELDS, metadata=file_schema.metadata)
    row = 0
    while True:
        try:
            batch = next(batches, None)
            if batch is None:
                break
            batch.validate(full=True)
        except _ARROW_ERRORS as e:
            raise _error(e) from e
        batch = _with_provenance(batch.select(keep), row, schema)
        row += batch.num_rows
        yield from (batch.slice(o, batch_rows) for o in range(0, batch.num_rows, batch_rows))


def arrow_is_stream(path: str) -> bool:
    """Whether the shard is an IPC stream (else an IPC file): its rewrite keeps the kind."""
    source = open_arrow(path)
    try:
        pa.ipc.open_file(source)
        return False
    except pa.ArrowInvalid:
        return True
