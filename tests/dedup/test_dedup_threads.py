"""The signature stage gives the same table whatever the threads signing its batches; the LSH parameter
search picks datasketch's (b, r) on more settings than test_dedup_core checks."""
from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dataaudit.dedup import DedupSpec, optimal_params, sign_shard
from fixtures.dedup_corpus import make_corpus


@pytest.fixture(scope="module")
def shard(tmp_path_factory):
    c = make_corpus(700, seed=5)
    path = tmp_path_factory.mktemp("threads") / "train.parquet"
    pq.write_table(pa.table({"text": pa.array(c.texts, pa.string())}), path, row_group_size=128)
    return str(path)


@pytest.mark.parametrize("threads", [2, 3])
def test_threads_give_the_same_table_and_summary(shard, threads):
    spec = DedupSpec(batch_rows=64)             # 11 batches: more than 2 per thread are in flight
    one_summary, one = sign_shard(shard, spec, True, threads=1)
    many_summary, many = sign_shard(shard, spec, True, threads=threads)
    assert many.equals(one)
    assert one.num_rows == 700 and one.column("row").to_pylist() == list(range(700))
    one_summary.pop("seconds"), many_summary.pop("seconds")
    assert many_summary == one_summary
    assert one_summary["records"] == 700 and one_summary["empty"] == 5


def test_batches_counted_as_read_with_threads(shard):
    told, told_one = [], []
    sign_shard(shard, DedupSpec(batch_rows=100), threads=2, on_batch=told.append)
    sign_shard(shard, DedupSpec(batch_rows=100), threads=1, on_batch=told_one.append)
    assert told == told_one == [100, 28] * 5 + [60]          # row groups of 128 rows


@pytest.mark.parametrize("threshold,num_perm", [(0.95, 64), (0.1, 16), (0.7, 100), (0.55, 48)])
def test_optimal_params_equal_datasketch_more(threshold, num_perm):
    _optimal_param = pytest.importorskip("datasketch.lsh")._optimal_param
    assert optimal_params(threshold, num_perm) == _optimal_param(threshold, num_perm, 0.5, 0.5)
    assert optimal_params(threshold, num_perm, 0.2, 0.8) == _optimal_param(threshold, num_perm, 0.2, 0.8)


def test_a_shard_ended_by_an_error_leaves_no_signing_thread(shard):
    import threading

    def stop(rows):                            # e.g. a Ctrl-C or a failing progress callback mid-shard
        raise KeyboardInterrupt

    for _ in range(3):
        with pytest.raises(KeyboardInterrupt):
            sign_shard(shard, DedupSpec(batch_rows=64), threads=2, on_batch=stop)
    assert [t.name for t in threading.enumerate() if t.name.startswith("dedup-sign")] == []
