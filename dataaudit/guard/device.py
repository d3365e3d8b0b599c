"""DeviceGuard: wraps a DataLoader; moves each batch to the device and runs the audit's checks on it there.

    guard = DeviceGuard(loader, "audit.toml", device="cuda", policy="mask")
    for batch in guard:                     # batch: on the device, bad samples neutralized
        loss = (F.cross_entropy(model(batch["pixels"]), batch["label"], reduction="none")
                * batch["loss_weight"]).mean()
        ...
    print(guard.summary())

Per batch: (pinned) host memory -> non_blocking copy -> GuardPlan.run (the registered checks on from_tensor /
tokens_from_tensor fields) -> policy. The flags ([C, B]) stay on the device; a non_blocking copy into pinned
memory plus a CUDA event carries them back, and they are read when the event has completed (usually at the
next step): no host sync per check, and none at all in the hot path for `mask` and `warn`.

Policies (they act on checks whose severity is in `act_on`, default error; flagged checks at other severities
are recorded and logged, as `warn`):
    raise  stop with BadBatchError naming the checks, the sample positions and their (shard, key), after saving
           a safetensors snapshot of the batch. On the CPU it raises before the batch is handed out. On an
           accelerator (late_raise=True, the default) the batch is handed out masked (so the bad samples never
           reach the loss) and the error is raised when the flags come back, one or two steps later, with no
           sync in the hot path; late_raise=False reads the flag at once (one sync per batch).
    skip   drop the whole batch and record it. Deciding needs the flag before the batch is handed out: on an
           accelerator that is one small read (a sync) per batch; use mask to avoid it.
    mask   keep the batch, neutralize the bad samples: label -> ignore index, token ids -> pad id, their float
           inputs -> 0 and attention mask -> 1 (finite activations), and batch[weight_key] = 0.0 for them (1.0
           for the others). No host read on an accelerator.
    warn   record and log only.

Checks the collate guard ran on the samples (carried in the batch's "__guard__") are not run again on the
device: each finding is made once, by the stage that ran its check.

The loss guard: `guard.watch_loss(loss)` after the forward pass tests the loss (non-finite, or a spike over a
moving average: dataaudit.guard.loss) on its device and reads the verdict back late, like the flags. A bad loss
gets a snapshot of the batch that produced it (kept by reference until then: only the batches whose loss is
still pending), with trace ids, step, loss and RNG state; then the policy: raise -> BadLossError (late on an
accelerator); warn -> logged; skip and mask -> watch_loss reads the verdict at once (one small read per step on
an accelerator) and returns True: skip this optimizer step (there is no sample to mask in a loss).
`dataaudit replay SNAPSHOT --model module:factory` then finds the culprit samples.
"""
from __future__ import annotations

import logging
import time
import uuid
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

import numpy as np
import torch

from dataaudit.guard.loss import LossWatch
from dataaudit.guard.masking import fill_values, loss_weight, mask_batch
from dataaudit.guard.options import POLICIES, GuardOptions
from dataaudit.guard.payload import GuardedBatch, checks_from_payload
from dataaudit.guard.plan import BatchChecks, GuardPlan, HostChecks, format_value
from dataaudit.guard.profiler import StepRecord, ThroughputProfiler
from dataaudit.guard.snapshot import save_snapshot
from dataaudit.guard.tree import move_tree
from dataaudit.provenance import GUARD, KEY, ROW, SHARD

log = logging.getLogger("dataaudit.guard")

_ACTION = {"raise": "raised", "skip": "skipped", "mask": "masked", "warn": "warned"}


class BadBatchError(RuntimeError):
    """A batch failed an acting check under policy "raise". Attributes: step, trace_id, snapshot (path or None),
    findings (list of Finding)."""

    def __init__(self, message: str, *, step: int, trace_id: str, snapshot, findings):
        super().__init__(message)
        self.step, self.trace_id, self.snapshot, self.findings = step, trace_id, snapshot, findings


class BadLossError(BadBatchError):
    """The loss of a step was non-finite or spiked, under policy "raise". Attributes as BadBatchError, plus
    loss (its value) and kind ("nonfinite" or "spike"); findings is empty."""

    def __init__(self, message: str, *, step: int, trace_id: str, snapshot, loss: float, kind: str):
        super().__init__(message, step=step, trace_id=trace_id, snapshot=snapshot, findings=[])
        self.loss, self.kind = loss, kind


