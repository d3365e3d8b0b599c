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


def test_callback_watches_gradients(tmp_path):
    from dataaudit.guard.grads import BadGradError
    torch.manual_seed(0)
    clean = batches()[0]
    model = torch.nn.Linear(16, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    trainer = SimpleNamespace(logger=None, global_step=0)
    cb = GuardCallback(CFG, policy="skip")
    dropped = []
    for nan in (False, True, False):
        cb.on_train_batch_start(trainer, model, dict(clean), 0)
        model(clean["features"]).sum().backward()
        if nan:
            model.weight.grad[0, 5] = math.nan
        cb.on_before_optimizer_step(trainer, model, opt)
        dropped.append(model.weight.grad is None)
        opt.step()
        opt.zero_grad()
        cb.on_train_batch_end(trainer, model, None, clean, 0)
    assert dropped == [False, True, False] and torch.isfinite(model.weight).all()
    assert [(e["step"], e["kind"], e["top"][0]["name"]) for e in cb.guard.grad_events] == [(1, "nonfinite", "weight")]
    assert cb.summary()["grad_watch"] == "on"

    cb = GuardCallback(CFG, policy="raise", snapshot_dir=tmp_path)
    cb.on_train_batch_start(trainer, model, dict(clean), 0)
    model(clean["features"]).sum().backward()
    model.weight.grad[0, 5] = math.inf
    with pytest.raises(BadGradError) as ei:
        cb.on_before_optimizer_step(trainer, model, opt)
    assert ei.value.kind == "nonfinite" and ei.value.snapshot.exists()

    # fp16 loss scaling: an overflow is the GradScaler's to skip, so the watch is off and says so
    scaled = SimpleNamespace(logger=None, global_step=0, precision_plugin=SimpleNamespace(scaler=object()))
    cb = GuardCallback(CFG, policy="raise", snapshot_dir=tmp_path)
    cb.on_train_batch_start(scaled, model, dict(clean), 0)
    cb.on_before_optimizer_step(scaled, model, opt)   # the inf gradient is still there: not judged
    assert cb.guard.grad_events == [] and cb.summary()["grad_watch"].startswith("off: fp16 loss scaling")
    assert GuardCallback(CFG, grads=False).summary()["grad_watch"] == "off: grads=False"
