"""The local engine with --workers N: this process and N - 1 spawned workers share the items, each taking the
next when free; every item is done once, errors from either side come through. Workers started early (as a command
starts) are the ones the lanes use, and they stop with their block."""
from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from dataaudit.pipelines.engine import EngineOptions
from dataaudit.pipelines.lanes import early_lanes
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


@pytest.fixture
def three_shards(tmp_path, monkeypatch) -> list[str]:
    """Three shards of 5,000 bytes on 2 cores, lanes from 12,000 bytes."""
    from dataaudit.pipelines import engine

    paths = []
    for i in range(3):
        p = tmp_path / f"s{i}.jsonl"
        p.write_bytes(b"x" * 5000)
        paths.append(str(p))
    monkeypatch.setattr(engine, "cores", lambda: 2)
    monkeypatch.setattr(engine, "LOCAL_PARALLEL_BYTES", 12_000)
    return paths


def test_the_default_lanes_are_one_per_core_for_an_input_worth_it(three_shards, monkeypatch):
    """No --workers: one lane per core (at most one per shard) once the shards still to run hold
    LOCAL_PARALLEL_BYTES, else this process alone."""
    from dataaudit.pipelines import engine

    paths = three_shards
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


def note_pid() -> None:
    """An early worker's warm-up in these tests: it leaves its pid in LANES_TEST_DIR."""
    (Path(os.environ["LANES_TEST_DIR"]) / str(os.getpid())).touch()


def wait_long() -> None:
    """A warm-up that is still running when the block ends (a job that turned out to need no lanes)."""
    note_pid()
    time.sleep(120)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_the_lanes_use_the_workers_started_early_and_the_block_stops_them(tmp_path, monkeypatch):
    monkeypatch.setenv("LANES_TEST_DIR", str(tmp_path))
    got = {}
    with early_lanes(3, note_pid):
        run_tasks(list(enumerate(range(9))), square, (), lambda i, item, r: got.update({i: r}), engine="local",
                  options=EngineOptions("local", workers=3), processes=True)
        deadline = time.monotonic() + 60     # the second worker may still be starting: the items are tiny
        while len(list(tmp_path.iterdir())) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        warmed = {int(p.name) for p in tmp_path.iterdir()}
    assert [got[i][1] for i in range(9)] == [i * i for i in range(9)]
    assert len(warmed) == 2                                       # lanes - 1 workers, each warmed as it started
    workers = {pid for pid, _ in got.values()} - {os.getpid()}
    assert workers and workers <= warmed                          # no other worker was started for the job
    assert not [pid for pid in warmed if _alive(pid)]             # stopped (and reaped) when the block ended


def test_early_workers_still_starting_are_stopped_when_the_block_ends(tmp_path, monkeypatch):
    monkeypatch.setenv("LANES_TEST_DIR", str(tmp_path))
    with early_lanes(2, wait_long):
        deadline = time.monotonic() + 60
        while not list(tmp_path.iterdir()) and time.monotonic() < deadline:   # the worker is in its warm-up
            time.sleep(0.05)
    (pid,) = [int(p.name) for p in tmp_path.iterdir()]
    assert not _alive(pid)                                        # not waited for: terminated


def test_fewer_than_two_lanes_start_no_worker(tmp_path, monkeypatch):
    monkeypatch.setenv("LANES_TEST_DIR", str(tmp_path))
    with early_lanes(1, note_pid):
        got = []
        run_tasks([(0, 3)], square, (), lambda i, item, r: got.append(r), engine="local",
                  options=EngineOptions("local", workers=1), processes=True)
    assert got == [(os.getpid(), 9)] and not list(tmp_path.iterdir())


def test_the_planned_lanes_follow_the_engine_and_workers(three_shards):
    from dataaudit.pipelines import engine

    paths = three_shards
    assert engine.planned_lanes(paths, EngineOptions("local")) == 2          # local_workers: 15,000 bytes, 2 cores
    assert engine.planned_lanes(paths[:2], EngineOptions("local")) == 1      # 10,000 bytes
    assert engine.planned_lanes(paths, EngineOptions("local", workers=8)) == 3   # at most one lane per shard
    assert engine.planned_lanes(paths, EngineOptions("local", workers=1)) == 1
    assert engine.planned_lanes(paths, EngineOptions("ray", workers=4)) == 1     # Ray runs no local lanes


def test_the_audit_sizes_objects_in_a_store_once_each_and_at_once_for_its_early_workers(monkeypatch):
    """Sizing an object in a store is a request: each is sized once for the early workers' plan, SIZE_REQUESTS at a
    time, and the plan follows the same rule as for local files."""
    import threading

    from dataaudit.cli.audit import _planned_lanes
    from dataaudit.pipelines import engine

    asked, lock = [], threading.Lock()
    together = [threading.Barrier(2, timeout=10)]   # None: no wait

    def head(path):
        with lock:
            asked.append(path)
        if path != "s3://bucket/a.parquet" and together[0] is not None:   # the first alone, the others at once
            together[0].wait()
        return 10 * 2**20

    monkeypatch.setattr(engine, "stored_size", head)
    monkeypatch.setattr(engine, "cores", lambda: 2)
    shards = ["s3://bucket/a.parquet", "s3://bucket/b.parquet", "s3://bucket/c.parquet"]
    assert _planned_lanes(shards, EngineOptions("local"), None) == 2     # 30 MiB in 3 shards, 2 cores
    assert sorted(asked) == shards and asked[0] == shards[0]             # once each, the first one first
    together[0] = None
    assert _planned_lanes(shards, EngineOptions("local", workers=1), None) == 1
    monkeypatch.setattr(engine, "LOCAL_PARALLEL_BYTES", 64 * 2**20)
    assert _planned_lanes(shards, EngineOptions("local"), None) == 1     # 30 MiB: not worth a worker's start