@dataclass
class Finding:
    """One flagged (sample, check) of one batch."""

    step: int
    position: int          # row in the batch handed to the training loop
    key: Any
    shard: Any
    check: str
    field: str
    severity: str
    value: float
    detail: str
    action: str            # raised | skipped | masked | warned
    source: str = "device"  # device | collate


# ------------------------------------------------------------------------------------------------ per batch

class _LossEntry:
    """One watched loss on its way back: the batch that produced it is kept (by reference) until it is read."""

    __slots__ = ("entry", "batch", "rng", "packed", "staged", "event")

    def __init__(self, entry, batch, rng, packed):
        self.entry, self.batch, self.rng, self.packed = entry, batch, rng, packed
        self.staged = self.event = None


class _Entry:
    """One batch on its way through the guard; its flags are read back when `event` has completed."""

    __slots__ = ("step", "batch_size", "keys", "shards", "rows", "checks", "device_calls", "acting",
                 "flagged_host", "_value_host", "_value_from", "tokens_host", "event", "staged", "timing_events",
                 "snapshot_batch", "action", "wait_s", "copy_s", "guard_s", "compute_s", "wall_s", "skipped_before",
                 "gpu", "read")

    def __init__(self, step, batch_size, keys, shards, rows, checks, device_calls, acting, copy_s):
        self.step, self.batch_size, self.keys, self.shards, self.rows = step, batch_size, keys, shards, rows
        self.checks, self.device_calls, self.acting, self.copy_s = checks, device_calls, acting, copy_s
        self.flagged_host = self._value_host = self._value_from = self.tokens_host = None  # numpy [C, B] once read
        self.event = self.staged = self.timing_events = self.snapshot_batch = None
        self.action = ""
        self.wait_s = self.guard_s = self.wall_s = 0.0
        self.compute_s = None
        self.skipped_before = 0
        self.gpu = None
        self.read = False

    @property
    def value_host(self):
        """numpy [C, B] values once read back (on the CPU path taken from the HostChecks when first read)."""
        if self._value_host is None and self._value_from is not None:
            self._value_host = self._value_from.value_np
        return self._value_host

    @value_host.setter
    def value_host(self, v) -> None:
        self._value_host, self._value_from = v, None


