"""The loss guard's test of one training loss, on the loss's device: non-finite, or a spike above `spike_factor`
times an exponential moving average of the recent finite losses. No host read: the verdict stays a device tensor
until the device guard reads it back late, with the data checks' flags.

    bad when  not isfinite(loss)
          or  loss > spike_factor * ema   (after `warmup` finite losses, and only while ema > 0)
    ema <- decay * ema + (1 - decay) * loss   for the losses that are not bad (the first one seeds it)

LossGuard is the device guard's side of it (`DeviceGuard.watch_loss` delegates to it): the batch that produced
each loss is kept by reference until the verdict is read (at most 8 pending: a ninth waits for the oldest), and a
bad loss gets a snapshot of that batch with its trace ids, step, loss and RNG state; then the policy: raise ->
BadLossError (late on an accelerator); warn -> logged; skip and mask -> the verdict is read at once (one small
read per step on an accelerator) and the optimizer step is to be skipped (there is no sample to mask in a loss).
"""
from __future__ import annotations

import logging
import uuid
from typing import Mapping

import torch

from dataaudit.guard.findings import BadBatchError
from dataaudit.guard.snapshot import save_snapshot

log = logging.getLogger("dataaudit.guard")

KINDS = ("nonfinite", "spike")
MAX_HELD = 8   # losses read back late whose batches are held; one more waits for the oldest


def check_loss_settings(spike_factor: float | None, decay: float) -> None:
    """ValueError for a spike factor that is not > 1 (None: no spike test) or a decay outside (0, 1)."""
    if spike_factor is not None and spike_factor <= 1:
        raise ValueError(f"spike_factor must be > 1 (or None: no spike test), got {spike_factor!r}")
    if not 0 < decay < 1:
        raise ValueError(f"decay must be in (0, 1), got {decay!r}")


class BadLossError(BadBatchError):
    """The loss of a step was non-finite or spiked, under policy "raise". Attributes as BadBatchError, plus
    loss (its value) and kind ("nonfinite" or "spike"); findings is empty."""

    def __init__(self, message: str, *, step: int, trace_id: str, snapshot, loss: float, kind: str):
        super().__init__(message, step=step, trace_id=trace_id, snapshot=snapshot, findings=[])
        self.loss, self.kind = loss, kind


class LossWatch:
    """Running state of the loss test (two 0-dim tensors on the loss's device)."""

    def __init__(self, spike_factor: float | None = 5.0, warmup: int = 20, decay: float = 0.98):
        check_loss_settings(spike_factor, decay)
        self.spike_factor, self.warmup, self.decay = spike_factor, int(warmup), float(decay)
        self.ema: torch.Tensor | None = None
        self.count: torch.Tensor | None = None

    def update(self, loss: torch.Tensor) -> torch.Tensor:
        """float64 [4] on the loss's device: (loss, non-finite, spike, ema before this loss). A loss with several
        elements (per-sample losses) is judged by its mean."""
        x = loss.detach()
        x = (x.double().mean() if x.numel() != 1 else x.double().reshape(()))
        if self.ema is None or self.ema.device != x.device:
            self.ema = torch.zeros((), dtype=torch.float64, device=x.device)
            self.count = torch.zeros((), dtype=torch.int64, device=x.device)
        finite = torch.isfinite(x)
        if self.spike_factor is None:
            spike = torch.zeros((), dtype=torch.bool, device=x.device)
        else:
            spike = finite & (self.count >= self.warmup) & (self.ema > 0) & (x > self.spike_factor * self.ema)
        ok = finite & ~spike
        before = self.ema
        seeded = torch.where(self.count == 0, x, self.decay * before + (1 - self.decay) * x)
        self.ema = torch.where(ok, seeded, before)
        self.count = self.count + ok.to(torch.int64)
        return torch.stack([x, (~finite).double(), spike.double(), before])


def rng_state(device) -> dict:
    """The RNG state a step starts from: torch's CPU generator, and the CUDA one when `device` is CUDA (host-side
    state: no sync)."""
    out = {"cpu": torch.get_rng_state()}
    if device is not None and device.type == "cuda":
        out["cuda"] = torch.cuda.get_rng_state(device)
    return out


class LossEntry:
    """One watched loss on its way back: the batch that produced it is kept (by reference) until it is read."""

    __slots__ = ("entry", "batch", "rng", "packed", "step")

    def __init__(self, entry, batch, rng, packed, step):
        self.entry, self.batch, self.rng, self.packed, self.step = entry, batch, rng, packed, step


