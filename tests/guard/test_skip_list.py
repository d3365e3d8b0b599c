"""Skip on resume: culprits confirmed by `dataaudit replay --skip-list` go to a skip-list.parquet (deduplicated,
rewritten atomically), and the device guard, the collate guard and the webdataset stage drop the samples it
names, counted as skipped_listed; --compare-device tells data from device/transient faults."""
from __future__ import annotations

import json

import pytest
import torch
from click.testing import CliRunner

from dataaudit.cli import main
from dataaudit.guard import CollateGuard, DeviceGuard, GuardedBatch, load_snapshot
from dataaudit.guard.replay import compare_device
from dataaudit.guard.skip_list import SkipList, append_skip_list, read_skip_list
from dataaudit.guard.webdataset_stage import GuardStage

from tests.guard.replay_model import make_square_loss
from tests.guard.test_loss_guard import B, batches
from tests.guard.test_replay import snapshot_of


def rows(path):
    return read_skip_list(path).to_pylist()


def test_append_deduplicates_and_keeps_the_first_reason(tmp_path):
    path = tmp_path / "sub" / "skip-list.parquet"
    assert rows(path) == []
    assert append_skip_list(path, [{"shard": "s.parquet", "key": "k1", "reason": "a"},
                                   {"shard": "s.parquet", "key": "k1", "reason": "b"},
                                   {"shard": "t.tar", "key": "k1", "reason": "c"}]) == 2
    assert append_skip_list(path, [{"shard": "t.tar", "key": "k1", "reason": "d"},
                                   {"shard": "t.tar", "key": "k2", "reason": "e"}]) == 1
    assert rows(path) == [{"shard": "s.parquet", "key": "k1", "reason": "a"},
                          {"shard": "t.tar", "key": "k1", "reason": "c"},
                          {"shard": "t.tar", "key": "k2", "reason": "e"}]
    assert sorted(p.name for p in path.parent.iterdir()) == ["skip-list.parquet"]   # no temporary left
    with pytest.raises(ValueError, match="without a shard or a key"):
        append_skip_list(path, [{"shard": None, "key": "k3", "reason": "x"}])
    sl = SkipList(path)
    assert len(sl) == 3
    assert sl.mask(["t.tar", "s.parquet", "s.parquet", None], ["k1", "k2", "k1", "k1"]).tolist() == \
        [True, False, True, False]
    assert sl.mask(None, ["k1"]) is None


def test_the_device_guard_drops_listed_samples_and_counts_them(tmp_path):
    path = tmp_path / "skip.parquet"
    append_skip_list(path, [{"shard": "s.parquet", "key": k, "reason": "r"} for k in ("k5", "k229", "k999")])
    g = DeviceGuard(batches(), None, policy="raise", snapshot_dir=None, skip_list=path)
    got = [(len(b["features"]), float(b["features"].max())) for b in g]
    # step 3 (rows 192-255) loses k229, its bad row: no bad batch is left
    assert got == [(63, 0.25), (64, 0.25), (64, 0.25), (63, 0.25), (64, 0.25)]
    s = g.summary()
    assert (s["skipped_listed"], g.skipped_listed, s["samples"], s["bad_batches"]) == (2, 2, 318, 0)
    assert g.profiler.summary()["skipped_listed"] == 2


def test_a_tuple_batch_loses_the_same_rows_in_every_entry(tmp_path):
    path = tmp_path / "skip.parquet"
    append_skip_list(path, [{"shard": "t", "key": "b", "reason": "r"}])
    x, y = torch.arange(6.0).reshape(3, 2), torch.tensor([0, 1, 2])
    raw = GuardedBatch((x, y, "not rows"), keys=["a", "b", "c"], shards=["t"] * 3)
    g = DeviceGuard([raw], None, policy="warn", snapshot_dir=None, names=("x", "y", "note"), skip_list=path)
    ((bx, by, note),) = list(g)
    assert bx.tolist() == [[0.0, 1.0], [4.0, 5.0]] and by.tolist() == [0, 2] and note == "not rows"
    assert g.summary()["skipped_listed"] == 1


def test_a_batch_that_is_all_listed_is_skipped(tmp_path):
    path = tmp_path / "skip.parquet"
    append_skip_list(path, [{"shard": "s.parquet", "key": f"k{i}", "reason": "r"} for i in range(B, 2 * B)])
    g = DeviceGuard(batches(3, bad_step=-1), None, policy="warn", snapshot_dir=None, skip_list=path)
    assert [b["features"].shape[0] for b in g] == [64, 64]   # step 1 (k64-k127) is not handed out
    assert g.summary()["skipped_listed"] == 64


