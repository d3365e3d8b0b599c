"""`dataaudit replay`: names the planted culprit of a loss snapshot, with its trace ids, in a counted number of
forward passes; every culprit, several of them, and a group that fails only together; usage errors exit 2."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import torch
from click.testing import CliRunner

from dataaudit.cli import main
from dataaudit.guard import DeviceGuard, load_snapshot
from dataaudit.guard.device import BadLossError
from dataaudit.guard.replay import replay

from tests.guard.replay_model import make_group_loss, make_loss
from tests.guard.test_loss_guard import B, batches
from tests.paths import REPO


def snapshot_of(batch, tmp_path, loss_fn=None):
    g = DeviceGuard([batch], None, policy="raise", snapshot_dir=tmp_path, profile=False)
    with pytest.raises(BadLossError) as ei:
        for b in g:
            g.watch_loss((loss_fn or make_loss())(b))
    return ei.value.snapshot


def test_bisect_names_the_culprit_in_9_passes(tmp_path):
    snap = load_snapshot(snapshot_of(batches(1, bad_step=0)[0], tmp_path))
    r = replay(snap, make_loss())
    # full batch, one left half per level (6), the last (implied) half alone, the 63 others: 1 + 6 + 1 + 1
    assert r["forward_passes"] == 9 and r["reproduced"] is True and r["together"] == []
    assert r["culprits"] == [{"position": 37, "shard": "s.parquet", "key": "k37", "row": 37}]
    per = replay(snap, make_loss(), mode="per-sample")
    assert per["forward_passes"] == 1 + B and per["culprits"] == r["culprits"]


def test_bisect_finds_every_culprit(tmp_path):
    batch = batches(1, bad_step=0, culprit=5)[0]
    batch["features"][50, 0] = -1e30   # finite (the data checks pass it), its loss is not
    r = replay(load_snapshot(snapshot_of(batch, tmp_path)), make_loss())
    assert [c["position"] for c in r["culprits"]] == [5, 50]
    assert r["forward_passes"] == 16  # 1 + 6 + 1 (row 5 alone) + 1 (the rest: still bad) + 6 (row 50) + 1


def test_samples_that_fail_only_together(tmp_path):
    x = torch.zeros(8, 4)
    x[2, 0] = x[6, 0] = -6.0   # 10 - 6 > 0 alone, 10 - 12 < 0 together: log -> NaN
    batch = {"features": x, "__key__": [f"g{i}" for i in range(8)], "__shard__": ["t.jsonl"] * 8,
             "__row__": list(range(8))}
    path = snapshot_of(batch, tmp_path, make_group_loss())
    r = replay(load_snapshot(path), make_group_loss())
    assert r["culprits"] == [] and [t["position"] for t in r["together"]] == list(range(8))
    assert r["forward_passes"] == 5  # full, [0:4], [4:6], [6], then [7] alone: fine -> no single culprit
    p = cli(path, "--model", "tests.guard.replay_model:make_group_loss")
    assert p.returncode == 1, p.stderr
    assert p.stdout.splitlines()[1:4] == ["8 samples give a non-finite loss only together:",
                                          "  position 0: shard t.jsonl, key g0, row 0",
                                          "  position 1: shard t.jsonl, key g1, row 1"]


def cli(*args, cwd=REPO):
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "dataaudit.cli", "replay", *map(str, args)], cwd=cwd, env=env,
                          capture_output=True, text=True)


def test_cli_prints_the_culprit_and_writes_json(tmp_path):
    # the third batch: the culprit is at position 37 of the batch, row 165 of its shard (issue 36: "row" is only
    # ever the record's index in its shard)
    path = snapshot_of(batches(3, bad_step=2)[2], tmp_path)
    p = cli(path, "--model", "tests.guard.replay_model:make_loss")
    assert p.returncode == 1, p.stderr
    assert p.stdout.splitlines() == [
        f"replay {path} (step 0, 64 samples, bisect): 9 forward passes",
        "1 culprit (non-finite loss alone):",
        "  position 37: shard s.parquet, key k165, row 165",
        f"wrote {path.with_suffix('.replay.json')}"]
    def strict(constant):   # NaN / Infinity are not JSON: strict readers (jq, JavaScript) refuse them
        raise AssertionError(f"non-JSON constant {constant} in replay.json")

    result = json.loads(path.with_suffix(".replay.json").read_text(), parse_constant=strict)
    assert result["loss"]["value"] == "inf"
    assert result["culprits"] == [{"position": 37, "shard": "s.parquet", "key": "k165", "row": 165}]
    assert (result["mode"], result["forward_passes"], result["step"]) == ("bisect", 9, 0)
    p = cli(path, "--model", "tests.guard.replay_model:make_group_loss", "--per-sample",
            "--out", tmp_path / "r.json")
    assert p.returncode == 0 and "not reproduced" in p.stdout  # that loss is finite on this batch
    assert json.loads((tmp_path / "r.json").read_text())["forward_passes"] == 1 + B


@pytest.mark.parametrize("model, message", [
    ("tests.guard.no_such_module:f", "cannot import 'tests.guard.no_such_module'"),
    ("tests.guard.replay_model:missing", "has no callable 'missing'"),
    ("tests.guard.replay_model:not_callable", "has no callable 'not_callable'"),
    ("tests.guard.replay_model:broken", "the factory failed: RuntimeError: no checkpoint here"),
    ("nocolon", "expected MODULE:FACTORY"),
])
def test_cli_usage_errors_exit_2_with_one_line(tmp_path, model, message, monkeypatch):
    monkeypatch.chdir(REPO)
    path = snapshot_of(batches(1, bad_step=0)[0], tmp_path)
    r = CliRunner().invoke(main, ["replay", str(path), "--model", model])
    assert r.exit_code == 2 and message in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_cli_unreadable_snapshot_exits_2(tmp_path):
    bad = tmp_path / "x.safetensors"
    bad.write_text("not a snapshot")
    r = CliRunner().invoke(main, ["replay", str(bad), "--model", "tests.guard.replay_model:make_loss"])
    assert r.exit_code == 2 and "not a readable guard snapshot" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_a_snapshot_that_is_a_fifo_or_a_device_is_refused_unread(tmp_path):
    """safetensors' own open by name blocked on a FIFO (issue 38, F26): the bytes come through dataaudit.io."""
    import os

    import pytest

    from dataaudit.io import NotRegularFileError

    os.mkfifo(tmp_path / "pipe.safetensors")
    os.symlink("/dev/zero", tmp_path / "zero.safetensors")
    for name in ("pipe.safetensors", "zero.safetensors"):
        with pytest.raises(NotRegularFileError, match="not a regular file"):
            load_snapshot(tmp_path / name)
    (tmp_path / "short.safetensors").write_bytes(b"\x10\x00")
    with pytest.raises(ValueError, match="shorter than a safetensors header"):
        load_snapshot(tmp_path / "short.safetensors")
