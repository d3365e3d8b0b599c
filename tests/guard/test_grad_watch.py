"""The gradient watch: total, per-group and per-parameter norms on the gradients' device, a non-finite or large
total norm named by its largest parameters, and the loss watch's policies (skip the step, raise with a snapshot,
warn)."""
from __future__ import annotations

import math

import pytest
import torch

from dataaudit.guard import DeviceGuard, load_snapshot
from dataaudit.guard.grads import BadGradError, GradWatch, named_grads

from tests.guard.test_loss_guard import CULPRIT, batches


class Tiny(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = torch.nn.Linear(4, 3)
        self.head = torch.nn.Linear(3, 1)

    def forward(self, x):
        return self.head(torch.tanh(self.encoder(x)))


def planted(model):
    """Gradients with known norms: encoder.weight 3, encoder.bias 4, head.weight 12, head.bias 0."""
    for p in model.parameters():
        p.grad = torch.zeros_like(p)
    model.encoder.weight.grad[0, 0] = 3.0
    model.encoder.bias.grad[2] = 4.0
    model.head.weight.grad[0, 1] = 12.0
    return model


def test_norms_groups_and_the_largest_parameters_exact():
    model = planted(Tiny())
    w = GradWatch(max_grad_norm=10.0, top=3)
    packed, names, groups = w.update(named_grads(model))
    assert names == ("encoder.weight", "encoder.bias", "head.weight", "head.bias") and groups == ["encoder", "head"]
    # total 13 (sqrt(9 + 16 + 144)), above 10; groups encoder 5, head 12; top: head.weight, encoder.bias/weight
    assert packed.tolist() == [13.0, 0.0, 1.0, 5.0, 12.0, 12.0, 4.0, 3.0, 2.0, 1.0, 0.0]
    assert packed.dtype == torch.float64


def test_a_planted_inf_gradient_is_named_first_under_warn():
    model = planted(Tiny())
    model.head.bias.grad[0] = math.inf
    g = DeviceGuard([{"x": torch.zeros(2, 4)}], None, policy="warn", snapshot_dir=None, profile=False,
                    grad_top=2)
    for _ in g:
        assert g.watch_grads(model) is False
        assert g.grad_ok.item() is False
    (ev,) = g.grad_events
    assert (ev["step"], ev["kind"], ev["total_norm"], ev["action"]) == (0, "nonfinite", math.inf, "warned")
    assert ev["top"] == [{"name": "head.bias", "norm": math.inf}, {"name": "head.weight", "norm": 12.0}]
    assert ev["groups"] == {"encoder": 5.0, "head": math.inf}
    assert g.summary()["grad_events"] == 1


def train(policy, tmp_path, max_grad_norm=None):
    """Backward through a linear encoder + frozen head on the loss-guard test batches (row 37 of step 3 holds
    1e6: the encoder's gradient norms are about 1e9 there, about 1 elsewhere); skipped optimizer steps and the
    guard."""
    torch.manual_seed(0)
    model = Tiny()
    model.encoder = torch.nn.Linear(4, 3)
    model.forward = lambda x: model.head(model.encoder(x))
    model.head.requires_grad_(False)
    g = DeviceGuard(batches(value=1e6), None, policy=policy, snapshot_dir=tmp_path, profile=False,
                    max_grad_norm=max_grad_norm, checks=[])
    skipped = []
    for b in g:
        model.zero_grad()
        model(b["features"]).pow(2).mean().backward()
        skipped.append(g.watch_grads(model))
    return skipped, g


def test_skip_returns_true_for_the_bad_step_only(tmp_path):
    skipped, g = train("skip", tmp_path, max_grad_norm=1e6)
    assert skipped == [False, False, False, True, False]
    assert [(e["step"], e["action"]) for e in g.grad_events] == [(3, "skipped step")]
    assert g.skip_step is False   # the last step was fine


def test_raise_names_the_parameters_and_snapshots_the_batch(tmp_path):
    with pytest.raises(BadGradError) as ei:
        train("raise", tmp_path, max_grad_norm=1e6)
    err = ei.value
    assert (err.step, err.kind) == (3, "large") and [n for n, _ in err.top] == ["encoder.weight", "encoder.bias"]
    assert err.norm > 1e8 and err.top[0][1] > 1e8 > 1e3 > err.top[1][1]
    assert "large gradient norm" in str(err) and "> max_grad_norm 1e+06; largest: encoder.weight" in str(err)
    snap = load_snapshot(err.snapshot)
    assert (snap.step, snap.meta["reason"], snap.keys[CULPRIT]) == (3, "grads", "k229")
    assert snap.batch["features"][CULPRIT, 2].item() == 1e6


def test_no_host_read_on_the_meta_device():
    """warn and (late) raise read nothing back: meta raises on any data-dependent op (the CUDA path's stand-in
    here; tests/guard/test_watch_cuda.py runs it under the sync debug mode)."""
    meta = torch.device("meta")
    model = Tiny().to(meta)
    for policy in ("warn", "raise"):
        g = DeviceGuard(batches(2, bad_step=-1), None, device=meta, policy=policy, profile=False, max_grad_norm=1.0)
        for b in g:
            model.zero_grad()
            model(b["features"]).sum().backward()
            assert g.watch_grads(model) is False and g.grad_ok.device == meta
        assert g.grad_events == []
