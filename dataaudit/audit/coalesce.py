"""Small batches joined into larger ones before the checks read them.

Every check has a fixed cost per batch (its dispatch, its regexes compiled again by pyarrow: ~2 ms of RE2
compilation alone per batch of text), so a shard read in small batches pays it many times over: a Parquet shard
written with small row groups (a reader's batch never spans two), or a sample that keeps a few records of each
batch read. Batches of one schema that follow each other are joined up to a number of records and of bytes; a batch
already that large passes as it is, and so does a slice of a large batch (the tail of a large row group): holding a
slice holds all it was cut from, and the memory held stays under the bound in bytes.
"""
from __future__ import annotations

from typing import Iterator

import pyarrow as pa


def coalesced(batches: Iterator[pa.RecordBatch], max_rows: int, max_bytes: int | None = None, *,
              small_rows: int | None = None, first_alone: bool = False) -> Iterator[pa.RecordBatch]:
    """`batches` joined, in order, into batches of at most `max_rows` records and (`max_bytes`, when given) of
    about `max_bytes`: a batch is added while the buffers the held ones keep alive are under it. Only batches of
    fewer than `small_rows` records (default `max_rows`) are joined; a larger one passes as it is. `first_alone`: the
    first batch passes on its own (what the audit reads a shard's fields from: the same records however later
    batches are joined). When the reader fails, the batches held are yielded first, then its error raised: the
    records read before a break are checked and counted."""
    small_rows = max_rows if small_rows is None else small_rows
    held: list[pa.RecordBatch] = []
    rows = size = 0
    first = first_alone
    batches = iter(batches)
    while True:
        try:
            batch = next(batches, None)
        except Exception:
            if held:
                yield _joined(held)
            raise
        if batch is None:
            break
        kept = batch.get_total_buffer_size()           # (a slice's whole buffers)
        if first or batch.num_rows >= small_rows or (max_bytes is not None and kept >= max_bytes):
            first = False
            if held:
                yield _joined(held)
                held, rows, size = [], 0, 0
            yield batch
            batch = None         # not kept alive while the reader decodes the next one
            continue
        if held and (batch.schema != held[0].schema or rows + batch.num_rows > max_rows
                     or (max_bytes is not None and size >= max_bytes)):
            yield _joined(held)
            held, rows, size = [], 0, 0
        held.append(batch)
        rows += batch.num_rows
        size += kept
        batch = None
    if held:
        yield _joined(held)


def _joined(batches: list[pa.RecordBatch]) -> pa.RecordBatch:
    if len(batches) == 1:
        return batches[0]
    joined = pa.Table.from_batches(batches).combine_chunks().to_batches()
    return joined[0] if joined else batches[0]     # (batches of no records: one of them)
