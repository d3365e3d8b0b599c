"""LossGuard, the device guard's side of the loss watch, on its own: DeviceGuard.watch_loss hands it the loss,
the batch and the step; the batch handed out is the one a loss comes from (with the RNG state once losses are
watched); the verdict's event, snapshot cap and policy; on CUDA at most MAX_HELD losses wait to be read (a stand-in
queue here: tests/guard/test_guard_cuda.py runs the real one)."""
from __future__ import annotations

import math
from types import SimpleNamespace

import pytest
import torch

from dataaudit.guard import DeviceGuard, GuardOptions, load_snapshot
from dataaudit.guard.findings import FindingsRecord
from dataaudit.guard.loss import MAX_HELD, BadLossError, LossEntry, LossGuard
from dataaudit.guard.plan import GuardPlan


class Profiler:
    def __init__(self):
        self.bad = []

    def record_bad(self, checks, action):
        self.bad.append((checks, action))


class Queue:
    """A ReadbackQueue stand-in: keeps what `later` queues; a drain lands the oldest items."""

    def __init__(self):
        self.pending, self.drains = [], []

    def later(self, tensors, item, land):
        self.pending.append((tensors, item, land))

    def drain(self, block, limit=None):
        self.drains.append((block, limit))
        for _ in range(limit or len(self.pending)):
            tensors, item, land = self.pending.pop(0)
            land(item, tuple(t.clone() for t in tensors))


def loss_guard(policy="warn", snapshot_dir=None, **kw):
    o = GuardOptions(policy=policy, snapshot_dir=snapshot_dir, profile=False, **kw)
    plan = GuardPlan(None)
    record = FindingsRecord(plan, o, Profiler())
    return LossGuard(o, plan, None, Queue(), record)


def test_watch_loss_delegates_the_loss_the_batch_and_the_step():
    g = DeviceGuard([{"x": torch.zeros(2, 3)}] * 2, None, profile=False)
    calls = []
    g.loss_guard.check = lambda loss, batch, step: calls.append((loss, batch, step)) or "verdict"
    loss, other = torch.tensor(1.5), {"x": torch.ones(1, 3)}
    for b in g:
        assert g.watch_loss(loss) == "verdict" and g.watch_loss(loss, other) == "verdict"
    assert [(c[0] is loss, c[1] is other, c[2]) for c in calls] == [(True, False, 0), (True, True, 0),
                                                                   (True, False, 1), (True, True, 1)]
    assert calls[0][1] is None
    # the guard's loss figures are its LossGuard's
    assert g.loss_watch is g.loss_guard.watch and g.loss_events is g.loss_guard.events
    assert g.skip_step is False and g.loss_guard.handed[1] is b


def test_the_handed_batch_keeps_its_rng_state_once_losses_are_watched():
    lg = loss_guard()
    with pytest.raises(RuntimeError, match="^watch_loss: no batch was handed out by this guard yet$"):
        lg.check(torch.tensor(1.0))
    batch, e0, e1 = {"x": torch.zeros(2)}, SimpleNamespace(step=0), SimpleNamespace(step=1)
    lg.hand_out(e0, batch)
    assert lg.handed == (e0, batch, None)   # no loss watched yet: no RNG state taken
    assert lg.check(torch.tensor(1.0)) is False and lg.events == []
    state = torch.get_rng_state()
    lg.hand_out(e1, batch)
    assert lg.handed[:2] == (e1, batch) and torch.equal(lg.handed[2]["cpu"], state)
    assert set(lg.handed[2]) == {"cpu"}
    lg.hand_out(SimpleNamespace(step=2), None)   # skipped: no batch for a loss to come from
    assert lg.handed is None


def test_a_bad_loss_is_recorded_with_exact_figures_then_the_policy_acts():
    lg = loss_guard("warn", loss_spike=4.0)
    lg.verdict(LossEntry(None, None, {}, None, 7), [math.inf, 1.0, 0.0, 2.0])
    (ev,) = lg.events
    assert {k: v for k, v in ev.items() if k != "trace_id"} == {
        "step": 7, "value": math.inf, "kind": "nonfinite", "reference": 2.0, "spike_factor": 4.0,
        "threshold": 8.0, "ceiling": None, "snapshot": None, "action": "warned"}
    assert len(ev["trace_id"]) == 32 and lg.record.profiler.bad == [(["loss:nonfinite"], "warned")]
    assert lg.skip_step is False
    lg.verdict(LossEntry(None, None, {}, None, 8), [3.0, 0.0, 0.0, 2.0])   # a good loss: nothing
    assert len(lg.events) == 1

    lg = loss_guard("raise", loss_spike=5.0)
    with pytest.raises(BadLossError) as ei:
        lg.verdict(LossEntry(None, None, {}, None, 3), [11.0, 0.0, 1.0, 2.0])
    assert (ei.value.step, ei.value.kind, ei.value.loss, ei.value.snapshot) == (3, "spike", 11.0, None)
    assert "spiking loss 11 at step 3" in str(ei.value) and "> 10 (5 x median of recent losses 2, and at least 20 median absolute deviations above it)" in str(ei.value)
    assert lg.events[0]["action"] == "raised"

    for policy in ("skip", "mask"):
        lg = loss_guard(policy)
        lg.hand_out(None, {"x": torch.zeros(1)})
        assert lg.check(torch.tensor(math.nan), step=5) is True and lg.skip_step is True
        assert (lg.events[0]["step"], lg.events[0]["action"]) == (5, "skipped step")
        assert lg.check(torch.tensor(1.0)) is False and lg.skip_step is False


def test_loss_snapshots_are_capped_and_shared_with_the_record(tmp_path):
    lg = loss_guard("warn", snapshot_dir=tmp_path, loss_snapshots=1)
    batch = {"x": torch.arange(4.0)}
    for step in (2, 4):
        lg.verdict(LossEntry(None, batch, {"cpu": torch.get_rng_state()}, None, step), [math.nan, 1.0, 0.0, 0.0])
    assert [ev["step"] for ev in lg.events] == [2, 4]
    assert lg.events[1]["snapshot"] is None and lg.record.snapshots == [lg.events[0]["snapshot"]]
    snap = load_snapshot(lg.events[0]["snapshot"])
    assert (snap.step, snap.loss["kind"]) == (2, "nonfinite") and snap.batch["x"].tolist() == [0.0, 1.0, 2.0, 3.0]


class CudaLike:
    """What LossWatch.update returns, as if on a CUDA device (the verdict is read back late)."""

    def __init__(self, packed):
        self.packed = torch.tensor(packed, dtype=torch.float64)
        self.device = torch.device("cuda")

    def clone(self):
        return self.packed.clone()


def test_at_most_max_held_losses_wait_to_be_read():
    lg = loss_guard("warn")
    lg.watch = SimpleNamespace(spike_factor=5.0, update=lambda loss: CudaLike([float(loss), 0.0, 0.0, 1.0]))
    lg.hand_out(SimpleNamespace(step=0), {"x": torch.zeros(1)})
    for i in range(MAX_HELD):
        assert lg.check(torch.tensor(float(i))) is False
    assert (lg.held, len(lg.readback.pending), lg.readback.drains) == (MAX_HELD, MAX_HELD, [])
    assert lg.check(torch.tensor(99.0)) is False   # one more: the oldest is read first
    assert (lg.held, len(lg.readback.pending), lg.readback.drains) == (MAX_HELD, MAX_HELD, [(True, 1)])
    assert lg.readback.pending[0][1].packed.packed.tolist() == [1.0, 0.0, 0.0, 1.0]
    lg.readback.drain(block=True)
    assert lg.held == 0 and lg.events == []