class DeviceGuard:
    """Wrap a DataLoader (any iterable of batches): device copy, the audit's checks, a policy, a profiler.

    loader: yields dict batches (tuple/list with names=...), possibly from CollateGuard (provenance + its
        results are then merged in).
    config: the audit TOML path, an AuditConfig or None (as GuardPlan).
    device: where batches go (None: leave them where they are, e.g. CPU training).
    options: a GuardOptions, or its fields as keywords (policy, act_on, checks, names, fields, ignore_index, pad_id,
        weight_key, snapshot_dir, profile, log_every, jsonl, late_raise, non_blocking, pin_memory, max_findings,
        loss_spike, loss_warmup, loss_decay, loss_snapshots; see GuardOptions), not both.
    """

    def __init__(self, loader: Iterable, config=None, *, device=None, options: GuardOptions | None = None,
                 **keywords):
        o = self.options = GuardOptions.from_arguments("DeviceGuard", options, keywords)
        self.loader = loader
        self.plan = GuardPlan(config, checks=o.checks, names=o.names, fields=o.fields)
        self.device = torch.device(device) if device is not None else None
        self.policy = o.policy
        self.act_on = o.act_on
        self.ignore_index, self.pad_id = fill_values(self.plan, o.ignore_index, o.pad_id)
        self.weight_key = o.weight_key
        self.snapshot_dir = o.snapshot_dir
        if o.profile is True:
            self.profiler = ThroughputProfiler(log_every=o.log_every, jsonl=o.jsonl)
        else:
            self.profiler = o.profile or None
        self.late_raise = o.late_raise
        self.non_blocking = o.non_blocking
        self.pin_memory = o.pin_memory
        self.max_findings = o.max_findings
        self.findings: list[Finding] = []
        self.bad_batches: list[dict] = []
        self.snapshots: list[Path] = []
        self.step = -1                 # index of the last batch drawn from the loader
        self.last_checks: BatchChecks | None = None
        self.sample_weight: torch.Tensor | None = None   # mask: the last batch's weights (tuple batches)
        self._acting_key = self._acting_val = None
        self._step_end = None
        self._pending: deque = deque()   # _Entry and _LossEntry, in the order their copies were queued
        self._unrecorded: deque[_Entry] = deque()
        self.loss_watch = LossWatch(o.loss_spike, o.loss_warmup, o.loss_decay)
        self.loss_events: list[dict] = []
        self.loss_snapshots = o.loss_snapshots
        self.skip_step = False          # skip / mask: the last watched loss was bad (skip the optimizer step)
        self._handed = None             # (entry, batch, RNG state) of the last batch handed out
        self._loss_on = False

    def __len__(self) -> int:
        return len(self.loader)  # type: ignore[arg-type]

    def __iter__(self) -> Iterator:
        return self._iterate()

    # ------------------------------------------------------------------------------------------ the loop

    def _iterate(self):
        it = iter(self.loader)
        prev: _Entry | None = None
        carry = [0.0, 0.0, 0.0, 0]   # wait, copy, guard, batches of skipped batches -> the next step
        clock = time.perf_counter
        done = False
        try:
            while True:
                t_req = clock()
                self._step_end = _timing_event(self.device)  # CUDA: the GPU reaches it when the step's work is done
                if prev is not None:
                    prev.compute_s = t_req - prev.wall_s   # wall_s holds the hand-out time until here
                    prev.wall_s = prev.wait_s + prev.copy_s + prev.guard_s + prev.compute_s
                    self._unrecorded.append(prev)
                    prev = None
                self._drain(block=False)
                t0 = clock()
                try:
                    raw = next(it)
                except StopIteration:
                    done = True
                    break
                t1 = clock()
                out, entry = self.process(raw)
                t2 = clock()
                copy_s = entry.copy_s
                entry.wait_s = (t1 - t0) + carry[0]
                entry.copy_s = copy_s + carry[1]
                # the guard's time: reading back earlier flags (t_req..t0) and this batch's checks and policy
                entry.guard_s = (t0 - t_req) + (t2 - t1 - copy_s) + carry[2]
                if out is None:  # skipped: its time goes to the next batch handed out
                    carry = [entry.wait_s, entry.copy_s, entry.guard_s, carry[3] + 1]
                    continue
                entry.skipped_before = carry[3]
                carry = [0.0, 0.0, 0.0, 0]
                entry.wall_s = clock()
                entry.guard_s += entry.wall_s - t2
                prev = entry
                yield out
        finally:
            if prev is not None:
                prev.compute_s = time.perf_counter() - prev.wall_s
                prev.wall_s = prev.wait_s + prev.copy_s + prev.guard_s + prev.compute_s
                self._unrecorded.append(prev)
            if done:
                self.flush()
            else:  # stopped early (break, or an error in the training step): record what is complete
                self._record_ready()

    def flush(self) -> None:
        """Read back every pending batch's flags (waits for the device) and record them. Called at the end of
        the iteration; call it before reading `findings` mid-epoch on an accelerator."""
        self._drain(block=True)
        self._record_ready()

    # ------------------------------------------------------------------------------------------ one batch

    def _acting(self, calls) -> list:
        if calls is not self._acting_key:
            self._acting_key = calls
            self._acting_val = [c.severity in self.act_on for c in calls]
        return self._acting_val

    def process(self, raw):
        """Guard one batch as drawn from the loader: (batch for the training loop or None if skipped, entry).
        Usable without the iterator (e.g. the Lightning callback)."""
        out, entry = self._process(raw)
        # the batch a loss given to watch_loss comes from; the RNG state as its step starts
        self._handed = None if out is None else (entry, out, _rng_state(self.device) if self._loss_on else None)
        return out, entry

    def _process(self, raw):
        clock = time.perf_counter
        self.step += 1
        data, keys, shards, rows, worker = _unwrap(raw)
        t0 = clock()
        ev0 = ev1 = None
        if self.device is not None:
            pin = self.pin_memory and self.device.type == "cuda"
            ev0 = _timing_event(self.device)
            data = move_tree(data, self.device, self.non_blocking, pin)
            if worker is not None:
                worker = move_tree(worker, self.device, self.non_blocking, pin)
            ev1 = _timing_event(self.device)
        t1 = clock()
        # a check the collate guard ran on a field is its finding, not run again here
        res = self.plan.run(data, _labels(worker["calls"]) if worker is not None else frozenset())
        device_calls = len(res.calls)
        if worker is not None:
            res = res.concat(checks_from_payload(worker))
            if worker.get("dropped"):
                for d in worker["dropped"]:
                    self.bad_batches.append({"step": self.step, "dropped_in_collate": d})
        acting = self._acting(res.calls)
        entry = _Entry(self.step, res.num_samples, keys, shards, rows, res, device_calls, acting, t1 - t0)
        self.last_checks = res
        if type(res) is HostChecks or res.flagged.is_cpu:
            return self._process_host(data, entry)
        # An accelerator: nothing below reads device memory back, except skip and late_raise=False.
        act = res.rows(acting) if self.policy != "warn" else None   # warn acts on no sample
        out = data
        if self.policy == "skip" or (self.policy == "raise" and not self.late_raise):
            if bool(act.any()):  # the one host read of these policies (a sync per batch)
                self._read_now(entry)
                if self.policy == "raise":
                    self._raise(entry, data)
                entry.action = "skipped"
                self._record_skipped(entry)
                return None, entry
        elif self.policy in ("mask", "raise"):
            out = self._mask(data, act)
            if self.policy == "raise":  # late raise: keep the batch as checked, for the snapshot
                entry.snapshot_batch = data
        if self.policy == "mask" and self.weight_key is not None:
            w = loss_weight(act)
            self.sample_weight = w
            if type(out) is dict:
                out = out if out is not data else dict(out)
                out[self.weight_key] = w
        tokens = self._tokens(data)
        ev2 = _timing_event(self.device) if self.device is not None else None
        if ev0 is not None:
            entry.timing_events = (self._step_end, ev0, ev1, ev2)
            self._step_end = None
        self._stage(entry, tokens)
        return out, entry

    def _process_host(self, data, entry: _Entry):
        """The CPU path: flags are host memory already, so read them now (no device to stall) and do only
        what a flagged batch needs."""
        res = entry.checks
        if type(res) is HostChecks:  # numpy already: no tensor round trip (values: when first read)
            fl = entry.flagged_host = res.flagged_np
            entry._value_from = res
        else:
            fl = entry.flagged_host = res.flagged.numpy()
            entry.value_host = res.value.numpy()
        entry.read = True
        any_flag = np.count_nonzero(fl) > 0  # == fl.any(), a fraction of its fixed cost
        act = None
        if any_flag:
            sel = [i for i, a in enumerate(entry.acting) if a]
            act = fl[sel].any(0) if sel else np.zeros(fl.shape[1], dtype=bool)
            if not act.any():
                act = None
        out = data
        policy = self.policy
        if act is not None:
            if policy == "raise":
                self._raise(entry, data)
            if policy == "skip":
                entry.action = "skipped"
                self._record_skipped(entry)
                return None, entry
            if policy == "mask":
                out = self._mask(data, torch.from_numpy(act))
        if policy == "mask" and self.weight_key is not None:
            w = loss_weight(torch.from_numpy(act if act is not None else np.zeros(fl.shape[1], dtype=bool)))
            self.sample_weight = w
            if type(out) is dict:
                out = out if out is not data else dict(out)
                out[self.weight_key] = w
        entry.tokens_host = self._tokens(data) if self.plan.ids_key is not None else 0
        if any_flag:
            self._on_read(entry)
        return out, entry

    def _tokens(self, data):
        p = self.plan
        if p.ids_key is None:
            return 0
        named = data if isinstance(data, Mapping) else dict(enumerate(data))
        m = named.get(p.mask_key) if p.mask_key is not None else None
        if m is None:
            return named[p.ids_key].numel()
        if m.is_cpu:
            return int(m.sum())
        return m.sum(dtype=torch.int64)   # read back late with the flags

    def _mask(self, data, act: torch.Tensor):
        """Neutralize the samples marked in act (bool [B]) without reading anything back."""
        return mask_batch(self.plan, data, act, self.ignore_index, self.pad_id)

    # ------------------------------------------------------------------------------------------ readback

    def watch_loss(self, loss: torch.Tensor, batch=None) -> bool:
        """Test the training loss of the batch last handed out (or `batch`): non-finite, or a spike. The verdict
        is read back late (no sync) except on the CPU and under skip / mask. Returns True when the optimizer
        step should be skipped (skip / mask, bad loss; always False under raise / warn); also `skip_step`."""
        if self._handed is None and batch is None:
            raise RuntimeError("watch_loss: no batch was handed out by this guard yet")
        entry, out, rng = self._handed if self._handed is not None else (None, None, None)
        self._loss_on = True
        le = _LossEntry(entry, out if batch is None else batch, rng or _rng_state(self.device),
                        self.loss_watch.update(loss))
        self.skip_step = False
        dev = le.packed.device.type
        if dev == "cpu" or (self.policy in ("skip", "mask") and dev != "meta"):
            self._on_loss(le, le.packed.cpu().tolist())  # skip / mask: the one host read they need
            return self.skip_step
        if dev == "cuda":
            le.staged, le.event = _late_copy(le.packed)
            self._pending.append(le)
            while sum(type(e) is _LossEntry for e in self._pending) > 8:  # bound the batches held
                self._drain(block=True, limit=1)
        return False

    def _on_loss(self, le: _LossEntry, packed: list) -> None:
        value, nonfinite, spike, ema = packed
        if not (nonfinite or spike):
            return
        kind = "nonfinite" if nonfinite else "spike"
        e = le.entry
        step = e.step if e is not None else self.step
        trace_id = uuid.uuid4().hex
        info = {"value": value, "kind": kind, "reference": ema, "spike_factor": self.loss_watch.spike_factor,
                "threshold": None if self.loss_watch.spike_factor is None else self.loss_watch.spike_factor * ema}
        path = None
        if self.snapshot_dir is not None and le.batch is not None and \
                sum(ev["snapshot"] is not None for ev in self.loss_events) < self.loss_snapshots:
            data = le.batch
            named = dict(data) if isinstance(data, Mapping) else dict(enumerate(data))
            checks = e.checks if e is not None else None
            path = save_snapshot(self.snapshot_dir, named=named, is_dict=isinstance(data, Mapping),
                                 checks=checks, device_calls=e.device_calls if e is not None else 0,
                                 keys=e.keys if e else None, shards=e.shards if e else None,
                                 rows=e.rows if e else None, step=step, trace_id=trace_id, policy=self.policy,
                                 plan=self.plan, reason="loss", loss=info, rng=le.rng)
            self.snapshots.append(path)
        action = {"raise": "raised", "warn": "warned"}.get(self.policy, "skipped step")
        self.loss_events.append({"step": step, "trace_id": trace_id, **info, "snapshot": path, "action": action})
        if self.profiler is not None:
            self.profiler.record_bad([f"loss:{kind}"], action)
        msg = (f"guard: {'non-finite' if nonfinite else 'spiking'} loss {value:g} at step {step} (trace {trace_id})"
               + (f" > {info['threshold']:g} ({info['spike_factor']:g} x moving average {ema:g})" if spike else "")
               + (f"; snapshot: {path}" if path else "")
               + (f"; find the culprit samples: dataaudit replay {path} --model MODULE:FACTORY" if path else ""))
        if self.policy == "raise":
            raise BadLossError(msg, step=step, trace_id=trace_id, snapshot=path, loss=value, kind=kind)
        log.warning("%s -> %s", msg, action)
        if self.policy in ("skip", "mask"):
            self.skip_step = True

    def _stage(self, entry: _Entry, tokens) -> None:
        fl, va = entry.checks.flagged, entry.checks.value
        if fl.device.type == "cpu":
            entry.flagged_host, entry.value_host = fl.numpy(), va.numpy()
            entry.tokens_host = int(tokens)
            entry.read = True
            self._on_read(entry)
            return
        if fl.device.type != "cuda":  # e.g. meta: nothing to read back
            entry.read = True
            entry.flagged_host = entry.value_host = None
            entry.tokens_host = 0
            return
        pf, pv = _pinned_copy(fl), _pinned_copy(va)
        pt = _pinned_copy(tokens) if isinstance(tokens, torch.Tensor) else int(tokens)
        ev = torch.cuda.Event()
        ev.record()
        entry.staged, entry.event = (pf, pv, pt), ev
        self._pending.append(entry)

    def _drain(self, block: bool, limit: int | None = None) -> None:
        while self._pending and (limit is None or limit > 0):
            e = self._pending[0]
            if not block and not e.event.query():
                break
            if block:
                e.event.synchronize()
            self._pending.popleft()
            if limit is not None:
                limit -= 1
            if type(e) is _LossEntry:
                packed, e.staged, e.event = e.staged.tolist(), None, None
                self._on_loss(e, packed)
                continue
            pf, pv, pt = e.staged
            e.flagged_host, e.value_host = pf.numpy(), pv.numpy()
            e.tokens_host = int(pt) if isinstance(pt, torch.Tensor) else pt
            if e.timing_events is not None:  # complete: recorded before e.event on the same stream
                end_prev, a, b, c = e.timing_events
                e.gpu = (a.elapsed_time(b) / 1e3, b.elapsed_time(c) / 1e3,
                         end_prev.elapsed_time(a) / 1e3 if end_prev is not None else None)
            e.staged = e.event = None
            e.read = True
            self._on_read(e)
        self._record_ready()

    def _read_now(self, entry: _Entry) -> None:
        """skip / raise (immediate): the flags of this batch on the host now."""
        if entry.read:
            return
        entry.flagged_host = entry.checks.flagged.cpu().numpy()
        entry.value_host = entry.checks.value.cpu().numpy()
        entry.read = True

    def _on_read(self, e: _Entry) -> None:
        """The batch's flags are on the host: findings, log line, late raise."""
        if e.flagged_host is None or e.action == "skipped":
            return
        fl = e.flagged_host
        if not fl.size or not fl.any():
            return
        acted = any(a and fl[c].any() for c, a in enumerate(e.acting))
        if self.policy == "raise" and acted and e.snapshot_batch is not None:
            self._raise(e, e.snapshot_batch)  # late raise (the batch went out masked)
        e.action = _ACTION[self.policy] if acted else "warned"
        self._findings(e, e.action)

    def _findings(self, e: _Entry, action: str) -> list[Finding]:
        fl, va = e.flagged_host, e.value_host
        out = []
        for c, call in enumerate(e.checks.calls):
            idx = np.flatnonzero(fl[c])
            for i in idx.tolist():
                v = float(va[c, i])
                out.append(Finding(e.step, i, _at(e.keys, i), _at(e.shards, i), call.check, call.field,
                                   call.severity, v, format_value(call, v),
                                   action if e.acting[c] else "warned",
                                   "device" if c < e.device_calls else "collate"))
        room = self.max_findings - len(self.findings)
        if room > 0:
            self.findings.extend(out[:room])
        by_check: dict[str, list[int]] = {}
        for f in out:
            by_check.setdefault(f"{f.check}:{f.field}", []).append(f.position)
        self.bad_batches.append({"step": e.step, "action": action,
                                 "checks": {k: len(v) for k, v in by_check.items()},
                                 "positions": by_check,
                                 "keys": sorted({str(f.key) for f in out if f.key is not None})})
        log.warning("guard: step %d: %s -> %s", e.step, _describe(out), action)
        return out

    def _raise(self, e: _Entry, data) -> None:
        trace_id = uuid.uuid4().hex
        e.action = "raised"
        out = self._findings(e, "raised")
        path = None
        if self.snapshot_dir is not None:
            named = dict(data) if isinstance(data, Mapping) else dict(enumerate(data))
            path = save_snapshot(self.snapshot_dir, named=named, is_dict=isinstance(data, Mapping),
                                 checks=e.checks, device_calls=e.device_calls, keys=e.keys, shards=e.shards,
                                 rows=e.rows, step=e.step, trace_id=trace_id, policy=self.policy, plan=self.plan)
            self.snapshots.append(path)
        acting = [f for f in out if f.severity in self.act_on]
        msg = (f"guard: bad batch at step {e.step} (trace {trace_id}): {_describe(acting or out)}"
               + (f"; snapshot: {path}" if path else ""))
        if self.profiler is not None:
            self.profiler.record_bad(sorted({f"{f.check}:{f.field}" for f in out}), "raised")
        raise BadBatchError(msg, step=e.step, trace_id=trace_id, snapshot=path, findings=out)

    def _record_skipped(self, e: _Entry) -> None:
        self._findings(e, "skipped")
        if self.profiler is not None:
            fl = e.flagged_host
            self.profiler.record_bad([c.label for i, c in enumerate(e.checks.calls) if fl[i].any()], "skipped")

    def _record_ready(self) -> None:
        """Profiler records for steps whose compute time and flags are both known, in step order."""
        while self._unrecorded and self._unrecorded[0].read:
            e = self._unrecorded.popleft()
            if self.profiler is None:
                continue
            fl = e.flagged_host
            bad = [] if fl is None else [c.label for i, c in enumerate(e.checks.calls) if fl[i].any()]
            self.profiler.add(StepRecord(
                step=e.step, samples=e.batch_size, tokens=int(e.tokens_host or 0), wait_s=e.wait_s,
                copy_s=e.copy_s, guard_s=e.guard_s, compute_s=e.compute_s or 0.0, wall_s=e.wall_s,
                bad_checks=bad, action=e.action if bad else "", skipped_batches=e.skipped_before,
                gpu_copy_s=e.gpu[0] if e.gpu else None, gpu_guard_s=e.gpu[1] if e.gpu else None,
                gpu_idle_s=e.gpu[2] if e.gpu else None))

    # ------------------------------------------------------------------------------------------ reporting

    def summary(self) -> dict:
        """Profiler summary plus the guard's record: bad batches, findings count, snapshots, skipped checks."""
        s = self.profiler.summary() if self.profiler is not None else {}
        s.update({"policy": self.policy, "act_on": sorted(self.act_on), "loss_events": len(self.loss_events),
                  "checks": [c.label for c in self.plan.calls], "skipped_checks": dict(self.plan.skipped),
                  "findings": len(self.findings), "bad_batch_records": len(self.bad_batches),
                  "snapshots": [str(p) for p in self.snapshots]})
        return s

    def close(self) -> None:
        self.flush()
        if self.profiler is not None:
            self.profiler.close()


