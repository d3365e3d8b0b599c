"""A Ray worker that dies mid-shard leads to a retry of that shard, not a failed job; the report is complete."""
from __future__ import annotations

import os
import re

import pyarrow.parquet as pq
import pytest

from dataaudit.config import load_config
from dataaudit.pipelines.audit import run_audit
from dataaudit.pipelines.engine import EngineOptions
from tests.paths import REPO


def test_worker_death_mid_shard_is_retried(fixture_dir, tmp_path, ray_session):
    config = load_config(REPO / "fixtures" / "audit.toml")
    paths = [str(fixture_dir / n) for n in ("train-000.parquet", "images-000.tar", "train-001.parquet")]
    marker = tmp_path / "died-once"

    def dying_stage(path, config, **kwargs):
        # First attempt at the tar: the worker process dies after reading part of it, as on an OOM kill.
        from dataaudit.audit.shard import audit_shard

        if path.endswith(".tar") and not marker.exists():
            def die_after_first_batch(rows):
                marker.write_text("x")
                os._exit(137)
            return audit_shard(path, config, batch_rows=16, on_batch=die_after_first_batch)
        return audit_shard(path, config, **kwargs)

    report = run_audit(paths, config, tmp_path / "ray", options=EngineOptions("ray"), stage=dying_stage)
    assert marker.exists()                       # the worker really died once
    reference = run_audit(paths, config, tmp_path / "local", options=EngineOptions("local"))
    report.pop("run"), reference.pop("run")
    assert report == reference
    assert pq.read_table(tmp_path / "ray" / "flags.parquet").equals(pq.read_table(tmp_path / "local" / "flags.parquet"))
    assert report["totals"]["samples"] == 200 + 81 + 120



def _double(x):
    return 2 * x     # this test module is not importable on Ray's workers: a node without the job's code


def test_a_node_that_cannot_load_the_code_or_has_another_version_is_one_line(ray_session, monkeypatch):
    from dataaudit.pipelines import tasks
    from dataaudit.pipelines.run_record import package_version

    with pytest.raises(tasks.NodeMismatch) as err:
        tasks.run_tasks([(0, 1)], _double, (), lambda *a: None, engine="ray")
    assert str(err.value) == ("1: a Ray worker could not load the job's code (ModuleNotFoundError: No module named "
                              "'test_reliability_ray'): every node of the cluster needs dataaudit installed, the "
                              "same version as here")
    done = {}
    tasks.run_tasks([(0, -1), (1, 2)], abs, (), lambda i, item, r: done.update({i: r}), engine="ray")
    assert done == {0: 1, 1: 2}                                   # same version, code the workers have: runs
    monkeypatch.setattr(tasks, "package_version", lambda: "0.0.0+elsewhere")   # this side only; workers keep theirs
    with pytest.raises(tasks.NodeMismatch) as err:
        tasks.run_tasks([(0, -1)], abs, (), lambda *a: None, engine="ray")
    assert re.fullmatch(rf"Ray node [0-9a-f]{{56}} has dataaudit {re.escape(package_version())}, this machine "
                        r"0\.0\.0\+elsewhere: install the same version on every node of the cluster", str(err.value))
