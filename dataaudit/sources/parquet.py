"""Parquet shards: streamed batch by batch, provenance columns built vectorized.

The reader must stay within 0.8x of pyarrow.parquet.read_table on the same file, so there is no per-row
Python, and row groups are read through the dataset scanner with a read-ahead of one batch:
ParquetFile.iter_batches decodes row groups strictly one after the other, which on a multi-row-group file
is about half read_table's speed; one batch of read-ahead lets two decode in parallel (with two Arrow threads or
more), memory stays bounded.
The batches are decoded into Arrow's jemalloc pool where pyarrow has one: the default pool (mimalloc) gave a
batch's pages back to the system and faulted them in again for the next (on 200 MB of text: 0.25 s of system
time, ~7% of the audit).

Integrity: with `decode_all` every column of every row group is decoded (what a training loader reads), and
only the requested columns are kept (the others' buffers are dropped as soon as a batch is decoded). When the
read fails, the read-ahead may have lost batches decoded before the failure: the shard is then read again row
group by row group from the first row not yet yielded, so the records before the broken row group are all
counted, and the broken row group's columns are decoded one by one to name the one that fails:
`parquet: column 'ts' (row group 1): <pyarrow's message>`. That costs nothing until a read fails, and is bounded
when one does (`RECOVERY_SECONDS`): a file whose every decode is slow to fail is not retried once per row group and
column; past the budget no further read starts, and the error says what was not tried.

Hostile files: the footer is checked before any data is read (a row group declaring rows its bytes cannot hold is an
unreadable shard, never an allocation of the declared size); every string yielded is checked to be UTF-8 (one
vectorized pass per string column; a record holding invalid bytes is unreadable, its data columns null); a file of
tiny row groups is read in full batches across them.
"""
from __future__ import annotations

import functools
import threading
import time
from typing import Any, Callable, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from dataaudit.io import arrow_filesystem, arrow_source
from dataaudit.runs import runs_within

from .base import ERROR, KEY, LINE, PROVENANCE_COLUMNS, ROW, WARNING, ShardReadError
from .batch import one_line
from .utf8 import holds_strings, invalid_rows

# Everything pyarrow raises for a bad file: ArrowException covers ArrowInvalid/NotImplemented/..., OSError
# covers missing files and I/O errors (ArrowIOError is OSError).
_ARROW_ERRORS = (pa.ArrowException, OSError)

_READ_ROWS = 65536  # pyarrow has a fixed cost per batch: decode big batches, slice them (zero-copy) to batch_rows
# A data page header is at least 8 bytes and counts its values in an int32: a column chunk of B bytes holds at most
# ceil(B / 8) * (2**31 - 1) values, and every row has at least one value in every leaf column. A row group declaring
# more rows than that is a forged footer (Arrow would allocate for the declared rows, or loop over them for ever).
_PAGE_HEADER_MIN_BYTES = 8
# Below this many rows per row group on average, batches are filled across row groups (ParquetFile.iter_batches,
# one row group after the other) rather than cut one per row group by the scanner: a batch costs each check about a
# millisecond whatever its size.
_SMALL_ROW_GROUP = 64
_PAGE_MAX_VALUES = (1 << 31) - 1
# After a failed read, the recovery (row groups re-read alone, then a broken row group's columns decoded one by one
# to name the bad one) starts no new read after this many seconds: each try of a hostile file may itself take
# seconds to fail, and there may be thousands of row groups and columns.
RECOVERY_SECONDS = 10.0
# The compressed bytes of row groups handed to the scanner at once: it pre-buffers all of them (see _windowed).
PREBUFFER_BYTES = 64 * 2**20
# A look at a file's first rows reads its column chunks this much at a time, not pre-buffered whole: the first row
# group of a 31 MB object in a store was a 15.6 MB GET for 256 rows, 1.1 MB so.
PEEK_BUFFER_BYTES = 1 << 20
_PROVENANCE_FIELDS = [pa.field(KEY, pa.string()), pa.field(ROW, pa.int64()), pa.field(LINE, pa.int64()),
                      pa.field(ERROR, pa.string()), pa.field(WARNING, pa.string())]

# "0", "1", ... are the same for every shard; casting ints to strings costs about as much as decoding a narrow
# file, so the first rows' keys are made once per process and sliced. About 10 bytes a row, capped.
_KEY_CACHE_MAX = 1 << 21
_key_cache = pa.nulls(0, pa.string())   # not pa.array([]): that imports pandas when it is installed
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
        fs, where = arrow_source(path)
        return pq.read_schema(where, filesystem=fs)
    except _ARROW_ERRORS as e:
        raise _error(e) from e


