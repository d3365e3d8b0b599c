"""Parquet shards: streamed batch by batch, provenance columns built vectorized.

The reader must stay within 0.8x of pyarrow.parquet.read_table on the same file, so there is no per-row
Python, and row groups are read through the dataset scanner with a read-ahead of one batch:
ParquetFile.iter_batches decodes row groups strictly one after the other, which on a multi-row-group file
is about half read_table's speed; one batch of read-ahead lets two decode in parallel, memory stays bounded.
"""
from __future__ import annotations

import os
import threading
from typing import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from .base import ERROR, KEY, PROVENANCE_COLUMNS, ROW, WARNING, ShardReadError
from .batch import one_line

# Everything pyarrow raises for a bad file: ArrowException covers ArrowInvalid/NotImplemented/..., OSError
# covers missing files and I/O errors (ArrowIOError is OSError).
_ARROW_ERRORS = (pa.ArrowException, OSError)

_READ_ROWS = 65536  # pyarrow has a fixed cost per batch: decode big batches, slice them (zero-copy) to batch_rows
_FORMAT = ds.ParquetFileFormat()
_LOCAL = pafs.LocalFileSystem()
_PROVENANCE_FIELDS = [pa.field(KEY, pa.string()), pa.field(ROW, pa.int64()),
                      pa.field(ERROR, pa.string()), pa.field(WARNING, pa.string())]

# "0", "1", ... are the same for every shard; casting ints to strings costs about as much as decoding a narrow
# file, so the first rows' keys are made once per process and sliced. About 10 bytes a row, capped.
_KEY_CACHE_MAX = 1 << 21
_key_cache = pa.array([], pa.string())
_key_lock = threading.Lock()


def _keys(start: int, n: int) -> pa.Array:
    global _key_cache
    end = start + n
    if end > len(_key_cache) and end <= _KEY_CACHE_MAX:
        with _key_lock:
            if end > len(_key_cache):
                size = min(_KEY_CACHE_MAX, max(end, 2 * len(_key_cache), 4096))
                _key_cache = pc.cast(pa.array(np.arange(size, dtype=np.int64)), pa.string())
    if end <= len(_key_cache):
        return _key_cache.slice(start, n)
    return pc.cast(pa.array(np.arange(start, end, dtype=np.int64)), pa.string())


def _error(e: BaseException) -> ShardReadError:
    return ShardReadError(f"parquet: {one_line(e) or type(e).__name__}")


def read_parquet_schema(path: str) -> pa.Schema:
    """The Arrow schema from the footer only; no data pages are read."""
    try:
        return pq.read_schema(os.fspath(path))
    except _ARROW_ERRORS as e:
        raise _error(e) from e


def _with_provenance(batch: pa.RecordBatch, start: int, schema: pa.Schema) -> pa.RecordBatch:
    n = batch.num_rows
    rows = pa.array(np.arange(start, start + n, dtype=np.int64))
    nulls = pa.nulls(n, pa.string())
    return pa.RecordBatch.from_arrays(batch.columns + [_keys(start, n), rows, nulls, nulls], schema=schema)


def iter_parquet(path: str, columns: list[str] | None = None, batch_rows: int = 4096) -> Iterator[pa.RecordBatch]:
    try:
        fragment = _FORMAT.make_fragment(os.path.abspath(os.fspath(path)), _LOCAL)
        file_schema = fragment.physical_schema  # reads the footer: a bad file fails here
        declared = fragment.metadata.num_rows
        # Data columns named like provenance columns would be ambiguous: the synthesized ones win.
        names = [n for n in file_schema.names if n not in PROVENANCE_COLUMNS]
        if columns is not None:
            wanted = set(columns)
            names = [n for n in names if n in wanted]  # unknown requested names are ignored
        batches = fragment.to_batches(columns=names, batch_size=max(batch_rows, _READ_ROWS),
                                      batch_readahead=1, fragment_readahead=0)
    except _ARROW_ERRORS as e:
        raise _error(e) from e
    row = 0
    schema = None
    while True:
        try:
            batch = next(batches)
        except StopIteration:
            break
        except _ARROW_ERRORS as e:  # only pyarrow's decoding is wrapped, not our own code
            raise _error(e) from e
        if schema is None:
            schema = pa.schema(list(batch.schema) + _PROVENANCE_FIELDS, metadata=file_schema.metadata)
        batch = _with_provenance(batch, row, schema)
        row += batch.num_rows
        for offset in range(0, batch.num_rows, batch_rows):
            yield batch.slice(offset, batch_rows)
    # A footer/data mismatch would otherwise lose rows without a trace.
    if row != declared:
        raise ShardReadError(f"parquet: read {row} rows but the footer declares {declared}")