class LossGuard:
    """The device guard's loss watch: `hand_out` each batch as it goes to the training loop, `check` its loss.

    options: the guard's GuardOptions (policy, snapshot_dir, loss_spike, loss_warmup, loss_decay, loss_snapshots);
    plan: its GuardPlan; device: its device (None: the batches' own); readback: its ReadbackQueue (a verdict
    comes back with the flags); record: its FindingsRecord (snapshots, profiler)."""

    def __init__(self, options, plan, device, readback, record):
        self.options, self.plan, self.device, self.readback, self.record = options, plan, device, readback, record
        self.watch = LossWatch(options.loss_spike, options.loss_warmup, options.loss_decay)
        self.events: list[dict] = []
        self.skip_step = False   # skip / mask: the last checked loss was bad (skip the optimizer step)
        self.handed = None       # (entry, batch, RNG state) of the last batch handed out
        self.held = 0            # losses on their way back (their batches held)
        self._on = False         # a loss was checked: from now on each batch handed out keeps its RNG state

    def hand_out(self, entry, batch) -> None:
        """`batch` (None: the batch was skipped) goes to the training loop: a loss checked next comes from it."""
        self.handed = None if batch is None else (entry, batch, rng_state(self.device) if self._on else None)

    def check(self, loss: torch.Tensor, batch=None, step: int = -1) -> bool:
        """Test the loss of the batch last handed out (or `batch`; `step`: the guard's step, named when no batch
        was handed out). True when the optimizer step should be skipped (skip / mask, bad loss); also
        `skip_step`."""
        if self.handed is None and batch is None:
            raise RuntimeError("watch_loss: no batch was handed out by this guard yet")
        entry, out, rng = self.handed if self.handed is not None else (None, None, None)
        self._on = True
        le = LossEntry(entry, out if batch is None else batch, rng or rng_state(self.device),
                       self.watch.update(loss), entry.step if entry is not None else step)
        self.skip_step = False
        dev = le.packed.device.type
        if dev == "cpu" or (self.options.policy in ("skip", "mask") and dev != "meta"):
            self.verdict(le, le.packed.cpu().tolist())  # skip / mask: the one host read they need
            return self.skip_step
        if dev == "cuda":
            self.held += 1
            self.readback.later((le.packed,), le, self._landed)
            while self.held > MAX_HELD:  # bound the batches held
                self.readback.drain(block=True, limit=1)
        return False

    def _landed(self, le: LossEntry, staged: tuple) -> None:
        self.held -= 1
        self.verdict(le, staged[0].tolist())

    def verdict(self, le: LossEntry, packed: list) -> None:
        """The loss is on the host, packed as LossWatch.update gives it: a bad one is snapshotted and acted on."""
        value, nonfinite, spike, ema = packed
        if not (nonfinite or spike):
            return
        o, e, step = self.options, le.entry, le.step
        kind = "nonfinite" if nonfinite else "spike"
        trace_id = uuid.uuid4().hex
        factor = self.watch.spike_factor
        info = {"value": value, "kind": kind, "reference": ema, "spike_factor": factor,
                "threshold": None if factor is None else factor * ema}
        path = None
        if o.snapshot_dir is not None and le.batch is not None and \
                sum(ev["snapshot"] is not None for ev in self.events) < o.loss_snapshots:
            data = le.batch
            named = dict(data) if isinstance(data, Mapping) else dict(enumerate(data))
            path = save_snapshot(o.snapshot_dir, named=named, is_dict=isinstance(data, Mapping),
                                 checks=e.checks if e is not None else None,
                                 device_calls=e.device_calls if e is not None else 0,
                                 keys=e.keys if e else None, shards=e.shards if e else None,
                                 rows=e.rows if e else None, step=step, trace_id=trace_id, policy=o.policy,
                                 plan=self.plan, reason="loss", loss=info, rng=le.rng)
            self.record.snapshots.append(path)
        action = {"raise": "raised", "warn": "warned"}.get(o.policy, "skipped step")
        self.events.append({"step": step, "trace_id": trace_id, **info, "snapshot": path, "action": action})
        if self.record.profiler is not None:
            self.record.profiler.record_bad([f"loss:{kind}"], action)
        msg = (f"guard: {'non-finite' if nonfinite else 'spiking'} loss {value:g} at step {step} (trace {trace_id})"
               + (f" > {info['threshold']:g} ({factor:g} x moving average {ema:g})" if spike else "")
               + (f"; snapshot: {path}" if path else "")
               + (f"; find the culprit samples: dataaudit replay {path} --model MODULE:FACTORY" if path else ""))
        if o.policy == "raise":
            raise BadLossError(msg, step=step, trace_id=trace_id, snapshot=path, loss=value, kind=kind)
        log.warning("%s -> %s", msg, action)
        if o.policy in ("skip", "mask"):
            self.skip_step = True


__all__ = ["LossWatch", "LossGuard", "LossEntry", "BadLossError", "KINDS", "MAX_HELD", "check_loss_settings",
           "rng_state"]
