"""The Lightning callback's hooks with a stub trainer (lightning itself is optional and not needed here)."""
from __future__ import annotations

import math
from types import SimpleNamespace

import pytest
import torch

from dataaudit.guard import BadBatchError, GuardCallback
from dataaudit.guard.lightning import LIGHTNING_AVAILABLE

from tests.paths import REPO

CFG = REPO / "fixtures" / "audit.toml"


class StubLogger:
    def __init__(self):
        self.calls = []

    def log_metrics(self, metrics, step=None):
        self.calls.append((step, dict(metrics)))


def batches():
    """Three batches as Lightning hands them over (already on the device), with provenance entries."""
    out = []
    for b in range(3):
        x = torch.randn(4, 16)
        y = torch.tensor([1, 2, 3, 4])
        if b == 1:
            x[2, 3] = math.nan
            y[0] = 17
        out.append({"features": x, "label": y, "__key__": [f"k{b}{i}" for i in range(4)],
                    "__shard__": ["s.parquet"] * 4})
    return out


def run(cb, data, trainer):
    for i, batch in enumerate(data):
        cb.on_train_batch_start(trainer, None, batch, i)
        yield batch
        cb.on_train_batch_end(trainer, None, None, batch, i)
        trainer.global_step += 1
    cb.on_train_epoch_end(trainer, None)
    cb.on_train_end(trainer, None)


def test_callback_base_class():
    if LIGHTNING_AVAILABLE:
        from lightning.pytorch.callbacks import Callback  # pragma: no cover
        assert issubclass(GuardCallback, Callback)  # pragma: no cover
    else:
        assert GuardCallback.__mro__[1] is object


def test_callback_mask_in_place_profiles_and_logs():
    trainer = SimpleNamespace(logger=StubLogger(), global_step=0)
    cb = GuardCallback(CFG, policy="mask", log_every=2)
    data = batches()
    seen = [dict(b) for b in run(cb, data, trainer)]
    assert all("__key__" not in b and "__shard__" not in b for b in seen)  # provenance consumed
    b1 = data[1]  # changed in place: Lightning passes this same dict to training_step
    assert b1["label"].tolist() == [-100, 2, -100, 4] and b1["loss_weight"].tolist() == [0.0, 1.0, 0.0, 1.0]
    assert torch.isfinite(b1["features"]).all() and (b1["features"][[0, 2]] == 0).all()
    assert data[0]["loss_weight"].tolist() == [1.0] * 4
    assert [(f.step, f.position, f.key, f.check, f.action) for f in cb.findings] == [
        (1, 2, "k12", "nonfinite", "masked"), (1, 0, "k10", "label_out_of_range", "masked")]
    s = cb.summary()
    assert s["steps"] == 3 and s["samples"] == 12 and s["bad_batches_by_check"] == {
        "nonfinite:features": 1, "label_out_of_range:label": 1}
    assert s["copy_s"] == 0.0 and s["wall_s"] == pytest.approx(s["wait_s"] + s["guard_s"] + s["compute_s"])
    steps = [c[0] for c in trainer.logger.calls]
    assert steps == [1, 3]  # every 2 steps (at the end of the second batch), then at epoch end
    m = trainer.logger.calls[-1][1]
    assert m["guard/steps"] == 3.0 and m["guard/bad_batches"] == 1.0
    assert m["guard/bad_batches/nonfinite:features"] == 1.0 and "guard/samples_per_s" in m


def test_callback_skip_and_raise(tmp_path):
    trainer = SimpleNamespace(logger=None, global_step=0)
    cb = GuardCallback(CFG, policy="skip")
    flags = []
    for b in run(cb, batches(), trainer):
        flags.append(cb.skip_requested)
    assert flags == [False, True, False]
    assert cb.summary()["skipped_batches"] == 1 and cb.summary()["steps"] == 2

    cb = GuardCallback(CFG, policy="raise", snapshot_dir=tmp_path)
    with pytest.raises(BadBatchError, match=r"nonfinite:features at \[2=s.parquet:k12\]") as ei:
        list(run(cb, batches(), trainer))
    assert ei.value.step == 1 and ei.value.snapshot.exists()
