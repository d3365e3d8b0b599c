"""The one job skeleton (dataaudit.pipelines.job): a run clears a killed run's temporaries, chooses the engine once,
runs units with resume and tells one shape of progress for every stage; and the options every job takes."""
from __future__ import annotations

import pyarrow as pa
import pytest

from dataaudit.handlers import report_unreadable
from dataaudit.io import fingerprint
from dataaudit.pipelines.engine import EngineOptions, choose_engine
from dataaudit.pipelines.job import JobRun, Progress
from dataaudit.pipelines.parts import PartStore


def _unit(path, scale, on_batch=None, handler=None):
    for _ in range(2):
        if on_batch:
            on_batch(scale)
    return {"path": path, "records": 2 * scale}, pa.table({"row": pa.array([0], pa.int64())})


def _square(x, add):
    return x * x + add


def test_a_run_resumes_units_and_tells_progress_in_one_shape(tmp_path):
    (tmp_path / "parts").mkdir()
    (tmp_path / "parts" / ".00000-dead.x.parquet.0a0b.tmp").write_bytes(b"half")   # a killed run's temporary
    seen: list[Progress] = []
    a, b = (str(tmp_path / n) for n in ("a.jsonl", "b.jsonl"))
    for p in (a, b):
        open(p, "w").write("{}\n")
    run = JobRun(tmp_path, [a, b], EngineOptions("local"), seen.append)
    assert run.engine == "local" and not list((tmp_path / "parts").iterdir())
    store = PartStore(tmp_path, {"job": 1}, suffix=".x.parquet")
    done_b = {"path": b, "records": 7, "fingerprint": fingerprint(b)}   # a part is reused for the same file only
    store.save(1, b, done_b, pa.table({"row": pa.array([0], pa.int64())}))
    with run.timed("count"):
        summaries = run.units("count", [a, b], store, _unit, (5,))
    assert summaries == [{"path": a, "records": 10, "fingerprint": fingerprint(a)}, done_b]
    assert seen == [Progress("count", 1, 2, 7), Progress("count", 1, 2, 12), Progress("count", 1, 2, 17),
                    Progress("count", 2, 2, 17)]
    seen.clear()
    assert run.tasks("square", [1, 2, 3], _square, (1,), records=17) == [2, 5, 10]
    assert seen == [Progress("square", i, 3, 17) for i in (1, 2, 3)]
    record = run.record(shards=[0.1])
    assert record["engine"] == "local" and record["resumed_shards"] == 1
    assert list(record["seconds"]) == ["count", "total", "shards"] and record["seconds"]["shards"] == [0.1]
    assert isinstance(JobRun(tmp_path / "new", [], EngineOptions("local")).record()["seconds"], float)


def test_options_are_checked_and_the_engine_chosen_once(tmp_path):
    with pytest.raises(ValueError, match="engine must be one of auto, local, ray, got 'spark'"):
        EngineOptions("spark")
    assert EngineOptions().handler is report_unreadable
    small = tmp_path / "s.jsonl"
    small.write_text("{}\n")
    assert choose_engine([str(small), str(small)], EngineOptions("auto")) == "local"   # small: Ray costs more
    assert choose_engine([str(small)], EngineOptions("ray")) == "ray"
    assert choose_engine([str(tmp_path / "missing.jsonl")], EngineOptions()) == "local"


def test_auto_weighs_the_share_of_the_input_a_job_reads(tmp_path, monkeypatch):
    """A cluster sample of a large input reads a few row groups: no Ray for them."""
    from dataaudit.pipelines import engine

    monkeypatch.setattr(engine, "available", lambda extra: True)
    monkeypatch.setattr(engine, "LOCAL_MAX_BYTES", 50_000)
    monkeypatch.setattr(engine, "cores", lambda: 4)
    paths = []
    for name in ("a.jsonl", "b.jsonl"):
        (tmp_path / name).write_bytes(b"x" * 40_000)        # 40 KB stored each (not sparse)
        paths.append(str(tmp_path / name))
    assert choose_engine(paths, EngineOptions()) == "ray"
    assert choose_engine(paths, EngineOptions(), share=0.7) == "ray"      # 56 KB read of 80
    assert choose_engine(paths, EngineOptions(), share=0.2) == "local"    # 16 KB
    assert choose_engine(paths, EngineOptions("ray"), share=0.2) == "ray"


def test_auto_starts_no_ray_for_a_job_with_local_lanes(tmp_path, monkeypatch):
    """The audit runs a lane per core locally: a Ray started for the command would run the same cores after seconds
    of start-up. It goes to Ray when a running cluster is named, or when asked."""
    from dataaudit.config import load_config
    from dataaudit.pipelines import engine
    from dataaudit.pipelines.audit import run_audit

    monkeypatch.setattr(engine, "available", lambda extra: True)
    monkeypatch.setattr(engine, "LOCAL_MAX_BYTES", 50_000)
    paths = []
    for name in ("a.jsonl", "b.jsonl"):
        (tmp_path / name).write_text("".join(f'{{"text": "record {i} of {name}, a line of prose"}}\n'
                                             for i in range(1000)))
        paths.append(str(tmp_path / name))
    monkeypatch.setattr(engine, "cores", lambda: 4)
    assert choose_engine(paths, EngineOptions()) == "ray"                      # a job without lanes: Ray pays
    assert choose_engine(paths, EngineOptions(), lanes=True) == "local"
    assert choose_engine(paths, EngineOptions(address="127.0.0.1:6379"), lanes=True) == "ray"
    assert choose_engine(paths, EngineOptions("ray"), lanes=True) == "ray"
    monkeypatch.setattr(engine, "cores", lambda: 2)
    assert choose_engine(paths, EngineOptions()) == "local"                    # 2 cores: no Ray of its own
    assert choose_engine(paths, EngineOptions(address="auto")) == "ray"
    monkeypatch.setattr(engine, "LOCAL_PARALLEL_BYTES", 1)
    assert engine.planned_lanes(paths, EngineOptions()) == 2                   # the command starts its lanes
    report = run_audit(paths, load_config(None), tmp_path / "out")
    assert report["run"]["engine"] == "local" and report["totals"]["samples"] == 2000
