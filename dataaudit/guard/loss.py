"""The loss guard's test of one training loss, on the loss's device, from the first loss on. No host read: the
verdict stays a device tensor until the device guard reads it back late, with the data checks' flags.

    nonfinite  not isfinite(loss)
    ceiling    loss > max_loss (default: max_loss_factor = 1000 x the first finite positive loss; active from
               the second loss, so a 1.78 -> 1.3e36 jump is caught at any step)
    spike      loss > spike_factor (2) x the reference AND loss > reference + mad (20) x the window's median
               absolute deviation, once `warmup` good losses are in (default 3). The reference is the MEDIAN of
               the last `window` (100) good losses, kept in a ring buffer on the device (torch.nanmedian: a bad
               loss never enters it, so a run of huge losses cannot become the baseline). The MAD part keeps a
               noisy loss (small batches, preference losses near 0) from raising false alarms that a ratio alone
               would; reference="ema" keeps the older exponential moving average (decay; no MAD part).
    diverged   the `patience + 1`-th bad loss in a row (default patience 4): the run has moved, not one batch

Why these defaults (llm-foundry's KillLossSpike: window 100, outlier at 2 x the window's MEAN, patience 4, loss
cap 10, nothing at all before the window is full): a median is not dragged up by the spike it is meant to
catch, so the test can start after 3 losses rather than 100; the factor is llm-foundry's 2, and the MAD part
guards it. benchmarks/loss_curves.py (10 real curves, tinyshakespeare): the clean curves' largest loss is 1.18 x
and 4.0 MADs above the median before it, the smallest planted jump 2.4 x and 513 MADs; 5 x (the old default)
missed that one. An absolute cap of 10 only fits cross-entropy over small vocabularies, so the ceiling is
relative to the first loss instead; the patience is llm-foundry's (5 bad losses in a row = diverged).

LossGuard is the device guard's side of it (`DeviceGuard.watch_loss` delegates to it): the batch that produced
each loss is kept by reference until the verdict is read (at most 8 pending: a ninth waits for the oldest), and a
bad loss gets a snapshot of that batch with its trace ids, step, loss and RNG state; then the policy: raise ->
BadLossError (late on an accelerator); warn -> logged; skip and mask -> the verdict is read at once (one small
read per step on an accelerator) and the optimizer step is to be skipped (there is no sample to mask in a loss).
"diverged" raises under raise, skip and mask (skipping every step from then on would stall the run silently)
and is logged under warn.
"""
from __future__ import annotations

import logging
import math
import uuid
from typing import Any, Mapping

import torch

from dataaudit.guard.compiled import CompiledCall, backend_of
from dataaudit.guard.findings import BadBatchError
from dataaudit.guard.snapshot import save_snapshot

log = logging.getLogger("dataaudit.guard")

KINDS = ("nonfinite", "spike", "ceiling", "diverged")
REFERENCES = ("median", "ema")
MAX_HELD = 8   # losses read back late whose batches are held; one more waits for the oldest


def check_loss_settings(spike_factor: float | None, decay: float, window: int = 100, reference: str = "median",
                        max_loss: float | None = None, max_loss_factor: float | None = 1000.0,
                        patience: int | None = 4, mad: float | None = 20.0) -> None:
    """ValueError for a spike factor that is not > 1 (None: no spike test), a decay outside (0, 1), a window
    under 1, an unknown reference, a max_loss that is not > 0, a max_loss_factor that is not > 1, a patience
    under 1, a MAD multiple that is not > 0."""
    if mad is not None and not mad > 0:
        raise ValueError(f"loss_mad must be > 0 (or None: the factor alone), got {mad!r}")
    if spike_factor is not None and spike_factor <= 1:
        raise ValueError(f"spike_factor must be > 1 (or None: no spike test), got {spike_factor!r}")
    if not 0 < decay < 1:
        raise ValueError(f"decay must be in (0, 1), got {decay!r}")
    if int(window) < 1:
        raise ValueError(f"loss_window must be at least 1, got {window!r}")
    if reference not in REFERENCES:
        raise ValueError(f"loss_reference must be one of {REFERENCES}, got {reference!r}")
    if max_loss is not None and not max_loss > 0:
        raise ValueError(f"max_loss must be > 0 (or None: max_loss_factor x the first loss), got {max_loss!r}")
    if max_loss_factor is not None and not max_loss_factor > 1:
        raise ValueError(f"max_loss_factor must be > 1 (or None: no derived ceiling), got {max_loss_factor!r}")
    if patience is not None and int(patience) < 1:
        raise ValueError(f"loss_patience must be at least 1 (or None: never), got {patience!r}")