def _pinned_copy(t: torch.Tensor) -> torch.Tensor:
    """A non_blocking copy of a device tensor into pinned host memory (complete once a later event is)."""
    p = torch.empty(t.shape, dtype=t.dtype, pin_memory=True)
    p.copy_(t, non_blocking=True)
    return p


def _late_copy(t: torch.Tensor):
    """(pinned host copy, CUDA event recorded after it): read the copy once the event has completed."""
    p = _pinned_copy(t)
    ev = torch.cuda.Event()
    ev.record()
    return p, ev


def _rng_state(device) -> dict:
    """The RNG state a step starts from: torch's CPU generator, and the CUDA one when the guard's device is CUDA
    (host-side state: no sync)."""
    out = {"cpu": torch.get_rng_state()}
    if device is not None and device.type == "cuda":
        out["cuda"] = torch.cuda.get_rng_state(device)
    return out


def _labels(calls) -> frozenset:
    return frozenset(f"{c[0]}:{c[1]}" for c in calls)


def _timing_event(device):
    if device is None or device.type != "cuda":
        return None
    ev = torch.cuda.Event(enable_timing=True)
    ev.record()
    return ev


def _unwrap(raw):
    """(data, keys, shards, rows, collate guard payload) of what the loader yielded."""
    if isinstance(raw, GuardedBatch):
        return raw.data, raw.keys, raw.shards, raw.rows, raw.guard
    if isinstance(raw, dict) and (KEY in raw or SHARD in raw or ROW in raw or GUARD in raw):
        data = dict(raw)
        keys, shards, rows, payload = (data.pop(KEY, None), data.pop(SHARD, None), data.pop(ROW, None),
                                       data.pop(GUARD, None))
        return data, _listify(keys), _listify(shards), _listify(rows), payload
    return raw, None, None, None, None


def _listify(v):
    if isinstance(v, torch.Tensor):
        return v.tolist()
    return None if v is None else list(v)


def _at(seq, i):
    return None if seq is None or i >= len(seq) else seq[i]


def _describe(findings: list[Finding], limit: int = 6) -> str:
    by: dict[str, list[Finding]] = {}
    for f in findings:
        by.setdefault(f"{f.check}:{f.field}", []).append(f)
    parts = []
    for label, fs in by.items():
        names = ", ".join(f"{f.position}={f.shard}:{f.key}" if f.key is not None else str(f.position)
                          for f in fs[:limit])
        more = f" +{len(fs) - limit} more" if len(fs) > limit else ""
        parts.append(f"{label} at [{names}{more}] ({fs[0].detail})")
    return "; ".join(parts)


__all__ = ["DeviceGuard", "BadBatchError", "BadLossError", "Finding", "GuardOptions", "POLICIES"]
