"""Audits on a running two-raylet Ray cluster (`ray_cluster`, started once per session) give the local engine's
report and flags, run on both raylets, leave the cluster running, join it by HOST:PORT or by "auto" (RAY_ADDRESS),
survive a worker process SIGKILLed from outside mid-job, and run a large Parquet shard in pieces.

Every job here is a subprocess (the CLI, or tests/pipelines/ray_kill_driver.py): the pytest process may already be
connected to a local Ray, and one process joins one Ray.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dataaudit.config import load_config
from dataaudit.pipelines.audit import run_audit
from dataaudit.pipelines.engine import EngineOptions
from tests.paths import REPO

CONFIG = REPO / "fixtures" / "audit.toml"
SHARDS = ("train-000.parquet", "images-000.tar", "train-001.parquet")
JOB_SECONDS = 120     # one job on the loaded cluster: driver start, worker processes, three small shards


@pytest.fixture(scope="module")
def shards(fixture_dir) -> list[str]:
    return [str(fixture_dir / n) for n in SHARDS]


@pytest.fixture(scope="module")
def reference(shards, tmp_path_factory) -> Path:
    """The same audit with the local engine, in this process: the outputs every cluster run must equal."""
    out = tmp_path_factory.mktemp("local")
    run_audit(shards, load_config(CONFIG), out, options=EngineOptions("local"))
    return out


def _cli(shards, out, *options, env) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dataaudit.cli", "audit", *shards, "--config", str(CONFIG),
                           "--out", str(out), *options], capture_output=True, text=True, timeout=JOB_SECONDS,
                          env=env, cwd=REPO, stdin=subprocess.DEVNULL)


def _report(out: Path) -> dict:
    return json.loads((out / "report.json").read_text())


def _assert_same_outputs(out: Path, reference: Path) -> dict:
    """report.json but its `run`, and flags.parquet byte for byte, as the local engine wrote them; returns `run`."""
    report, expected = _report(out), _report(reference)
    run = report.pop("run")
    expected.pop("run")
    assert report == expected
    assert (out / "flags.parquet").read_bytes() == (reference / "flags.parquet").read_bytes()
    return run


def test_audit_on_the_cluster_equals_local_uses_both_raylets_and_leaves_it_running(ray_cluster, shards, reference,
                                                                                     tmp_path):
    out = tmp_path / "ray"
    env = ray_cluster.env()
    env.pop("RAY_ADDRESS")                                # joined by the address the option gives
    proc = _cli(shards, out, "--engine", "ray", "--ray-address", ray_cluster.address, env=env)
    assert proc.returncode == 1, proc.stdout[-2000:] + proc.stderr[-2000:]   # exit 1: the fixtures' planted defects are flagged
    run = _assert_same_outputs(out, reference)
    assert run["engine"] == "ray"
    # The shards ran on the cluster's own two nodes (joined, not a Ray of its own), one or more on each; the job's
    # end disconnected its driver and left the cluster up.
    assert set(run["nodes"]) == ray_cluster.node_ids(ray_cluster.status())
    assert sum(run["nodes"].values()) == 3 and min(run["nodes"].values()) >= 1


def test_a_worker_killed_mid_job_is_retried_and_the_outputs_are_the_same(ray_cluster, shards, reference, tmp_path):
    """The job joins with address "auto", which Ray resolves from RAY_ADDRESS."""
    out, pid_file = tmp_path / "killed", tmp_path / "worker.pid"
    victim = shards[1]
    env = ray_cluster.env()                  # RAY_ADDRESS: the cluster's
    driver = subprocess.Popen([sys.executable, str(REPO / "tests" / "pipelines" / "ray_kill_driver.py"), "auto",
                               str(out), str(pid_file), victim, str(CONFIG), *shards], env=env,
                              cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + JOB_SECONDS
        while not pid_file.exists() and driver.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert pid_file.exists(), driver.communicate(timeout=10)[0].decode(errors="replace")[-2000:]
        pid = int(pid_file.read_text())
        assert ray_cluster.owns_worker(pid)                # a worker of this cluster, never another process
        os.kill(pid, signal.SIGKILL)
        output = driver.communicate(timeout=JOB_SECONDS)[0].decode(errors="replace")
    finally:
        if driver.poll() is None:
            driver.kill()
            driver.wait()
    assert driver.returncode == 0, output[-2000:]
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)                       # the worker really died
    run = _assert_same_outputs(out, reference)
    assert set(run["nodes"]) <= ray_cluster.node_ids(ray_cluster.status())   # "auto" joined this cluster
    assert sum(run["nodes"].values()) == 3    # each shard counted once: the killed attempt left nothing behind


@pytest.fixture(scope="module")
def large_shard(tmp_path_factory) -> str:
    """One Parquet shard of two pieces (about 15 MiB stored, 9 row groups), with flagged records among the others."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(7)
    words = rng.integers(0, 1_000_000, size=(45_000, 50)).astype(str)
    texts = [" ".join(row) for row in words]
    for i in range(0, len(texts), 997):
        texts[i] = ""                                      # empty_text
    for i in range(500, len(texts), 1999):
        texts[i] = "the same line once more\n" * 20       # repetition
    path = tmp_path_factory.mktemp("large") / "large.parquet"
    pq.write_table(pa.table({"text": texts}), path, row_group_size=5000, compression="none")
    return str(path)


def test_a_large_shard_runs_in_pieces_on_both_raylets_with_the_whole_shards_outputs(ray_cluster, large_shard,
                                                                                      tmp_path):
    from dataaudit.audit.pieces import split_parquet
    from dataaudit.pipelines.engine import MIN_PIECE_BYTES

    pieces = split_parquet(large_shard, load_config(None), MIN_PIECE_BYTES)   # 2 lanes: pieces of 8 MiB
    assert pieces is not None and len(pieces) == 2
    whole = tmp_path / "whole"
    run_audit([large_shard], load_config(None), whole, options=EngineOptions("local", workers=1))
    out = tmp_path / "ray"
    # --workers 2: the driver sizes the pieces for 2 lanes whatever machine it runs on
    proc = subprocess.run([sys.executable, "-m", "dataaudit.cli", "audit", large_shard, "--out", str(out), "--engine",
                           "ray", "--ray-address", ray_cluster.address, "--workers", "2"], capture_output=True,
                          text=True, timeout=JOB_SECONDS, env=ray_cluster.env(), cwd=REPO, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]   # warnings only
    run = _assert_same_outputs(out, whole)
    assert sum(run["nodes"].values()) == 2                # one unit per piece, on the cluster's nodes
    assert set(run["nodes"]) <= ray_cluster.node_ids(ray_cluster.status())
    assert _report(whole)["checks"]["empty_text"]["flagged"] == 46
