"""The device guard's step compiled with torch.compile (inductor, on CPU tensors here: the same traced function a GPU
compiles with Triton) gives what the eager step gives: flags, values, the acting rows, the masked batch and the
loss weights; one compiled call per step with no aten op dispatched outside it; a compile that fails falls back to
eager with the reason. The guard's device path is taken on CPU tensors by patching its host test."""
from __future__ import annotations

import logging
import math
import shutil

import pytest
import torch

from dataaudit.config import build_config
from dataaudit.guard import DeviceGuard
from dataaudit.guard import device as device_module
from dataaudit.guard.device_step import DeviceStep
from dataaudit.guard.plan import GuardPlan

pytestmark = pytest.mark.skipif(shutil.which("g++") is None and shutil.which("c++") is None,
                                reason="torch.compile's CPU backend needs a C++ compiler (g++)")

CONFIG = {"data": {"num_classes": 10, "vocab_size": 1000, "pad_id": 0, "context_length": 24,
                   "numeric_dtype": "float32"}, "checks": {"out_of_range": {"min": -100.0, "max": 100.0}}}


def batch(step: int, b: int = 8, t: int = 32) -> dict:
    g = torch.Generator().manual_seed(step)
    x = torch.rand(b, 3, 16, 16, generator=g)
    y = torch.randint(0, 10, (b,), generator=g)
    ids = torch.randint(1, 1000, (b, t), generator=g)
    m = torch.ones(b, t, dtype=torch.int64)
    m[:, 24:] = 0                 # 24 real tokens: not too long
    if step == 2:
        x[5, 0, 0, 0] = math.nan  # nonfinite (error)
        y[1] = 10                 # label_out_of_range (error)
        ids[3, 7] = 4000          # token_id_out_of_range (error)
        m[6] = 0                  # all_padding (a warning: not acted on)
        x[0, 1, 2, 3] = 500.0       # out_of_range and image_value_range (errors)
    return {"pixels": x, "label": y, "input_ids": ids, "attention_mask": m}


def _plan():
    return GuardPlan(build_config(CONFIG, "<test>"))


def test_compiled_step_gives_the_eager_results_with_nothing_dispatched_outside_it():
    eager, compiled = (DeviceStep(_plan(), frozenset({"error"}), -100, 0, compile=c) for c in (False, True))
    for step in range(3):
        e = eager.run(batch(step), frozenset(), "weigh")
        c = compiled.run(batch(step), frozenset(), "weigh")
        assert torch.equal(e[0], c[0]) and torch.equal(e[2], c[2]) and torch.equal(e[4], c[4])
        assert torch.allclose(e[1], c[1], equal_nan=True, rtol=1e-12, atol=0)
        assert all(torch.equal(e[3][k], c[3][k]) for k in e[3])
    assert (compiled.compiled_steps, compiled.summary(), eager.summary()) == (2, True, False)
    labels = [k.label for k in compiled.plan.calls]
    flagged = {labels[i]: c[0][i].nonzero().flatten().tolist() for i in range(len(labels)) if c[0][i].any()}
    assert flagged == {"out_of_range:pixels": [0], "image_value_range:pixels": [0], "nonfinite:pixels": [5], "label_out_of_range:label": [1],
                       "token_id_out_of_range:input_ids": [3], "all_padding:input_ids": [6]}
    assert c[2].nonzero().flatten().tolist() == [0, 1, 3, 5]          # the errors; all_padding only warns
    assert c[4].tolist() == [0.0, 0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 1.0]
    assert c[3]["label"].tolist()[:2] == [-100, -100] and c[3]["input_ids"][3].eq(0).all()
    assert c[3]["pixels"][5].eq(0).all() and c[3]["attention_mask"][3].eq(1).all()
    b3 = batch(3)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        compiled.run(b3, frozenset(), "weigh")
    names = [ev.name for ev in prof.events()]
    assert [n for n in names if n.startswith("aten::")] == []       # every op is inside the compiled call
    assert sum(n.startswith("Torch-Compiled Region") for n in names) == 1


def test_a_compile_that_fails_falls_back_to_eager_and_says_why(caplog):
    def no_compiler(gm, example_inputs):
        raise RuntimeError("no compiler on this machine")

    step = DeviceStep(_plan(), frozenset({"error"}), -100, 0, compile=no_compiler)
    eager = DeviceStep(_plan(), frozenset({"error"}), -100, 0)
    with caplog.at_level(logging.WARNING, logger="dataaudit.guard"):
        for s in range(4):
            got, want = step.run(batch(s), frozenset(), "act"), eager.run(batch(s), frozenset(), "act")
            assert torch.equal(got[0], want[0]) and torch.equal(got[2], want[2])
    assert step.compiled_steps == 0 and "no compiler on this machine" in step.summary()
    assert sum("torch.compile of the checks failed" in r.getMessage() for r in caplog.records) == 1


