"""Two runs on the same input give identical report.json (outside `run`) and flags.parquet, whatever the
engine and the number of workers."""
from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq

from dataaudit.config import load_config
from dataaudit.pipelines.audit import run_audit
from dataaudit.pipelines.engine import EngineOptions
from tests.paths import REPO


def _shards(fixture_dir: Path) -> list[str]:
    return [str(p) for p in sorted(fixture_dir.rglob("*")) if p.is_file() and p.suffix != ".json"]


def test_identical_outputs_across_runs_engines_and_workers(fixture_dir, tmp_path, ray_session):
    config = load_config(REPO / "fixtures" / "audit.toml")
    runs = {"local-1": EngineOptions("local"), "local-2": EngineOptions("local"),
            "ray-1-worker": EngineOptions("ray", workers=1), "ray-2-workers": EngineOptions("ray", workers=2)}
    outputs = {}
    for name, options in runs.items():
        out = tmp_path / name
        run_audit(_shards(fixture_dir), config, out, options)
        report = json.loads((out / "report.json").read_text())
        run = report.pop("run")
        assert set(run) >= {"engine", "seconds", "host", "python", "dataaudit"}
        outputs[name] = (json.dumps(report, sort_keys=True), pq.read_table(out / "flags.parquet"))
    first_report, first_flags = outputs["local-1"]
    for name, (report, flags) in outputs.items():
        assert report == first_report, name
        assert flags.equals(first_flags), name