def _check_footer(metadata) -> None:
    """ShardReadError when the footer declares rows its row groups cannot hold (checked before any data is read:
    one look at each row group's first column chunk)."""
    total = 0
    for rg in range(metadata.num_row_groups):
        group = metadata.row_group(rg)
        rows = group.num_rows
        total += rows
        if rows < 0:
            raise ShardReadError(f"parquet: row group {rg} declares {rows} rows")
        if not rows:
            continue
        if group.num_columns == 0:
            raise ShardReadError(f"parquet: row group {rg} declares {rows} rows but holds no column")
        size = group.column(0).total_compressed_size
        if rows > -(-max(size, 0) // _PAGE_HEADER_MIN_BYTES) * _PAGE_MAX_VALUES:
            raise ShardReadError(f"parquet: row group {rg} declares {rows} rows, more than its {size} bytes of "
                                 f"column {group.column(0).path_in_schema!r} can hold")
    if total != metadata.num_rows:
        raise ShardReadError(f"parquet: the footer declares {metadata.num_rows} rows, its row groups {total}")


def _with_provenance(batch: pa.RecordBatch, start: int, schema: pa.Schema) -> pa.RecordBatch:
    n = batch.num_rows
    rows = pa.array(np.arange(start, start + n, dtype=np.int64))
    nulls = pa.nulls(n, pa.string())
    columns, errors = _valid_utf8(batch)
    return pa.RecordBatch.from_arrays(columns + [_keys(start, n), rows, pa.nulls(n, pa.int64()), errors, nulls],
                                      schema=schema)


def _with_rows(batch: pa.RecordBatch, rows: np.ndarray, schema: pa.Schema) -> pa.RecordBatch:
    """`_with_provenance` for records that are not consecutive (a sample's): their numbers given."""
    n = batch.num_rows
    columns, errors = _valid_utf8(batch)
    keys = pc.cast(pa.array(rows), pa.string())
    return pa.RecordBatch.from_arrays(columns + [keys, pa.array(rows), pa.nulls(n, pa.int64()), errors,
                                                 pa.nulls(n, pa.string())], schema=schema)


def _valid_utf8(batch: pa.RecordBatch) -> tuple[list[pa.Array], pa.Array]:
    """The batch's columns, and its __error__ column naming each record holding a string that is not valid UTF-8
    (all null when every string is valid: one vectorized check per string column). Such a record is unreadable
    like any other: its data columns are null, so no later code decodes the bytes."""
    columns = batch.columns
    messages: dict[int, list[str]] = {}
    for field, col in zip(batch.schema, columns):
        if holds_strings(field.type):
            for i in invalid_rows(col).tolist():
                messages.setdefault(i, []).append(f"column {field.name!r}: invalid UTF-8")
    if not messages:
        return columns, pa.nulls(batch.num_rows, pa.string())
    mask = np.zeros(batch.num_rows, bool)
    mask[list(messages)] = True
    unread = pa.array(mask)
    columns = [pc.if_else(unread, pa.scalar(None, col.type), col) for col in columns]
    errors = [None] * batch.num_rows
    for i, m in messages.items():
        errors[i] = "; ".join(m)
    return columns, pa.array(errors, pa.string())


@functools.cache
def _decode_pool() -> pa.MemoryPool:
    """jemalloc where pyarrow is built with it, else the default pool (a pool passed per read: the process's
    default pool stays as it is)."""
    try:
        return pa.jemalloc_memory_pool()
    except NotImplementedError:
        return pa.default_memory_pool()


def _readahead() -> int:
    """One batch of read-ahead where Arrow has two or more threads (two row groups decode at once); none with one
    thread, where it only made the first batch wait for the second's decoding too (60 -> 30 ms a shard). The
    reader decodes the next row group while the caller works on a batch either way."""
    return 1 if pa.cpu_count() > 1 else 0


@functools.cache
def _parquet_format():
    # pyarrow.dataset imports pandas when it is installed (~0.2 s): only a Parquet read pays for it
    import pyarrow.dataset as ds

    return ds.ParquetFileFormat()


def iter_parquet(path: str, columns: list[str] | None = None, batch_rows: int = 4096, *,
                 decode_all: bool = False, recovery_seconds: float = RECOVERY_SECONDS) -> Iterator[pa.RecordBatch]:
    """Batches of `columns` (None: every column) plus the provenance columns. `decode_all`: decode every column
    of the file all the same (a column that cannot be decoded fails the shard, naming it), yield only `columns`.
    `recovery_seconds`: after a failed read, no new read starts past this budget."""
    try:
        fs, where = arrow_filesystem(path)
        fragment = _parquet_format().make_fragment(where, fs)
        file_schema = fragment.physical_schema  # reads the footer: a bad file fails here
        metadata = fragment.metadata
        declared = metadata.num_rows
        # Data columns named like provenance columns would be ambiguous: the synthesized ones win.
        names = [n for n in file_schema.names if n not in PROVENANCE_COLUMNS]
        if columns is not None:
            wanted = set(columns)
            names = [n for n in names if n in wanted]  # unknown requested names are ignored
        decoded = list(file_schema.names) if decode_all else names
        keep = None if decoded == names else [decoded.index(n) for n in names]   # of each decoded batch
        _check_footer(metadata)
        batch_size = max(batch_rows, _READ_ROWS)
        if metadata.num_row_groups > 1 and declared < metadata.num_row_groups * _SMALL_ROW_GROUP:
            # Tiny row groups: the scanner yields at least one batch per row group (200k row groups of one row:
            # 200k batches, each paying every check's fixed cost: 308 s); this reader fills batches across them.
            batches = pq.ParquetFile(fs.open_input_file(where), metadata=metadata).iter_batches(
                batch_size=batch_size, columns=decoded)
        else:
            batches = _windowed(fragment, decoded, batch_size)
    except _ARROW_ERRORS as e:
        raise _error(e) from e
    row = 0
    schema = None

    def as_yielded(batch: pa.RecordBatch) -> list[pa.RecordBatch]:
        """A decoded batch as the caller gets it: the requested columns (the others are released here), the
        provenance columns, cut into batch_rows slices."""
        nonlocal row, schema
        if keep is not None:
            batch = batch.select(keep)
        if schema is None:
            schema = pa.schema(list(batch.schema) + _PROVENANCE_FIELDS, metadata=file_schema.metadata)
        batch = _with_provenance(batch, row, schema)
        row += batch.num_rows
        return [batch.slice(offset, batch_rows) for offset in range(0, batch.num_rows, batch_rows)]

    failed = None
    while True:
        try:
            batch = next(batches)
        except StopIteration:
            break
        except _ARROW_ERRORS as e:  # only pyarrow's decoding is wrapped, not our own code
            failed = e
            break
        pieces, batch = as_yielded(batch), None   # the decoded batch goes before the caller works on the pieces
        yield from pieces
        # ... and the pieces before the next read: they hold the whole decoded batch (a row group), which would
        # otherwise still be alive while the next window is pre-buffered and decoded (+40 MB at each window's start)
        pieces = None
    if failed is not None:
        # Read again from `row`, one row group at a time: the rows the read-ahead lost, then the named error.
        again = _row_group_by_row_group(fragment, decoded, row, batch_size, _Budget(recovery_seconds), failed)
        for pieces in map(as_yielded, again):
            yield from pieces
        raise _error(failed) from failed   # the read failed as a whole, yet every row group reads alone
    # A footer/data mismatch would otherwise lose rows without a trace.
    if row != declared:
        raise ShardReadError(f"parquet: read {row} rows but the footer declares {declared}")


def _windows(metadata, row_groups: list[int] | None = None, limit: int | None = None) -> Iterator[list[int]]:
    """The row groups (default: all), in runs of as many as fit in `limit` (default PREBUFFER_BYTES) compressed
    bytes (at least one each)."""
    groups = range(metadata.num_row_groups) if row_groups is None else row_groups
    sizes = ((rg, _compressed_size(metadata.row_group(rg))) for rg in groups)
    return runs_within(sizes, PREBUFFER_BYTES if limit is None else limit)


def _compressed_size(group) -> int:
    return sum(group.column(c).total_compressed_size for c in range(group.num_columns))


def _windowed(fragment, columns: list[str], batch_size: int,
              row_groups: list[int] | None = None) -> Iterator[pa.RecordBatch]:
    """The scanner's batches of the row groups (default: all), one window of them after the other: the scanner
    pre-buffers every row group it is given before decoding (a 528 MB file took 503 MB of buffers), so it gets a
    window at a time and memory stays bounded whatever the file's size; within a window two row groups decode in
    parallel."""
    windows = list(_windows(fragment.metadata, row_groups))
    for ids in windows:
        part = fragment if row_groups is None and len(windows) == 1 else fragment.subset(row_group_ids=ids)
        yield from part.to_batches(columns=columns, batch_size=batch_size, batch_readahead=_readahead(),
                                   fragment_readahead=0, memory_pool=_decode_pool())


def _scan(fragment, columns: list[str], batch_size: int) -> Iterator[pa.RecordBatch]:
    return fragment.to_batches(columns=columns, batch_size=batch_size, batch_readahead=0, fragment_readahead=0,
                               memory_pool=_decode_pool())


class _Budget:
    """The recovery's time, spent by its own reads only: the caller's work on the batches it is handed in between
    (an audit's checks, a first call compiling kernels) is not the file's slowness."""

    def __init__(self, seconds: float):
        self.left = seconds

    def over(self) -> bool:
        return self.left <= 0

    def read(self, step: Callable[[], Any]) -> Any:
        t = time.monotonic()
        try:
            return step()
        finally:
            self.left -= time.monotonic() - t


def _row_group_by_row_group(fragment, columns: list[str], start: int, batch_size: int, budget: _Budget,
                            failed: BaseException) -> Iterator[pa.RecordBatch]:
    """The batches from row `start` on, each row group read alone and in order (no read-ahead past a broken one);
    raises ShardReadError naming the column and row group of the first row group that fails, or, once the reads
    have spent the `budget`, the first failure (`failed`) and the rows not read again."""
    metadata = fragment.metadata
    first = 0
    for rg in range(metadata.num_row_groups):
        n = metadata.row_group(rg).num_rows
        if first + n <= start:
            first += n
            continue
        if budget.over():
            raise ShardReadError(f"parquet: {one_line(failed) or type(failed).__name__} (rows {max(start, first)} "
                                 f"on not read: the recovery stopped at row group {rg} after its time budget)")
        skip = max(start - first, 0)
        batches = None
        while True:
            try:
                if batches is None:   # a scan may fail as it starts, or at any batch
                    batches = budget.read(lambda: iter(_scan(fragment.subset(row_group_ids=[rg]), columns,
                                                             batch_size)))
                batch = budget.read(lambda: next(batches, None))
            except _ARROW_ERRORS as e:
                raise _named_error(fragment, rg, columns, batch_size, e, budget) from e
            if batch is None:
                break
            if skip >= batch.num_rows:
                skip -= batch.num_rows
                continue
            yield batch.slice(skip) if skip else batch
            skip = 0
        first += n


def _named_error(fragment, row_group: int, columns: list[str], batch_size: int, exc: BaseException,
                 budget: _Budget) -> ShardReadError:
    """The error of a row group that cannot be read, naming the first of its columns that fails to decode alone
    (and how many more do); the row group's own error when none does. Past the `budget` no column is tried further,
    and the message says how many were not."""
    bad = []
    untried = 0
    for i, name in enumerate(columns):
        if budget.over():
            untried = len(columns) - i
            break
        try:
            budget.read(lambda: [None for _ in _scan(fragment.subset(row_group_ids=[row_group]), [name], batch_size)])
        except _ARROW_ERRORS as e:
            bad.append((name, e))
    left = f" ({untried} column(s) not tried: the recovery stopped after its time budget)" if untried else ""
    if not bad:
        return ShardReadError(f"parquet: row group {row_group}: {one_line(exc) or type(exc).__name__}{left}")
    name, e = bad[0]
    more = (f" (and {len(bad) - 1} more undecodable column(s) in this row group: "
            f"{', '.join(repr(n) for n, _ in bad[1:])})") if len(bad) > 1 else ""
    return ShardReadError(f"parquet: column {name!r} (row group {row_group}): "
                          f"{one_line(e) or type(e).__name__}{more}{left}")


def _footer(path: str):
    """The file's footer, checked (ShardReadError for a bad or forged one)."""
    try:
        fs, where = arrow_source(path)
        metadata = pq.read_metadata(where, filesystem=fs)
    except _ARROW_ERRORS as e:
        raise _error(e) from e
    _check_footer(metadata)
    return metadata


def parquet_row_group_sizes(path: str) -> list[int]:
    """The rows of each row group, from the footer only (ShardReadError for a bad or forged footer)."""
    metadata = _footer(path)
    return [metadata.row_group(rg).num_rows for rg in range(metadata.num_row_groups)]


def parquet_layout(path: str) -> list[int] | None:
    """The compressed bytes of each row group, from the footer only; None for a file of tiny row groups (read in
    batches across them, never by row group). ShardReadError for a bad or forged footer."""
    metadata = _footer(path)
    if metadata.num_row_groups > 1 and metadata.num_rows < metadata.num_row_groups * _SMALL_ROW_GROUP:
        return None
    return [_compressed_size(metadata.row_group(rg)) for rg in range(metadata.num_row_groups)]


def parquet_first_rows(path: str, rows: int, columns: Callable[[pa.Schema], list[str] | None]) -> pa.RecordBatch:
    """Up to `rows` first records of the file (a look at what its columns hold: only the first pages are decoded),
    of the columns `columns(schema)` names (None: all), with the provenance columns."""
    try:
        fs, where = arrow_source(path)
        pf = pq.ParquetFile(where, filesystem=fs, pre_buffer=False, buffer_size=PEEK_BUFFER_BYTES)
        _check_footer(pf.metadata)
        wanted = columns(pf.schema_arrow)
        names = [n for n in pf.schema_arrow.names if n not in PROVENANCE_COLUMNS and (wanted is None or n in wanted)]
        first = next(pf.iter_batches(batch_size=rows, row_groups=[0], columns=names), None) \
            if pf.metadata.num_row_groups else None
    except _ARROW_ERRORS as e:
        raise _error(e) from e
    if first is None:
        first = pa.RecordBatch.from_pylist([], schema=pa.schema([pf.schema_arrow.field(n) for n in names]))
    schema = pa.schema(list(first.schema) + _PROVENANCE_FIELDS, metadata=pf.schema_arrow.metadata)
    return _with_provenance(first, 0, schema)


def iter_parquet_row_groups(path: str, row_groups: list[int], columns: list[str] | None = None,
                            batch_rows: int = 4096, *, decode_all: bool = False,
                            rows_kept=None) -> Iterator[pa.RecordBatch]:
    """The batches of some row groups only (a sample's), with the provenance columns of their place in the file:
    `__row__` is the record's number in the whole shard. The others are not read. `rows_kept(rows)`: a bool per
    record number, the records to yield (the others are dropped before their provenance and UTF-8 check are made).
    A row group that cannot be read is a ShardReadError naming it and its column, as `iter_parquet` says it."""
    try:
        fs, where = arrow_filesystem(path)
        fragment = _parquet_format().make_fragment(where, fs)
        file_schema = fragment.physical_schema
        metadata = fragment.metadata
        _check_footer(metadata)
    except _ARROW_ERRORS as e:
        raise _error(e) from e
    names = [n for n in file_schema.names if n not in PROVENANCE_COLUMNS]
    if columns is not None:
        wanted = set(columns)
        names = [n for n in names if n in wanted]
    decoded = list(file_schema.names) if decode_all else names
    keep = None if decoded == names else [decoded.index(n) for n in names]
    starts = np.concatenate([[0], np.cumsum([metadata.row_group(rg).num_rows
                                             for rg in range(metadata.num_row_groups)])]).tolist()
    schema = None
    batch_size = max(batch_rows, _READ_ROWS)
    sizes = [metadata.row_group(rg).num_rows for rg in row_groups]
    # scans of the chosen row groups, in file order and in windows, with the reader's read-ahead (two decode at
    # once), not one scan per row group: a sample of 1 GB hits most row groups. A batch never spans two row groups.
    groups = [(rg, n) for rg, n in zip(row_groups, sizes) if n]
    batches = _windowed(fragment, decoded, batch_size, [rg for rg, _ in groups])
    at, row, left = 0, (starts[groups[0][0]] if groups else 0), (groups[0][1] if groups else 0)
    while True:
        try:
            batch = next(batches, None)
        except _ARROW_ERRORS as e:
            rg = groups[at][0]
            raise _named_error(fragment, rg, decoded, batch_size, e, _Budget(RECOVERY_SECONDS)) from e
        if batch is None:
            break
        if keep is not None:
            batch = batch.select(keep)
        if schema is None:
            schema = pa.schema(list(batch.schema) + _PROVENANCE_FIELDS, metadata=file_schema.metadata)
        n = batch.num_rows
        if n > left:     # the scanner's batches never span row groups; if one did, its numbers would be wrong
            raise ShardReadError(f"parquet: a batch of {n} rows crosses row group {groups[at][0]} ({left} rows left)")
        if rows_kept is None:
            batch = _with_provenance(batch, row, schema)
        else:
            numbers = np.arange(row, row + n, dtype=np.int64)
            wanted = rows_kept(numbers)
            batch = _with_rows(batch.filter(pa.array(wanted)), numbers[wanted], schema)
        row, left = row + n, left - n
        if left <= 0 and at + 1 < len(groups):    # the next batch is the next chosen row group's first
            at += 1
            row, left = starts[groups[at][0]], groups[at][1]
        yield from (batch.slice(o, batch_rows) for o in range(0, batch.num_rows, batch_rows))
    if groups and (left > 0 or at + 1 < len(groups)):    # a footer/data mismatch would lose rows without a trace
        rg, declared = groups[at]
        raise ShardReadError(f"parquet: row group {rg} gave {declared - left} rows but the footer declares {declared}")
