"""The loss watch from the first loss: the 1.78 -> 1.3e36 jump at step 15 is caught (the older EMA test with its
20-loss warm-up missed it), a ceiling from the first loss covers the steps before the median is ready, bad losses
never enter the median's window, and a run of bad losses is reported once as diverged."""
from __future__ import annotations

import math

import pytest
import torch

from dataaudit.guard import DeviceGuard
from dataaudit.guard.loss import BadLossError, LossWatch


def figures(watch, losses):
    """(loss, non-finite, spike, reference, above ceiling, diverged, threshold, ceiling) per loss, on the host."""
    return [watch.update(torch.tensor(v, dtype=torch.float64)).tolist() for v in losses]


def curve(n=20, bad_step=15, bad=1.3e36):
    """A slowly falling loss from 1.78 (step i: 1.78 - 0.01 i) with one bad value."""
    return [bad if i == bad_step else round(1.78 - 0.01 * i, 2) for i in range(n)]


def kinds(g, losses):
    for v, _ in zip(losses, g):
        g.watch_loss(torch.tensor(v))
    return [(e["step"], e["kind"]) for e in g.loss_events]


def guard(n, **kw):
    return DeviceGuard([{"x": torch.zeros(2, 1)}] * n, None, policy="warn", snapshot_dir=None, profile=False, **kw)


def test_the_step_15_jump_is_caught_and_the_old_ema_test_missed_it():
    assert kinds(guard(20), curve()) == [(15, "ceiling")]
    old = guard(20, loss_spike=5.0, loss_reference="ema", loss_warmup=20, max_loss_factor=None, loss_patience=None)
    assert kinds(old, curve()) == []


def test_exact_figures_of_the_bad_loss():
    w = LossWatch()
    f = figures(w, curve(16))
    # reference: the median of steps 0-14 (1.78 .. 1.64) is step 7's 1.71; threshold the larger of 2 x 1.71 and
    # 1.71 + 20 x 0.04 (the median absolute deviation); ceiling 1000 x 1.78
    value, nonfinite, spike, ref, over, diverged, threshold, ceiling = f[15]
    assert (value, nonfinite, spike, over, diverged) == (1.3e36, 0.0, 1.0, 1.0, 0.0)
    assert ref == pytest.approx(1.71) and threshold == pytest.approx(3.42) and ceiling == pytest.approx(1780.0)
    assert [x[2] + x[4] for x in f[:15]] == [0.0] * 15
    # no threshold before three good losses (then 2 x median(1.78, 1.77, 1.76)); the ceiling from the first loss on
    assert math.isnan(f[0][6]) and math.isnan(f[0][7]) and math.isnan(f[2][6]) and f[3][6] == pytest.approx(3.54)
    assert f[1][7] == pytest.approx(1780.0)


def test_the_ceiling_catches_the_second_loss_and_nonfinite_the_first():
    assert kinds(guard(3), [1.78, 1e36, 1.7]) == [(1, "ceiling")]
    assert kinds(guard(3), [math.nan, 2.0, 2.0]) == [(0, "nonfinite")]
    assert kinds(guard(3, max_loss=50.0), [60.0, 2.0, 2.0]) == [(0, "ceiling")]
    # no positive first loss (a log-likelihood): no derived ceiling
    assert kinds(guard(3), [-5.0, 1e30, -4.0]) == []


def test_a_bad_loss_never_enters_the_median_window():
    w = LossWatch(window=4)
    f = figures(w, [2.0, 2.0, 2.0, 2.0, 11.0, 2.0, 2.2, 11.5])
    assert [x[2] for x in f] == [0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 1.0]
    assert f[7][3] == 2.0   # window: 2.0, 2.0, 2.0, 2.2 (the 11.0 was left out); lower median 2.0
    assert w.count.item() == 6 and sorted(w.ring.tolist()) == [2.0, 2.0, 2.0, 2.2]


def test_five_bad_losses_in_a_row_are_reported_once_as_diverged():
    losses = [2.0] * 4 + [20.0] * 7
    assert kinds(guard(11), losses) == [(4, "spike"), (5, "spike"), (6, "spike"), (7, "spike"), (8, "diverged"),
                                        (9, "spike"), (10, "spike")]
    assert kinds(guard(11, loss_patience=None), losses) == [(i, "spike") for i in range(4, 11)]


def test_diverged_raises_under_skip_after_skipping_the_single_spikes():
    g = DeviceGuard([{"x": torch.zeros(2, 1)}] * 9, None, policy="skip", snapshot_dir=None, profile=False)
    skipped = []
    with pytest.raises(BadLossError) as ei:
        for v, _ in zip([2.0] * 4 + [20.0] * 5, g):
            skipped.append(g.watch_loss(torch.tensor(v)))
    assert skipped == [False] * 4 + [True] * 4
    assert (ei.value.step, ei.value.kind, ei.value.loss) == (8, "diverged", 20.0)
    assert "diverging loss 20 at step 8" in str(ei.value) and "5 bad losses in a row" in str(ei.value)


def test_a_ceiling_snapshot_replays_against_its_ceiling(tmp_path):
    from dataaudit.guard import load_snapshot
    from dataaudit.guard.replay import default_threshold, replay

    from tests.guard.replay_model import make_loss
    from tests.guard.test_loss_guard import batches

    loss_fn = make_loss()
    g = DeviceGuard(batches(3, bad_step=2, value=1e8), None, policy="warn", snapshot_dir=tmp_path, profile=False)
    for b in g:
        g.watch_loss(loss_fn(b))
    (ev,) = g.loss_events
    assert (ev["step"], ev["kind"], ev["ceiling"], ev["threshold"]) == (2, "ceiling", 1000.0, None)
    snap = load_snapshot(ev["snapshot"])
    assert default_threshold(snap) == 1000.0
    r = replay(snap, loss_fn, threshold=default_threshold(snap))
    assert [c["key"] for c in r["culprits"]] == ["k165"] and r["reproduced"] is True
