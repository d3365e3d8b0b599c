"""Small batches joined before the checks read them (`dataaudit.audit.coalesce`): a Parquet shard of small row groups
is audited in fewer, larger batches with exactly the outputs of one read in batches as its row groups give them; the
first batch stays as read (the fields are read from it); a reader's break loses none of the records read before it."""
from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dataaudit.audit import shard as shard_module
from dataaudit.audit.coalesce import coalesced
from dataaudit.audit.shard import AuditShard
from dataaudit.pipelines.audit import run_audit
from dataaudit.pipelines.engine import EngineOptions
from dataaudit.config import load_config


def _batch(start: int, n: int, width: int = 10) -> pa.RecordBatch:
    return pa.record_batch({"text": [str(i).rjust(width, "x") for i in range(start, start + n)]})


def _rows(batches) -> list[int]:
    return [b.num_rows for b in batches]


def test_small_batches_are_joined_up_to_the_rows_and_bytes_and_large_ones_pass():
    small = [_batch(i * 10, 10) for i in range(7)]
    # rows: at most 25 a batch; the first alone
    assert _rows(coalesced(iter(small), 25, first_alone=True)) == [10, 20, 20, 20]
    # bytes: a batch is added while the held ones are under the bound
    size = small[0].nbytes
    assert _rows(coalesced(iter(small), 1000, 2 * size)) == [20, 20, 20, 10]
    # a batch of `small_rows` or more passes as it is, between the joined ones
    mixed = small[:2] + [_batch(100, 40)] + small[2:4]
    out = list(coalesced(iter(mixed), 1000, small_rows=30))
    assert _rows(out) == [20, 40, 20] and out[1] is mixed[2]
    # the records, in order
    assert pa.Table.from_batches(out).column("text").to_pylist() == \
        pa.Table.from_batches(mixed).column("text").to_pylist()
    # another schema is never joined to the one before
    other = pa.record_batch({"text": ["a"], "n": [1]})
    assert _rows(coalesced(iter(small[:2] + [other] + small[2:3]), 1000)) == [20, 1, 10]


def test_a_reader_that_breaks_gets_the_batches_held_checked_first():
    def reader():
        yield _batch(0, 10)
        yield _batch(10, 10)
        raise OSError("row group 2: corrupt page")

    got = []
    with pytest.raises(OSError, match="corrupt page"):
        for b in coalesced(reader(), 1000):
            got.append(b)
    assert _rows(got) == [20]


def _shard(tmp_path, rows_per_group: int) -> str:
    texts = []
    for i in range(3000):
        texts.append("" if i % 211 == 5 else "loop " * 60 if i % 307 == 9 else
                     f"Turn {i}: the river passes the {i % 13}th mill before it reaches the sea.")
    path = tmp_path / f"rg{rows_per_group}.parquet"
    pq.write_table(pa.table({"text": texts, "id": [f"r{i}" for i in range(3000)]}), path,
                   row_group_size=rows_per_group)
    return str(path)


def test_a_shard_of_small_row_groups_is_audited_in_joined_batches_with_the_same_outputs(tmp_path, monkeypatch):
    config = load_config(None)
    path = _shard(tmp_path, 100)
    stage = AuditShard(config)
    sizes = _rows(stage._batches(stage.start(path), path))
    assert sizes[0] == 100 and len(sizes) < 30 and sum(sizes) == 3000    # 30 row groups read
    reports = {}
    for name, join_bytes in (("joined", shard_module.JOIN_BYTES), ("alone", 1)):   # 1: a batch per row group
        monkeypatch.setattr(shard_module, "JOIN_BYTES", join_bytes)
        reports[name] = run_audit([path], config, tmp_path / name, EngineOptions("local", workers=1))
        reports[name].pop("run")
    assert _rows(stage._batches(stage.start(path), path)) == [100] * 30
    assert reports["joined"] == reports["alone"]
    assert reports["joined"]["totals"]["samples"] == 3000 and reports["joined"]["checks"]["empty_text"]["flagged"] == 15
    assert reports["joined"]["duplicate_id"]["ids"] == 3000      # a stateful check's section, the same too
    flags = [pq.read_table(tmp_path / name / "flags.parquet") for name in ("joined", "alone")]
    assert flags[0].num_rows == 25 and flags[0].equals(flags[1])
