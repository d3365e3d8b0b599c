"""The shard runner every job uses (dataaudit.pipelines.runner / dataaudit.pipelines.tasks): resume from parts,
progress, the error policy handed to each stage call, the Ray workers cap; and `dataaudit dedup --workers 1` on
Ray."""
from __future__ import annotations

import json
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from click.testing import CliRunner

from dataaudit.cli import main
from dataaudit.handlers import reraise
from dataaudit.io import fingerprint
from dataaudit.pipelines.parts import PartStore
from dataaudit.pipelines.engine import EngineOptions
from dataaudit.pipelines.runner import run_units
from dataaudit.pipelines.tasks import run_tasks


def _stage(path, scale, on_batch=None, handler=None):
    """A unit that counts `scale` records in two batches and records which handler it was given."""
    for _ in range(2):
        if on_batch:
            on_batch(scale)
    summary = {"path": path, "records": 2 * scale, "handler": getattr(handler, "__name__", None)}
    return summary, pa.table({"row": pa.array([0, 1], pa.int64())})


def test_run_units_resumes_tells_progress_and_passes_the_handler(tmp_path):
    a, b, c = paths = [str(tmp_path / f"{n}.jsonl") for n in "abc"]
    for p in paths:
        Path(p).write_text("{}\n")
    store = PartStore(tmp_path, {"job": 1}, suffix=".rows.parquet")
    store.save(1, b, {"path": b, "records": 10, "handler": "earlier", "fingerprint": fingerprint(b)},
               pa.table({"row": pa.array([7], pa.int64())}))
    progress = []
    summaries, resumed = run_units(paths, store, _stage, (3,), engine="local",
                                   options=EngineOptions("local", handler=reraise),
                                   on_progress=lambda *a: progress.append(a))
    assert resumed == 1
    assert summaries == [{"path": a, "records": 6, "handler": "reraise", "fingerprint": fingerprint(a)},
                         {"path": b, "records": 10, "handler": "earlier", "fingerprint": fingerprint(b)},
                         {"path": c, "records": 6, "handler": "reraise", "fingerprint": fingerprint(c)}]
    # per batch in-process: the resumed shard first, then 3 rows at a time, each shard saved as it finishes
    assert progress == [(1, 10), (1, 13), (1, 16), (2, 16), (2, 19), (2, 22), (3, 22)]
    assert store.read(0, a).num_rows == 2 and store.read(1, b).column("row").to_pylist() == [7]
    again, resumed = run_units(paths, store, _stage, (3,), engine="local")
    assert resumed == 3 and again == summaries
    assert PartStore(tmp_path, {"job": 2}, suffix=".rows.parquet").load(0, a) is None   # other settings


def test_ray_workers_cap_the_tasks_in_flight(tmp_path, ray_session):
    def _timed(item, folder):      # defined here: Ray ships it by value (the test module is not importable there)
        start = time.time()
        time.sleep(0.3)
        Path(folder, f"{item}.json").write_text(json.dumps([start, time.time()]))
        return item * 10

    done = {}
    run_tasks(list(enumerate(range(4))), _timed, (str(tmp_path),), lambda i, item, r: done.update({i: r}),
              engine="ray", options=EngineOptions("ray", workers=1))
    assert done == {0: 0, 1: 10, 2: 20, 3: 30}
    spans = sorted(json.loads(p.read_text()) for p in tmp_path.glob("*.json"))
    assert all(later[0] >= earlier[1] for earlier, later in zip(spans, spans[1:]))   # one at a time


