"""The loss guard: a non-finite or spiking loss is read back late (never on the meta device), writes a snapshot
of the exact batch with trace ids, step, loss and RNG state, and the policy acts; the Lightning callback feeds it
and drops the gradients of a skipped step."""
from __future__ import annotations

import math
from types import SimpleNamespace

import pytest
import torch

from dataaudit.guard import DeviceGuard, GuardCallback, load_snapshot
from dataaudit.guard.device import BadBatchError, BadLossError

from tests.guard.replay_model import make_loss

B = 64
CULPRIT = 37


def batches(n=5, bad_step=3, culprit=CULPRIT, value=1e30):
    """n batches of 64 rows with provenance; at bad_step row `culprit` holds a huge (finite) feature."""
    out = []
    for s in range(n):
        x = torch.full((B, 4), 0.25)
        if s == bad_step:
            x[culprit, 2] = value
        out.append({"features": x, "__key__": [f"k{s * B + i}" for i in range(B)],
                    "__shard__": ["s.parquet"] * B, "__row__": list(range(s * B, s * B + B))})
    return out


def test_nonfinite_loss_raises_after_a_snapshot_of_the_exact_batch(tmp_path):
    loss_fn = make_loss()
    g = DeviceGuard(batches(), None, policy="raise", snapshot_dir=tmp_path, profile=False)
    states = []
    with pytest.raises(BadLossError) as ei:
        for batch in g:
            states.append(torch.get_rng_state())
            torch.rand(3)  # the step draws random numbers (dropout): the snapshot keeps the state it started from
            g.watch_loss(loss_fn(batch))
    err = ei.value
    assert isinstance(err, BadBatchError) and (err.step, err.kind, err.loss) == (3, "nonfinite", math.inf)
    assert "non-finite loss inf at step 3" in str(err) and f"dataaudit replay {err.snapshot}" in str(err)
    snap = load_snapshot(err.snapshot)
    assert (snap.step, snap.meta["reason"], snap.loss["kind"], snap.loss["value"]) == (3, "loss", "nonfinite",
                                                                                      math.inf)
    assert snap.keys[CULPRIT] == "k229" and snap.rows[CULPRIT] == 229 and snap.shards == ["s.parquet"] * B
    assert torch.equal(snap.batch["features"], batches()[3]["features"])
    assert torch.equal(snap.rng["cpu"], states[3])
    assert g.loss_events[0]["action"] == "raised" and g.snapshots == [err.snapshot]


def test_spike_over_the_moving_average_warns_with_exact_figures(tmp_path):
    g = DeviceGuard(batches(6, bad_step=-1), None, policy="warn", snapshot_dir=tmp_path, profile=False,
                    loss_spike=5.0, loss_warmup=3)
    got = [g.watch_loss(torch.tensor(v)) for v, _ in zip([2.0, 2.0, 2.0, 2.0, 10.5, 2.0], g)]
    assert got == [False] * 6
    (ev,) = g.loss_events
    assert (ev["step"], ev["kind"], ev["value"], ev["reference"], ev["threshold"], ev["action"]) == \
        (4, "spike", 10.5, 2.0, 10.0, "warned")
    assert load_snapshot(ev["snapshot"]).loss["threshold"] == 10.0
    assert g.summary()["loss_events"] == 1


def test_skip_and_mask_return_skip_the_step(tmp_path):
    loss_fn = make_loss()
    for policy in ("skip", "mask"):
        g = DeviceGuard(batches(), None, policy=policy, snapshot_dir=None, profile=False)
        assert [g.watch_loss(loss_fn(b)) for b in g] == [False, False, False, True, False]
        assert [e["step"] for e in g.loss_events] == [3] and g.loss_events[0]["action"] == "skipped step"


def test_no_host_read_on_the_meta_device():
    """warn and (late) raise read nothing back: meta raises on any data-dependent op."""
    meta = torch.device("meta")
    for policy in ("warn", "raise"):
        g = DeviceGuard(batches(2, bad_step=-1), None, device=meta, policy=policy, profile=False)
        for b in g:
            assert b["features"].device == meta
            assert g.watch_loss(torch.full((), math.nan, device=meta)) is False
        assert g.loss_events == [] and g.loss_watch.ema.device == meta


class StubTrainer(SimpleNamespace):
    logger = None
    global_step = 0


def test_lightning_callback_watches_the_loss_and_drops_a_skipped_steps_gradients(tmp_path):
    lin = torch.nn.Linear(4, 1, bias=False)
    opt = torch.optim.SGD(lin.parameters(), lr=0.1)
    cb = GuardCallback(None, policy="skip", snapshot_dir=tmp_path)
    trainer = StubTrainer()
    kept = []
    for i, batch in enumerate(batches()):
        cb.on_train_batch_start(trainer, None, batch, i)
        loss = (lin(batch["features"]) ** 2).mean()
        cb.on_before_backward(trainer, None, loss)
        loss.backward()
        cb.on_before_optimizer_step(trainer, None, opt)
        kept.append(lin.weight.grad is not None)
        opt.zero_grad()
        cb.on_train_batch_end(trainer, None, loss, batch, i)
    assert kept == [True, True, True, False, True]
    (ev,) = cb.guard.loss_events
    assert ev["step"] == 3 and load_snapshot(ev["snapshot"]).keys[CULPRIT] == "k229"

    # gradient accumulation: steps (0), (1, 2), (3, 4) share an optimizer step; the bad step 3 precedes a good one
    cb = GuardCallback(None, policy="skip", snapshot_dir=tmp_path)
    kept = []
    for i, batch in enumerate(batches()):
        cb.on_train_batch_start(trainer, None, batch, i)
        loss = (lin(batch["features"]) ** 2).mean()
        cb.on_before_backward(trainer, None, loss)
        loss.backward()
        if i % 2 == 0:
            cb.on_before_optimizer_step(trainer, None, opt)
            kept.append(lin.weight.grad is not None)
            opt.zero_grad()
        cb.on_train_batch_end(trainer, None, loss, batch, i)
    assert kept == [True, True, False]

    cb = GuardCallback(None, policy="raise", snapshot_dir=tmp_path)
    with pytest.raises(BadLossError, match="at step 3"):
        for i, batch in enumerate(batches()):
            cb.on_train_batch_start(trainer, None, batch, i)
            cb.on_before_backward(trainer, None, make_loss()(batch))