@pytest.mark.parametrize("policy", ["mask", "raise"])
def test_the_guard_compiled_on_its_device_path_finds_what_it_finds_eagerly(policy, monkeypatch):
    """DeviceGuard's accelerator path on CPU tensors (its host test patched), compiled and eager: the same
    findings, the same masked batches and loss weights."""
    monkeypatch.setattr(device_module, "_on_host", lambda data: False)
    runs = {}
    for compile in (False, True):
        guard = DeviceGuard([batch(s) for s in range(4)], build_config(CONFIG, "<test>"), policy=policy,
                            compile=compile, snapshot_dir=None, profile=False)
        outs = []
        try:
            for b in guard:
                outs.append({k: v.clone() for k, v in b.items()})
        except Exception as e:  # noqa: BLE001 (raise: the bad batch's error, compared below)
            outs.append(type(e).__name__)
        runs[compile] = (outs, [(f.step, f.check, f.position) for f in guard.findings], guard.device_step.summary())
    (eo, ef, es), (co, cf, cs) = runs[False], runs[True]
    assert (es, cs) == (False, True)
    assert ef == cf and {(s, c, p) for s, c, p in cf if c != "all_padding"} == {
        (2, "out_of_range", 0), (2, "image_value_range", 0), (2, "nonfinite", 5), (2, "label_out_of_range", 1), (2, "token_id_out_of_range", 3)}
    assert len(eo) == len(co)
    for a, b in zip(eo, co):
        assert (a == b) if isinstance(a, str) else all(torch.equal(a[k], b[k]) for k in a)
    if policy == "mask":
        assert co[2]["loss_weight"].tolist() == [0.0, 0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 1.0]
    else:
        assert co[-1] == "BadBatchError" and len(co) == 3


def test_the_loss_watch_compiled_gives_the_eager_verdicts():
    """LossWatch(compile=True): the same eight figures per loss as eagerly, over a curve with a 1e36 jump at step
    15, a NaN, a run of spikes (diverged) and a loss of per-sample values; every loss after the first one compiled,
    and nothing dispatched outside the compiled call."""
    from dataaudit.guard.loss import LossWatch
    losses = [round(1.78 - 0.01 * i, 2) for i in range(15)] + [1.3e36, math.nan] + [40.0] * 6 + [1.6]
    eager, compiled = LossWatch(window=8), LossWatch(window=8, compile=True)
    for i, v in enumerate(losses):
        loss = torch.full((4,), v, dtype=torch.float32) if i == 3 else torch.tensor(v, dtype=torch.float64)
        e, c = eager.update(loss).tolist(), compiled.update(loss).tolist()
        assert e == pytest.approx(c, nan_ok=True, rel=1e-12), i
    assert (compiled.judge.compiled_calls, compiled.judge.summary()) == (len(losses) - 1, True)
    assert compiled.ring.tolist() == eager.ring.tolist() and compiled.count.item() == eager.count.item() == 16
    loss = torch.tensor(1.55, dtype=torch.float64)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        compiled.update(loss)
    ops = [(ev.name, _root(ev)) for ev in prof.events() if ev.name.startswith("aten::")]
    # inside the compiled call: nanmedian, which inductor leaves to aten; outside it, only the CPU-only reads of
    # dynamo's guards on 0-dim float tensors of the host (a loss on a GPU has none)
    assert {n for n, r in ops if r.startswith("Torch-Compiled Region")} <= {
        "aten::nanmedian", "aten::clone", "aten::empty_strided", "aten::copy_", "aten::empty"}
    assert {n for n, r in ops if not r.startswith("Torch-Compiled Region")} <= {"aten::item",
                                                                                 "aten::_local_scalar_dense"}


def _root(ev) -> str:
    while ev.cpu_parent is not None:
        ev = ev.cpu_parent
    return ev.name


def test_the_fixture_defects_through_the_compiled_device_path_with_the_collate_guards_checks(
        fixture_dir, manifest, monkeypatch, tmp_path):
    """The fixture shards' 46 planted defects (tests/guard/test_guard.py) through DeviceGuard's device path under
    mask, compiled: the collate guard runs nonfinite and label_out_of_range on the samples (the compiled step
    excludes them and ORs their acting rows in), the device the rest; the same findings, batches and weights as
    eagerly, a smaller last batch included."""
    from torch.utils.data import DataLoader

    from dataaudit.checks import REGISTRY
    from dataaudit.guard import CollateGuard
    from dataaudit.guard.data import PadCollate, ShardSamples
    from tests.paths import REPO
    monkeypatch.setattr(device_module, "_on_host", lambda data: False)
    cfg = REPO / "fixtures" / "audit.toml"
    samples = ShardSamples([str(fixture_dir / s) for s in ("train-000.parquet", "train-001.parquet")],
                           columns=["features", "label", "input_ids", "attention_mask"])
    checks = {n for n, s in REGISTRY.items() if s.target in ("numeric", "image_tensor", "label", "tokens")}
    want = {(d["shard"], d["key"], d["check"]) for d in manifest["defects"]
            if d["shard"] in ("train-000.parquet", "train-001.parquet") and d["check"] in checks}
    runs = []
    for compile in (False, True):
        collate = CollateGuard(PadCollate(0), cfg, checks=("nonfinite", "label_out_of_range"))
        g = DeviceGuard(DataLoader(samples, batch_size=28, collate_fn=collate), cfg, policy="mask", checks="all",
                        act_on=("error", "warning", "info"), profile=False, snapshot_dir=tmp_path, compile=compile)
        outs = [{k: v.clone() for k, v in b.items() if isinstance(v, torch.Tensor)} for b in g]
        runs.append((outs, sorted((f.step, f.position, f.check, f.source) for f in g.findings), g))
    (eo, ef, eg), (co, cf, cg) = runs
    assert {(f.shard, f.key, f.check) for f in cg.findings} == want and len(want) == 46
    assert cf == ef and {s for _, _, _, s in cf} == {"collate", "device"}
    assert len(co) == len(eo) == 12 and co[-1]["label"].shape[0] == len(samples) - 11 * 28 < 28
    for a, b in zip(eo, co):
        assert a.keys() == b.keys() and all(torch.equal(torch.nan_to_num(a[k]), torch.nan_to_num(b[k])) for k in a)
    assert cg.device_step.summary() is True and cg.device_step.compiled_steps == 11
