"""clean killed with SIGKILL and rerun redoes only unfinished shards and writes the same bytes; a finished shard
whose output was removed or altered is redone; the local and the Ray engines write the same bytes."""
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

from dataaudit.clean.selection import Selection
from dataaudit.clean.plan import plan_clean
from dataaudit.pipelines.clean import run_clean
from dataaudit.pipelines.engine import EngineOptions
from tests.clean.helpers import fake_audit, outputs
from tests.paths import REPO

SHARDS = 8


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> tuple[Path, list[str], Path]:
    root = tmp_path_factory.mktemp("clean-resume")
    data = root / "data"
    data.mkdir()
    rng = np.random.default_rng(5)
    paths, flagged, counts = [], {}, {}
    for s in range(SHARDS):
        n = 40_000
        p = data / f"part-{s:02d}.parquet"
        pq.write_table(pa.table({"text": [f"shard {s} row {i} {rng.integers(1e9)}" for i in range(n)],
                                 "x": rng.normal(size=n)}), p, row_group_size=4_000)
        paths.append(str(p))
        flagged[str(p)] = sorted(rng.choice(n, 50, replace=False).tolist())
        counts[str(p)] = n
    (data / "side.jsonl").write_bytes(b"".join(b'{"i": %d}\n' % i for i in range(100)))
    paths.append(str(data / "side.jsonl"))
    flagged[paths[-1]], counts[paths[-1]] = [0, 50, 99], 100
    return data, paths, fake_audit(root / "audit", flagged, counts)


def _cli(data: Path, audit: Path, out: Path) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.Popen([sys.executable, "-m", "dataaudit.cli", "clean", str(data), "--audit", str(audit),
                             "--out", str(out), "--engine", "local"], cwd=REPO, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _parts(out: Path) -> int:
    folder = out / ".dataaudit" / "parts" / "clean"
    return len(list(folder.glob("*.json"))) if folder.exists() else 0


def _report(out: Path) -> dict:
    r = json.loads((out / ".dataaudit/clean.json").read_text())
    return {k: v for k, v in r.items() if k != "run"}


@pytest.fixture(scope="module")
def reference(corpus, tmp_path_factory):
    data, paths, audit = corpus
    out = tmp_path_factory.mktemp("reference") / "out"
    job = plan_clean(paths, [str(data)], out, Selection(), audit)
    run_clean(job, out, options=EngineOptions("local"))
    return outputs(out), _report(out)


def test_sigkill_then_rerun_is_byte_identical(corpus, reference, tmp_path):
    data, paths, audit = corpus
    out = tmp_path / "out"
    proc = _cli(data, audit, out)
    deadline = time.time() + 120
    while time.time() < deadline and proc.poll() is None and _parts(out) < 3:
        time.sleep(0.005)
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)
    finished = _parts(out)
    rerun = _cli(data, audit, out)
    assert rerun.wait(timeout=300) == 0, rerun.stderr.read()
    assert outputs(out) == reference[0]
    assert _report(out) == reference[1]
    run = json.loads((out / ".dataaudit/clean.json").read_text())["run"]
    assert run["resumed_shards"] == finished          # only unfinished shards were redone
    assert not list(out.rglob("*.tmp"))


def test_rerun_redoes_missing_or_altered_outputs(corpus, reference, tmp_path):
    data, paths, audit = corpus
    out = tmp_path / "out"
    job = plan_clean(paths, [str(data)], out, Selection(), audit)
    run_clean(job, out, options=EngineOptions("local"))
    (out / "part-01.parquet").unlink()
    with open(out / "side.jsonl", "ab") as f:
        f.write(b'{"i": "appended"}\n')
    (out / ".part-02.parquet.123.tmp").write_bytes(b"PAR1 half")             # a killed run's temp file
    report = run_clean(plan_clean(paths, [str(data)], out, Selection(), audit), out, options=EngineOptions("local"))
    assert report["run"]["resumed_shards"] == SHARDS + 1 - 2
    assert outputs(out) == reference[0]
    # another selection: nothing reused
    again = run_clean(plan_clean(paths, [str(data)], out, Selection(severity=None), audit), out,
                      options=EngineOptions("local"))
    assert again["run"]["resumed_shards"] == 0 and again["totals"]["dropped"] == 0
    assert (out / "side.jsonl").read_bytes() == Path(paths[-1]).read_bytes()


def test_ray_engine_writes_the_same_bytes(corpus, reference, tmp_path, ray_session):
    data, paths, audit = corpus
    out = tmp_path / "out"
    report = run_clean(plan_clean(paths, [str(data)], out, Selection(), audit), out,
                       options=EngineOptions("ray", workers=2))
    assert report["run"]["engine"] == "ray"
    assert outputs(out) == reference[0]
    assert _report(out) == reference[1]
