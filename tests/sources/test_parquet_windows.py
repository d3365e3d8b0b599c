"""A Parquet shard is scanned a window of row groups at a time: the scanner pre-buffers every row group it is
given, so a whole large file would sit in memory. The windows change nothing in what is read."""
from __future__ import annotations

import gc

import pyarrow as pa
import pytest
import pyarrow.parquet as pq

from dataaudit.sources import parquet
from dataaudit.sources.parquet import _windows, iter_parquet


def _shard(path, groups=5, rows=30):
    table = pa.table({"id": list(range(groups * rows)), "text": [f"record {i:05d} " * 20 for i in range(groups * rows)]})
    pq.write_table(table, path, row_group_size=rows, compression="none", use_dictionary=False)  # equal sizes
    return table


def _sizes(path):
    md = pq.read_metadata(path)
    return [sum(md.row_group(g).column(c).total_compressed_size for c in range(md.num_columns))
            for g in range(md.num_row_groups)]


def test_windows_hold_as_many_row_groups_as_fit(tmp_path):
    path = tmp_path / "s.parquet"
    _shard(path)
    md = pq.read_metadata(path)
    sizes = _sizes(path)
    assert list(_windows(md, None, 1)) == [[0], [1], [2], [3], [4]]   # one row group always fits
    two = sizes[0] + sizes[1]
    assert max(sizes) <= two < sum(sizes[:3])
    assert list(_windows(md, None, two)) == [[0, 1], [2, 3], [4]]
    assert list(_windows(md, None, sum(sizes))) == [[0, 1, 2, 3, 4]]


def test_windowed_read_yields_every_row_with_its_number(tmp_path, monkeypatch):
    path = tmp_path / "s.parquet"
    table = _shard(path)
    monkeypatch.setattr(parquet, "PREBUFFER_BYTES", 1)   # a window per row group
    batches = list(iter_parquet(str(path), ["id", "text"], batch_rows=7))
    got = pa.Table.from_batches(batches)
    assert got.column("id").to_pylist() == list(range(150))
    assert got.column("__row__").to_pylist() == list(range(150))
    assert got.column("text").equals(table.column("text"))
    assert max(b.num_rows for b in batches) == 7


def test_windows_of_chosen_row_groups(tmp_path):
    path = tmp_path / "s.parquet"
    _shard(path)
    md = pq.read_metadata(path)
    two = sum(_sizes(path)[:2])
    assert list(_windows(md, [0, 2, 3, 4], two)) == [[0, 2], [3, 4]]
    assert list(_windows(md, [], two)) == []


def test_sampled_row_groups_read_in_windows(tmp_path, monkeypatch):
    from dataaudit.sources.parquet import iter_parquet_row_groups

    path = tmp_path / "s.parquet"
    _shard(path)
    monkeypatch.setattr(parquet, "PREBUFFER_BYTES", 1)
    got = pa.Table.from_batches(list(iter_parquet_row_groups(str(path), [1, 3], ["id"], batch_rows=16)))
    want = list(range(30, 60)) + list(range(90, 120))
    assert got.column("id").to_pylist() == want
    assert got.column("__row__").to_pylist() == want


_OTHERS = 4096   # bytes of the pool other users may take or give back during the audit


def test_a_window_starts_with_the_last_windows_batches_released(tmp_path, monkeypatch):
    """The audit's batches are slices of a decoded row group, and a slice keeps the whole of it alive: neither the
    reader (its pieces) nor the shard loop (its last batch) may hold one while the next window is pre-buffered and
    decoded, or each window's start holds two row groups' worth of memory. Measured in the decode pool (jemalloc,
    which only the reader's decoding uses during the audit) as each window starts."""
    from dataaudit.audit import shard
    from dataaudit.audit.shard import audit_shard
    from dataaudit.config import load_config

    try:
        pool = pa.jemalloc_memory_pool()
    except NotImplementedError:
        pytest.skip("pyarrow is built without jemalloc: the decode pool is the process's default pool")
    path = tmp_path / "s.parquet"
    _shard(path, groups=4, rows=2000)
    monkeypatch.setattr(parquet, "PREBUFFER_BYTES", 1)   # a window per row group
    held = []
    readahead = parquet._readahead
    monkeypatch.setattr(parquet, "_readahead", lambda: held.append(pool.bytes_allocated()) or readahead())
    gc.collect()   # no earlier test's garbage freed from the pool during the audit
    monkeypatch.setattr(shard, "JOIN_BYTES", 1)          # no small row groups joined (they are held on purpose)
    result, _ = audit_shard(str(path), load_config(None))
    assert result.records == 8000 and len(held) == 4
    # what the pool held before the first window (other users of the process-wide pool) is the baseline; the
    # garbage of an earlier test in the same process may free a few bytes of it meanwhile (128 seen), far from a
    # row group's worth
    assert [round((h - held[0]) / _OTHERS) for h in held] == [0, 0, 0, 0]
    # joined (the default), the row groups held wait for the next ones within the bound, never more
    held.clear()
    monkeypatch.setattr(shard, "JOIN_BYTES", 2 << 20)
    gc.collect()
    result, _ = audit_shard(str(path), load_config(None))
    group = held[2] - held[1]
    assert result.records == 8000 and group > 0
    assert group > 100 * _OTHERS and 2 * group < shard.JOIN_BYTES
    assert [round((h - held[0] - k * group) / _OTHERS) for k, h in zip((0, 0, 1, 2), held)] == [0, 0, 0, 0]