class BadLossError(BadBatchError):
    """The loss of a step was non-finite, spiked, passed the ceiling or diverged, under policy "raise" (diverged:
    also skip and mask). Attributes as BadBatchError, plus loss (its value) and kind (one of KINDS); findings is
    empty."""

    def __init__(self, message: str, *, step: int, trace_id: str, snapshot, loss: float, kind: str):
        super().__init__(message, step=step, trace_id=trace_id, snapshot=snapshot, findings=[])
        self.loss, self.kind = loss, kind


class LossWatch:
    """Running state of the loss test: a few small tensors on the loss's device (see the module doc).

    update(loss) -> float64 [8] on that device: (loss, non-finite, spike, reference, above ceiling, diverged,
    spike threshold, ceiling); NaN for a threshold not in force yet."""

    def __init__(self, spike_factor: float | None = 2.0, warmup: int = 3, decay: float = 0.98, *,
                 window: int = 100, reference: str = "median", max_loss: float | None = None,
                 max_loss_factor: float | None = 1000.0, patience: int | None = 4, mad: float | None = 20.0,
                 compile: Any = False):
        check_loss_settings(spike_factor, decay, window, reference, max_loss, max_loss_factor, patience, mad)
        # compile: the test's ~50 small ops fused by torch.compile (dataaudit.guard.compiled)
        self.judge = CompiledCall(self._judge, backend_of(compile), "the loss watch")
        self.mad = mad if reference == "median" else None
        self.spike_factor, self.warmup, self.decay = spike_factor, int(warmup), float(decay)
        self.window, self.reference = int(window), reference
        self.max_loss, self.max_loss_factor = max_loss, max_loss_factor
        self.patience = None if patience is None else int(patience)
        self.device = None
        self.ring = self.pos = self.ema = self.count = self.first = self.run = None

    def _start(self, device) -> None:
        z = lambda dt: torch.zeros((), dtype=dt, device=device)  # noqa: E731
        self.device = device
        self.ring = torch.full((self.window if self.reference == "median" else 1,), math.nan,
                               dtype=torch.float64, device=device)
        self.pos, self.count, self.run = z(torch.int64), z(torch.int64), z(torch.int64)
        self.ema = z(torch.float64)
        self.first = torch.full((), math.nan, dtype=torch.float64, device=device)
        self._nan = torch.full((), math.nan, dtype=torch.float64, device=device)   # constants: made once
        self._false = z(torch.bool)
        self._cap = None if self.max_loss is None else torch.full((), float(self.max_loss), dtype=torch.float64,
                                                                  device=device)

    def update(self, loss: torch.Tensor) -> torch.Tensor:
        """The verdict on one loss (see the class doc). A loss with several elements (per-sample losses) is
        judged by its mean."""
        if self.device != loss.device:
            self._start(loss.device)
        return self.judge(loss)

    def _judge(self, loss: torch.Tensor) -> torch.Tensor:
        x = loss.detach()
        x = (x.double().mean() if x.numel() != 1 else x.double().reshape(()))
        nan = self._nan
        finite = torch.isfinite(x)
        if self.reference == "median":
            ref = torch.nanmedian(self.ring)   # NaN while empty: every comparison with it is False
        else:
            ref = torch.where(self.count > 0, self.ema, nan)
        if self.spike_factor is None:
            spike, threshold = self._false, nan
        else:
            threshold = torch.where((self.count >= self.warmup) & (ref > 0), self.spike_factor * ref, nan)
            if self.mad is not None:   # and far outside the window's spread (NaN stays NaN: not in force)
                threshold = torch.maximum(threshold, ref + self.mad * torch.nanmedian((self.ring - ref).abs()))
            spike = finite & (x > threshold)
        if self._cap is not None:
            ceiling = self._cap
        elif self.max_loss_factor is not None:
            ceiling = torch.where(self.first > 0, self.max_loss_factor * self.first, nan)
        else:
            ceiling = nan
        over = finite & (x > ceiling)
        bad = ~finite | spike | over
        ok = ~bad
        self.first = torch.where(torch.isnan(self.first) & finite, x, self.first)
        if self.reference == "median":   # a good loss goes into the ring at pos; a bad one leaves it as it was
            idx = self.pos.reshape(1)
            self.ring.index_copy_(0, idx, torch.where(ok, x, self.ring.index_select(0, idx)))
            self.pos = (self.pos + ok.to(torch.int64)) % self.window
        else:
            seeded = torch.where(self.count == 0, x, self.decay * self.ema + (1 - self.decay) * x)
            self.ema = torch.where(ok, seeded, self.ema)
        self.count = self.count + ok.to(torch.int64)
        self.run = (self.run + 1) * bad   # bad losses in a row
        diverged = (self.run == self.patience + 1) if self.patience is not None else self._false
        return torch.stack([x, (~finite).double(), spike.double(), ref, over.double(), diverged.double(),
                            threshold, ceiling])


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
        self.watch = LossWatch(options.loss_spike, options.loss_warmup, options.loss_decay,
                               window=options.loss_window, reference=options.loss_reference,
                               max_loss=options.max_loss, max_loss_factor=options.max_loss_factor,
                               patience=options.loss_patience, mad=options.loss_mad,
                               compile=options.compile if device is not None and device.type != "cpu" else False)
        self.events: list[dict] = []
        self.skip_step = False   # skip / mask: the last checked loss was bad (skip the optimizer step)
        self.handed = None       # (entry, batch, RNG state) of the last batch handed out
        self.held = 0            # losses on their way back (their batches held)
        self._on = False         # a loss was checked: from now on each batch handed out keeps its RNG state
        self.saved = 0           # snapshots written by the loss and gradient watches (capped: loss_snapshots)

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
        """The loss is on the host, packed as LossWatch.update gives it (an older 4-value verdict: loss,
        non-finite, spike, reference): a bad one is snapshotted and acted on."""
        value, nonfinite, spike, ref = packed[:4]
        over, diverged, threshold, ceiling = packed[4:] if len(packed) > 4 else (0.0, 0.0, math.nan, math.nan)
        if not (nonfinite or spike or over or diverged):
            return
        o, step = self.options, le.step
        factor = self.watch.spike_factor
        if len(packed) == 4 and factor is not None:
            threshold = factor * ref
        kind = "diverged" if diverged else "nonfinite" if nonfinite else "ceiling" if over else "spike"
        trace_id = uuid.uuid4().hex
        info = {"value": value, "kind": kind, "reference": _num(ref), "spike_factor": factor,
                "threshold": _num(threshold), "ceiling": _num(ceiling)}
        path = self.snapshot(le, trace_id, "loss", loss=info)
        action = _action(o.policy, kind == "diverged")
        self.events.append({"step": step, "trace_id": trace_id, **info, "snapshot": path, "action": action})
        if self.record.profiler is not None:
            self.record.profiler.record_bad([f"loss:{kind}"], action)
        what = {"nonfinite": "non-finite", "spike": "spiking", "ceiling": "huge", "diverged": "diverging"}[kind]
        msg = (f"guard: {what} loss {value:g} at step {step} (trace {trace_id})"
               + (f" > {threshold:g} ({factor:g} x {_REF_NAMES[self.watch.reference]} {ref:g}"
                  + (f", and at least {self.watch.mad:g} median absolute deviations above it" if self.watch.mad
                     else "")
                  + ")" if spike and kind == "spike" else "")
               + (f" > ceiling {ceiling:g}" if kind == "ceiling" else "")
               + (f": {self.watch.patience + 1} bad losses in a row (the run diverged, not one batch: lower the "
                  f"learning rate or resume from an earlier checkpoint)" if kind == "diverged" else "")
               + (f"; snapshot: {path}" if path else "")
               + (f"; find the culprit samples: dataaudit replay {path} --model MODULE:FACTORY" if path else ""))
        if action == "raised":
            raise BadLossError(msg, step=step, trace_id=trace_id, snapshot=path, loss=value, kind=kind)
        log.warning("%s -> %s", msg, action)
        if o.policy in ("skip", "mask"):
            self.skip_step = True

    def snapshot(self, le: LossEntry, trace_id: str, reason: str, **extra):
        """Save the batch of `le` (at most loss_snapshots, shared by the loss and gradient watches); its path,
        or None (no snapshot_dir, no batch, or the cap reached)."""
        o, e = self.options, le.entry
        if o.snapshot_dir is None or le.batch is None or self.saved >= o.loss_snapshots:
            return None
        data = le.batch
        named = dict(data) if isinstance(data, Mapping) else dict(enumerate(data))
        path = save_snapshot(o.snapshot_dir, named=named, is_dict=isinstance(data, Mapping),
                             checks=e.checks if e is not None else None,
                             device_calls=e.device_calls if e is not None else 0,
                             keys=e.keys if e else None, shards=e.shards if e else None,
                             rows=e.rows if e else None, step=le.step, trace_id=trace_id, policy=o.policy,
                             plan=self.plan, reason=reason, rng=le.rng, **extra)
        self.saved += 1
        self.record.snapshots.append(path)
        return path


_REF_NAMES = {"median": "median of recent losses", "ema": "moving average"}


def _action(policy: str, diverged: bool = False) -> str:
    if policy == "raise" or (diverged and policy in ("skip", "mask")):
        return "raised"
    return "warned" if policy == "warn" else "skipped step"


def _num(v: float):
    """A figure for an event and a snapshot header: None for NaN (a threshold not in force yet)."""
    return None if isinstance(v, float) and math.isnan(v) else v


__all__ = ["LossWatch", "LossGuard", "LossEntry", "BadLossError", "KINDS", "REFERENCES", "MAX_HELD",
           "check_loss_settings", "rng_state"]