def samples(n=6):
    return [{"x": torch.full((2,), float(i)), "__key__": f"k{i}", "__shard__": "a.tar"} for i in range(n)]


def test_the_collate_guard_drops_listed_samples_and_the_device_guard_counts_them(tmp_path):
    path = tmp_path / "skip.parquet"
    append_skip_list(path, [{"shard": "a.tar", "key": "k1", "reason": "r"},
                            {"shard": "a.tar", "key": "k4", "reason": "r"}])
    cg = CollateGuard(None, None, skip_list=str(path))
    batch = cg(samples())
    assert batch["__key__"] == ["k0", "k2", "k3", "k5"] and batch["x"][:, 0].tolist() == [0.0, 2.0, 3.0, 5.0]
    assert [d["key"] for d in batch["__guard__"]["dropped"]] == ["k1", "k4"]
    all_listed = cg(samples(2)[1:])   # only k1: kept for the device guard to drop the whole batch
    assert all_listed["__guard__"]["listed"] == [0]
    g = DeviceGuard([batch, all_listed], None, policy="warn", snapshot_dir=None)
    assert [len(b["x"]) for b in g] == [4]
    assert g.summary()["skipped_listed"] == 3


def test_the_webdataset_stage_drops_listed_samples(tmp_path):
    path = tmp_path / "skip.parquet"
    append_skip_list(path, [{"shard": "a.tar", "key": "k2", "reason": "r"}])
    stage = GuardStage(None, group=4, skip_list=path)
    out = [dict(s, __url__="a.tar") for s in samples()]
    for s in out:
        del s["__shard__"]
    kept = list(stage(out))
    assert [s["__key__"] for s in kept] == ["k0", "k1", "k3", "k4", "k5"]
    assert (stage.skipped_listed, stage.checked) == (1, 5)


def cli(*args):
    return CliRunner().invoke(main, ["replay", *map(str, args)])


def test_replay_appends_confirmed_culprits_once(tmp_path, monkeypatch):
    from tests.paths import REPO
    monkeypatch.chdir(REPO)
    snap = snapshot_of(batches(3, bad_step=2)[2], tmp_path)
    skip = tmp_path / "skip-list.parquet"
    r = cli(snap, "--model", "tests.guard.replay_model:make_loss", "--skip-list", skip, "--compare-device", "cpu")
    assert r.exit_code == 1, r.output
    assert "on cpu in float32 the loss is inf: data" in r.stdout
    assert f"skip list {skip}: 1 sample added" in r.stdout
    (row,) = rows(skip)
    assert (row["shard"], row["key"]) == ("s.parquet", "k165")
    assert row["reason"].startswith(f"replay: non-finite loss alone (snapshot {snap.name}, step 0, trace ")
    result = json.loads(snap.with_suffix(".replay.json").read_text())
    assert result["compare"] == {"device": "cpu", "reproduced": True, "loss": "inf", "verdict": "data"}
    r = cli(snap, "--model", "tests.guard.replay_model:make_loss", "--skip-list", skip)
    assert f"skip list {skip}: 0 samples added, 1 already listed" in r.stdout and len(rows(skip)) == 1


def test_a_fault_that_does_not_come_back_in_float32_is_not_listed(tmp_path, monkeypatch):
    from tests.paths import REPO
    monkeypatch.chdir(REPO)
    batch = batches(1, bad_step=0, value=300.0)[0]
    batch["features"] = batch["features"].half()   # 300.75 ** 2 overflows float16 (65504), not float32
    snap = snapshot_of(batch, tmp_path, make_square_loss())
    assert compare_device(load_snapshot(snap), make_square_loss(), "cpu") == {
        "device": "cpu", "reproduced": False, "loss": pytest.approx(300.75 ** 2 / 64 + 63 / 64), "verdict":
        "device/transient"}
    skip = tmp_path / "skip-list.parquet"
    r = cli(snap, "--model", "tests.guard.replay_model:make_square_loss", "--skip-list", skip,
            "--compare-device", "cpu")
    assert "device/transient (not reproduced there" in r.stdout
    assert f"skip list {skip}: nothing added (device/transient)" in r.stdout and not skip.exists()


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the refusal on a machine without CUDA")
@pytest.mark.parametrize("spec, message", [("cuda:0", "--compare-device cuda:0: no such CUDA device"),
                                           ("tpu", "--compare-device 'tpu': expected cpu or cuda:N")])
def test_compare_device_that_is_not_here_exits_2_one_line(tmp_path, spec, message):
    snap = snapshot_of(batches(1, bad_step=0)[0], tmp_path)
    r = cli(snap, "--model", "tests.guard.replay_model:make_loss", "--compare-device", spec)
    assert r.exit_code == 2 and message in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
