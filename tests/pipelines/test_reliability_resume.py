"""A job killed with SIGKILL at any point, rerun with the same --out, redoes only unfinished shards and ends
with the report of an uninterrupted run. Half-written partial results are never read as complete."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dataaudit.config import load_config
from dataaudit.pipelines.audit import run_audit
from dataaudit.pipelines.parts import PartStore
from dataaudit.pipelines.engine import EngineOptions
from tests.paths import REPO

SHARDS = 10


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("resume-corpus")
    rng = np.random.default_rng(3)
    for s in range(SHARDS):
        n = 3000
        text = [f"Shard {s} row {i}: a plain sentence about rivers and {rng.integers(1e6)} stones." for i in range(n)]
        for i in rng.choice(n, 5, replace=False):
            text[i] = "bad \x00 control"
        x = rng.normal(size=(n, 8)).astype(np.float32)
        x[rng.choice(n, 3, replace=False), 0] = np.nan
        pq.write_table(pa.table({"text": text, "x": pa.FixedSizeListArray.from_arrays(pa.array(x.ravel()), 8)}),
                       folder / f"part-{s:02d}.parquet", row_group_size=1000)
    return folder


def _cli(corpus: Path, out: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "dataaudit.cli", "audit", str(corpus), "--out", str(out),
                             "--engine", "local"], cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _outputs(out: Path) -> tuple[dict, pa.Table]:
    report = json.loads((out / "report.json").read_text())
    report.pop("run")
    return report, pq.read_table(out / "flags.parquet")


@pytest.fixture(scope="module")
def reference(corpus, tmp_path_factory):
    out = tmp_path_factory.mktemp("reference")
    assert _cli(corpus, out).wait(timeout=300) == 1   # NaN planted: error severity
    return _outputs(out)


@pytest.mark.parametrize("kill_at_parts", [0, 1, 5, SHARDS])
def test_sigkill_then_rerun_matches_uninterrupted(kill_at_parts, corpus, reference, tmp_path):
    out = tmp_path / "out"
    proc = _cli(corpus, out)
    deadline = time.time() + 120
    while time.time() < deadline and proc.poll() is None:
        done = len(list((out / "parts").glob("*.json"))) if (out / "parts").exists() else 0
        if done >= kill_at_parts:
            break
        time.sleep(0.01)
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)
    finished_before = len(list((out / "parts").glob("*.json"))) if (out / "parts").exists() else 0

    rerun = _cli(corpus, out)
    assert rerun.wait(timeout=300) == 1, rerun.stderr.read()
    report, flags = _outputs(out)
    ref_report, ref_flags = reference
    assert report == ref_report
    assert flags.equals(ref_flags)
    resumed = json.loads((out / "report.json").read_text())["run"]["resumed_shards"]
    assert resumed == finished_before          # only unfinished shards were redone
    assert not list(out.rglob("*.tmp")), "temporary files must not outlive a finished run"


def test_half_written_parts_are_redone(corpus, tmp_path):
    config = load_config(None)
    paths = sorted(str(p) for p in corpus.glob("*.parquet"))[:3]
    first = run_audit(paths, config, tmp_path, options=EngineOptions("local"))
    parts = sorted((tmp_path / "parts").glob("*.json"))
    parts[1].write_text(parts[1].read_text()[:50])                 # a marker cut mid-write
    (tmp_path / "parts" / ".00002-junk.flags.parquet.123.tmp").write_bytes(b"PAR1 half")  # a dead temp file
    again = run_audit(paths, config, tmp_path, options=EngineOptions("local"))
    assert again["run"]["resumed_shards"] == 2
    first.pop("run"), again.pop("run")
    assert first == again


def test_parts_of_another_config_are_not_reused(corpus, tmp_path):
    paths = sorted(str(p) for p in corpus.glob("*.parquet"))[:2]
    run_audit(paths, load_config(None), tmp_path, options=EngineOptions("local"))
    from dataaudit.config import build_config

    stricter = build_config({"checks": {"control_chars": {"severity": "error"}}})
    report = run_audit(paths, stricter, tmp_path, options=EngineOptions("local"))
    assert report["run"]["resumed_shards"] == 0
    assert report["checks"]["control_chars"]["severity"] == "error"
    assert PartStore(tmp_path, {"x": 1}, suffix=".flags.parquet").load(0, paths[0]) is None


def test_parts_of_other_code_are_not_reused(corpus, tmp_path, monkeypatch):
    """A part written by other code (an upgrade, a fixed check) is redone: the code's digest is in the job's."""
    import dataaudit.pipelines.parts as parts

    paths = sorted(str(p) for p in corpus.glob("*.parquet"))[:2]
    run_audit(paths, load_config(None), tmp_path, options=EngineOptions("local"))
    assert run_audit(paths, load_config(None), tmp_path, options=EngineOptions("local"))["run"]["resumed_shards"] == 2
    monkeypatch.setattr(parts, "code_digest", lambda: "other code")
    assert run_audit(paths, load_config(None), tmp_path, options=EngineOptions("local"))["run"]["resumed_shards"] == 0
