"""The read-back queue: items land in the order they were queued, a non-blocking drain stops at the first copy not
complete, a blocking one waits (`limit` at a time), a landing that raises leaves the item off the queue; batch
flags land on the host at once on the CPU and never on the meta device; a BatchEntry reads its values lazily.
CUDA events and pinned memory are stood in for here (tests/guard/test_guard_cuda.py runs the real ones)."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from dataaudit.guard import readback
from dataaudit.guard.plan import BatchChecks, CheckCall, HostChecks
from dataaudit.guard.readback import BatchEntry, ReadbackQueue, read_now

CALLS = (CheckCall("nonfinite", "x", "error", ()), CheckCall("constant", "x", "warning", ()))


class FakeEvent:
    """A CUDA event stand-in: complete once `done` is set; records its synchronize calls."""

    def __init__(self, done=False):
        self.done, self.waited = done, 0

    def record(self):
        pass

    def query(self):
        return self.done

    def synchronize(self):
        self.waited += 1
        self.done = True


def entry_of(flagged, value, step=0) -> BatchEntry:
    checks = BatchChecks(CALLS, flagged, value)
    return BatchEntry(step, flagged.shape[1], None, None, None, checks, 2, [True, False], 0.0)


def queue():
    landed, drains = [], []
    q = ReadbackQueue(landed.append, lambda: drains.append(len(q)))
    return q, landed, drains


def test_drain_lands_in_queue_order_and_stops_at_the_first_incomplete_copy():
    q, landed, drains = queue()
    got = []
    events = [FakeEvent(True), FakeEvent(False), FakeEvent(True)]
    for i, ev in enumerate(events):
        q.pending.append((ev, (i * 10,), f"item{i}", lambda item, staged: got.append((item, staged))))
    q.drain(block=False)
    # item2's copy is complete, but it waits behind item1: order is the queue's
    assert got == [("item0", (0,))] and len(q) == 2 and drains == [2]
    q.drain(block=True, limit=1)
    assert got == [("item0", (0,)), ("item1", (10,))] and events[1].waited == 1 and drains == [2, 1]
    q.drain(block=True)
    assert [g[0] for g in got] == ["item0", "item1", "item2"] and events[2].waited == 1
    assert len(q) == 0 and drains == [2, 1, 0] and landed == []


def test_a_landing_that_raises_is_off_the_queue_and_after_drain_is_not_called():
    q, _, drains = queue()

    def boom(item, staged):
        raise RuntimeError(f"late raise of {item}")

    q.pending.append((FakeEvent(True), (), "bad", boom))
    q.pending.append((FakeEvent(True), (), "next", lambda item, staged: None))
    with pytest.raises(RuntimeError, match="late raise of bad"):
        q.drain(block=False)
    assert [p[2] for p in q.pending] == ["next"] and drains == []


def test_stage_on_the_cpu_hands_the_flags_on_at_once():
    q, landed, _ = queue()
    e = entry_of(torch.tensor([[False, True, False], [False, False, False]]),
                 torch.tensor([[0.0, np.inf, 0.0], [1.0, 2.0, 3.0]], dtype=torch.float64))
    q.stage(e, torch.tensor(7))
    assert landed == [e] and e.read and len(q) == 0 and e.tokens_host == 7 and type(e.tokens_host) is int
    assert e.flagged_host.tolist() == [[False, True, False], [False, False, False]]
    assert e.value_host.tolist() == [[0.0, np.inf, 0.0], [1.0, 2.0, 3.0]]


def test_stage_on_the_meta_device_reads_nothing():
    q, landed, _ = queue()
    e = entry_of(torch.zeros(2, 4, dtype=torch.bool, device="meta"),
                 torch.zeros(2, 4, dtype=torch.float64, device="meta"))
    q.stage(e, torch.zeros((), dtype=torch.int64, device="meta"))
    assert landed == [] and len(q) == 0 and e.read
    assert (e.flagged_host, e.value_host, e.tokens_host) == (None, None, 0)


def test_later_copies_behind_one_event_and_lands_the_batch(monkeypatch):
    """The CUDA path with the event and the pinned copy stood in for: flags, values and the token count land on
    the entry (tokens as an int, a plain int passing through), then on_read."""
    events = []

    def fake_event(*args, **kwargs):
        events.append(FakeEvent())
        return events[-1]

    monkeypatch.setattr(torch.cuda, "Event", fake_event)
    monkeypatch.setattr(readback, "pinned_copy", lambda t: t.clone())
    q, landed, _ = queue()
    e = entry_of(torch.tensor([[True, False], [False, False]]), torch.tensor([[np.nan, 0.0], [0.5, 0.5]],
                                                                           dtype=torch.float64), step=4)
    q.later((e.checks.flagged, e.checks.value, torch.tensor(12)), e, q._land_batch)
    q.later((torch.tensor([1.0]), 3), "loss", lambda item, staged: landed.append((item, staged[1])))
    assert len(events) == 2 and len(q) == 2 and not e.read
    q.drain(block=False)
    assert len(q) == 2 and landed == []
    events[0].done = True
    q.drain(block=False)
    assert landed == [e] and e.read and e.tokens_host == 12 and type(e.tokens_host) is int
    assert e.flagged_host.tolist() == [[True, False], [False, False]] and np.isnan(e.value_host[0, 0])
    assert e.gpu is None   # no timing events on this entry
    q.drain(block=True)
    assert landed == [e, ("loss", 3)] and events[1].waited == 1


def test_read_now_and_the_lazy_values_of_a_host_result():
    e = entry_of(torch.tensor([[False, True], [False, False]]), torch.tensor([[0.0, 9.0], [0.0, 0.0]],
                                                                            dtype=torch.float64))
    read_now(e)
    assert e.read and e.flagged_host.tolist() == [[False, True], [False, False]]
    assert e.value_host.tolist() == [[0.0, 9.0], [0.0, 0.0]]
    before = e.flagged_host
    read_now(e)   # read once
    assert e.flagged_host is before

    host = HostChecks(CALLS[:1], np.array([[False, True]]), None, value_row=torch.tensor([1.5, 2.5],
                                                                                         dtype=torch.float64))
    lazy = BatchEntry(0, 2, None, None, None, host, 1, [True], 0.0)
    lazy.value_from = host
    assert "value_np" not in host.__dict__   # nothing built until the values are asked for
    assert lazy.value_host.tolist() == [[1.5, 2.5]] and lazy.value_from is host
    lazy.value_host = np.zeros((1, 2))
    assert lazy.value_from is None and lazy.value_host.tolist() == [[0.0, 0.0]]
