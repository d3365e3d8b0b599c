"""A text repeated in a shard is signed once (dataaudit/dedup/repeats.py): the shard's signature table equals the one
of every record signed on its own, whatever the batches and threads, repeats inside a batch or across batches."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dataaudit.dedup import DedupSpec, sign_batch, sign_shard
from dataaudit.dedup import repeats
from dataaudit.dedup.repeats import Repeats

TEXTS = ["the cat sat on the mat by the door", "The  cat sat on the mat by the door", "", None,
         "a different line of text with words", "short", "the cat sat on the mat by the door"]


@pytest.fixture
def shard(tmp_path):
    rng = np.random.default_rng(3)
    picks = rng.integers(0, len(TEXTS), 500).tolist()
    rows = [TEXTS[i] for i in picks] + [f"unique text number {i} with some words" for i in range(40)]
    path = tmp_path / "train.parquet"
    pq.write_table(pa.table({"text": pa.array(rows, pa.string())}), path)
    return path, rows


@pytest.mark.parametrize("batch_rows, threads", [(7, 1), (64, 2), (4096, 1)])
def test_a_shard_with_repeats_signs_as_every_record_alone(shard, batch_rows, threads):
    path, rows = shard
    spec = DedupSpec(batch_rows=batch_rows)
    summary, table = sign_shard(str(path), spec, threads=threads)
    alone = sign_batch(pa.array(rows, pa.string()), DedupSpec())
    for name in ("count", "exact_hi", "exact_lo", "sig"):
        assert table.column(name).combine_chunks().equals(alone[name]), name
    assert table.column("row").to_pylist() == list(range(540))
    assert (summary["records"], summary["empty"]) == (540, rows.count("") + rows.count(None))


def test_plan_and_fill_of_two_batches():
    rep = Repeats()
    first = pa.array(["a b", "c d", "a b", None], pa.string())
    second = pa.array(["c d", "e f", "", "e f"], pa.string())
    sign1, source1 = rep.plan(first)
    sign2, source2 = rep.plan(second)
    assert (sign1.tolist(), source1.tolist()) == ([0, 1, 3], [0, 1, 0, 3])
    assert (sign2.tolist(), source2.tolist()) == ([1], [1, 5, 3, 5])          # "" repeats None: both hash b""
    spec = DedupSpec()
    one = rep.fill(sign_batch(first.take(pa.array(sign1)), spec), sign1, source1)
    two = rep.fill(sign_batch(second.take(pa.array(sign2)), spec), sign2, source2)
    for got, texts in ((one, first), (two, second)):
        alone = sign_batch(texts, spec)
        assert all(got[k].equals(alone[k]) for k in ("count", "exact_hi", "exact_lo", "sig"))


def test_a_shard_that_repeats_little_stops_looking(tmp_path, monkeypatch):
    monkeypatch.setattr(repeats, "FEW_AFTER", 100)
    rows = [f"text {i} of the shard" for i in range(150)] + ["text 3 of the shard", "text 3 of the shard"]
    rep = Repeats()
    assert rep.plan(pa.array(rows[:100])) is not None          # 100 rows, none repeated: no more looking
    assert rep.plan(pa.array(rows[100:])) is None
    path = tmp_path / "few.parquet"
    pq.write_table(pa.table({"text": rows}), path)
    _, table = sign_shard(str(path), DedupSpec(batch_rows=50), threads=2)
    alone = sign_batch(pa.array(rows), DedupSpec())
    assert all(table.column(k).combine_chunks().equals(alone[k]) for k in ("count", "exact_hi", "exact_lo", "sig"))