def test_dedup_workers_1_on_ray_gives_the_local_outputs(tmp_path, ray_session):
    words = "the quick brown fox jumps over the lazy dog near a quiet river bank at dawn".split()
    for s in range(3):
        docs = [" ".join(words[i % 5:] + [f"s{s}", str(i)]) for i in range(40)] + [" ".join(words)] * 2
        pq.write_table(pa.table({"text": docs}), tmp_path / f"train-{s}.parquet")
    shards = [str(tmp_path / f"train-{s}.parquet") for s in range(3)]
    outputs = {}
    for name, engine in {"local": ["--engine", "local"], "ray": ["--engine", "ray", "--workers", "1"]}.items():
        res = CliRunner().invoke(main, ["dedup", *shards, "--out", str(tmp_path / name), "--threshold", "0.5",
                                        "--partitions", "2", *engine])
        assert res.exit_code == 0, res.output
        report = json.loads((tmp_path / name / "dedup.json").read_text())
        assert report.pop("run")["engine"] == name
        outputs[name] = (report, [pq.read_table(tmp_path / name / f) for f in ("clusters.parquet", "keep.parquet")])
    assert outputs["ray"][0] == outputs["local"][0]
    assert all(r.equals(l) for r, l in zip(outputs["ray"][1], outputs["local"][1]))
    assert outputs["local"][0]["exact"]["duplicates"] == 5        # the full sentence, twice in each of 3 shards


def test_local_audit_with_two_worker_processes_gives_the_one_process_outputs(tmp_path, monkeypatch):
    import dataaudit.pipelines.lanes as lanes
    pools = []

    class Pool(lanes.ProcessPoolExecutor):
        def __init__(self, *a, **kw):
            pools.append(kw["max_workers"])
            super().__init__(*a, **kw)
    monkeypatch.setattr(lanes, "ProcessPoolExecutor", Pool)
    texts = ["A clean sentence about rivers.", "buy now " * 40, "x" * 150, "", "Hello\x00world"]
    for s in range(3):
        pq.write_table(pa.table({"text": [f"{t} {s}" if t else t for t in texts]}), tmp_path / f"s{s}.parquet")
    shards = [str(tmp_path / f"s{s}.parquet") for s in range(3)]
    reports, flags = {}, {}
    for workers in ("1", "2"):
        out = tmp_path / f"out{workers}"
        res = CliRunner().invoke(main, ["audit", *shards, "--out", str(out), "--engine", "local",
                                        "--workers", workers])
        assert res.exit_code in (0, 1), res.output
        report = json.loads((out / "report.json").read_text())
        report.pop("run")
        reports[workers], flags[workers] = report, pq.read_table(out / "flags.parquet")
    # --workers 1 ran in this process; 2: this process and one worker process, started as the command started
    assert pools == [1]
    assert reports["1"] == reports["2"]
    assert flags["1"].equals(flags["2"])
    assert sorted(set(flags["2"]["check"].to_pylist())) == ["control_chars", "empty_text", "long_unbroken_run",
                                                             "repetition"]
    assert flags["2"]["shard"].to_pylist().count(shards[2]) == 4


def test_f20_a_stage_error_outside_the_shard_loop_is_one_line_naming_the_shard(tmp_path):
    from dataaudit.pipelines.runner import ShardFailed

    path = str(tmp_path / "a.jsonl")
    Path(path).write_text("{}\n")

    def broken(path, on_batch=None, handler=None):
        raise ValueError("no such\nplan")

    store = PartStore(tmp_path, {"job": 1}, suffix=".rows.parquet")
    try:
        run_units([path], store, broken, (), engine="local")
    except ShardFailed as exc:
        assert str(exc) == f"{path}: ValueError: no such plan"
    else:
        raise AssertionError("no error")


def test_f20_a_stage_that_breaks_in_finish_reports_an_empty_unreadable_shard(tmp_path):
    from dataaudit.stage import ShardStage

    path = tmp_path / "a.jsonl"
    path.write_text("".join(json.dumps({"t": str(i)}) + "\n" for i in range(5)))

    class Counting(ShardStage):
        def start(self, path):
            return {"rows": 0, "fresh": True}

        def add(self, state, batch):
            state["rows"] += batch.num_rows
            state["fresh"] = False

        def finish(self, state, error):
            if not state["fresh"] and error is None:
                raise OverflowError("merge broke")
            return {"records": state["rows"], "error": error}

    assert Counting()(str(path)) == {"records": 0, "error": "OverflowError: merge broke"}
