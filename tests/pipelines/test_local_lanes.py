"""The local engine with --workers N: this process and N - 1 spawned workers share the items, each taking the
next when free; every item is done once, errors from either side come through."""
from __future__ import annotations

import os

import pytest

from dataaudit.pipelines.engine import EngineOptions
from dataaudit.pipelines.tasks import run_tasks


def square(x, add=0):
    return os.getpid(), x * x + add


def fail_on(x, bad):
    if x == bad:
        raise ValueError(f"item {x} failed")
    return os.getpid(), x


def test_every_item_once_across_this_process_and_the_workers():
    got = {}

    def on_done(index, item, result):
        assert index not in got
        got[index] = result

    run_tasks(list(enumerate(range(9))), square, (), on_done, engine="local", options=EngineOptions("local", workers=3),
              processes=True, add=1)
    assert [got[i][1] for i in range(9)] == [i * i + 1 for i in range(9)]
    pids = {pid for pid, _ in got.values()}
    assert os.getpid() in pids and len(pids) >= 2   # this process took items, and at least one worker did


@pytest.mark.parametrize("bad", [0, 1])   # workers=2: item 0 goes to the worker, item 1 to this process
def test_an_error_in_either_lane_comes_through(bad):
    done = []
    with pytest.raises(ValueError, match=f"item {bad} failed"):
        run_tasks(list(enumerate(range(6))), fail_on, (bad,), lambda i, item, r: done.append(i), engine="local",
                  options=EngineOptions("local", workers=2), processes=True)
    assert bad not in done


def test_the_default_lanes_are_one_per_core_for_an_input_worth_it(tmp_path, monkeypatch):
    """No --workers: one lane per core (at most one per shard) once the shards still to run hold
    LOCAL_PARALLEL_BYTES, else this process alone."""
    from dataaudit.pipelines import engine

    paths = []
    for i in range(3):
        p = tmp_path / f"s{i}.jsonl"
        p.write_bytes(b"x" * 5000)
        paths.append(str(p))
    monkeypatch.setattr(engine, "cores", lambda: 2)
    monkeypatch.setattr(engine, "LOCAL_PARALLEL_BYTES", 12_000)
    assert engine.local_workers(paths) == 2            # 15,000 bytes in 3 shards, 2 cores
    assert engine.local_workers(paths[:2]) == 1        # 10,000 bytes: not worth a worker's start
    assert engine.local_workers(paths[:1]) == 1        # one shard
    monkeypatch.setattr(engine, "cores", lambda: 8)
    assert engine.local_workers(paths) == 3            # at most one lane per shard
    monkeypatch.setattr(engine, "cores", lambda: 1)
    assert engine.local_workers(paths) == 1


def test_the_default_lanes_give_the_one_process_outputs(fixture_dir, tmp_path, monkeypatch):
    import pyarrow.parquet as pq

    from dataaudit.config import load_config
    from dataaudit.pipelines import engine
    from dataaudit.pipelines.audit import run_audit
    from tests.paths import REPO

    config = load_config(REPO / "fixtures" / "audit.toml")
    paths = [str(fixture_dir / n) for n in ("train-000.parquet", "images-000.tar", "train-001.parquet")]
    one = run_audit(paths, config, tmp_path / "one", options=EngineOptions("local", workers=1))
    monkeypatch.setattr(engine, "LOCAL_PARALLEL_BYTES", 1)
    monkeypatch.setattr(engine, "cores", lambda: 2)
    assert engine.local_workers(paths) == 2
    lanes = run_audit(paths, config, tmp_path / "lanes", options=EngineOptions("local"))
    one.pop("run"), lanes.pop("run")
    assert lanes == one
    assert pq.read_table(tmp_path / "lanes" / "flags.parquet").equals(pq.read_table(tmp_path / "one" / "flags.parquet"))
