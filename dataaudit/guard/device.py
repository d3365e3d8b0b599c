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

The loss guard: `guard.watch_loss(loss)` after the forward pass tests the loss (non-finite, above a ceiling, or a
spike over the median of recent losses: dataaudit.guard.loss) on its device and reads the verdict back late, like the flags. A bad loss
gets a snapshot of the batch that produced it (kept by reference until then: only the batches whose loss is
still pending), with trace ids, step, loss and RNG state; then the policy: raise -> BadLossError (late on an
accelerator); warn -> logged; skip and mask -> watch_loss reads the verdict at once (one small read per step on
an accelerator) and returns True: skip this optimizer step (there is no sample to mask in a loss).
`dataaudit replay SNAPSHOT --model module:factory` then finds the culprit samples.

Under torch.distributed (world size > 1, or process_group=) the ranks agree per step with one small all-reduce, so
every rank skips, raises or masks at the same step, and compare the samples they read (rank_overlap,
rank_imbalance, coverage): RankSync (ranks.py), docs/guard.md "Distributed training".

compile=True runs a batch's checks, mask and weights (DeviceStep, device_step.py) and the loss test as functions
fused by torch.compile (compiled.py), with eager as the fallback.

The parts: GuardOptions (options.py) the settings; ReadbackQueue (readback.py) the flags' and verdicts' way back;
FindingsRecord (findings.py) the findings, snapshots and raise of bad batches; LossGuard (loss.py) watch_loss;
GradGuard (grads.py) watch_grads; SkipList (skip_list.py) the samples `skip_list=` drops before anything else.
"""
from __future__ import annotations

import time
from collections import deque
from typing import Iterable, Iterator, Mapping

import numpy as np
import torch

from dataaudit.guard.device_step import DeviceStep
from dataaudit.guard.findings import BadBatchError, Finding, FindingsRecord
from dataaudit.guard.grads import BadGradError, GradGuard
from dataaudit.guard.loss import BadLossError, LossGuard
from dataaudit.guard.masking import fill_values, loss_weight, mask_batch
from dataaudit.guard.options import POLICIES, GuardOptions
from dataaudit.guard.payload import GuardedBatch, checks_from_payload
from dataaudit.guard.plan import BatchChecks, GuardPlan, HostChecks, device_of
from dataaudit.guard.profiler import StepRecord, ThroughputProfiler
from dataaudit.guard.ranks import rank_sync
from dataaudit.guard.readback import BatchEntry, ReadbackQueue, read_now
from dataaudit.guard.skip_list import as_skip_list, take_rows
from dataaudit.guard.tree import move_tree
from dataaudit.provenance import GUARD, KEY, ROW, SHARD


class DeviceGuard:
    """Wrap a DataLoader (any iterable of batches): device copy, the audit's checks, a policy, a profiler.

    loader: yields dict batches (tuple/list with names=...), possibly from CollateGuard (provenance + its
        results are then merged in).
    config: the audit TOML path, an AuditConfig or None (as GuardPlan).
    device: where batches go (None: leave them where they are, e.g. CPU training).
    options: a GuardOptions, or its fields as keywords (policy="mask", snapshot_dir=None, ...), not both.
    """

    def __init__(self, loader: Iterable, config=None, *, device=None, options: GuardOptions | None = None,
                 **keywords):
        o = self.options = GuardOptions.from_arguments("DeviceGuard", options, keywords)
        self.loader = loader
        self.plan = GuardPlan(config, checks=o.checks, names=o.names, fields=o.fields)
        self.device = torch.device(device) if device is not None else None
        self.ignore_index, self.pad_id = fill_values(self.plan, o.ignore_index, o.pad_id)
        if o.profile is True:
            self.profiler = ThroughputProfiler(log_every=o.log_every, jsonl=o.jsonl)
        else:
            self.profiler = o.profile or None
        self.record = FindingsRecord(self.plan, o, self.profiler)
        self.device_step = DeviceStep(self.plan, o.act_on, self.ignore_index, self.pad_id, o.compile)
        self.readback = ReadbackQueue(self.record.on_read, self._record_ready)
        self.loss_guard = LossGuard(o, self.plan, self.device, self.readback, self.record)
        self.ranks = rank_sync(o, self.record)   # None unless ranks must agree (guard/ranks.py)
        self.grad_guard = GradGuard(o, self.loss_guard)
        self.skip_list = as_skip_list(o.skip_list)
        self.skipped_listed = 0        # samples dropped because the skip list names them (here or in collate)
        self.step = -1                 # index of the last batch drawn from the loader
        self.last_checks: BatchChecks | None = None
        self.sample_weight: torch.Tensor | None = None   # mask: the last batch's weights (tuple batches)
        self._acting_key = self._acting_val = None
        self._step_end = None
        self._unrecorded: deque[BatchEntry] = deque()   # steps handed out, waiting for their profiler record

    # the names the guard has always had: its options (read-only) and what its parts record
    policy = property(lambda self: self.options.policy)
    act_on = property(lambda self: self.options.act_on)
    weight_key = property(lambda self: self.options.weight_key)
    snapshot_dir = property(lambda self: self.options.snapshot_dir)
    late_raise = property(lambda self: self.options.late_raise)
    non_blocking = property(lambda self: self.options.non_blocking)
    pin_memory = property(lambda self: self.options.pin_memory)
    max_findings = property(lambda self: self.options.max_findings)
    loss_snapshots = property(lambda self: self.options.loss_snapshots)
    findings = property(lambda self: self.record.findings, doc="list of Finding")
    bad_batches = property(lambda self: self.record.bad_batches)
    snapshots = property(lambda self: self.record.snapshots)
    loss_watch = property(lambda self: self.loss_guard.watch)
    loss_events = property(lambda self: self.loss_guard.events)
    skip_step = property(lambda self: self.loss_guard.skip_step or self.grad_guard.skip_step,
                         doc="skip / mask: the last watched loss or gradients were bad (skip the optimizer step)")
    grad_events = property(lambda self: self.grad_guard.events)
    grad_ok = property(lambda self: self.grad_guard.ok,
                       doc="the last watch_grads verdict as a 0-dim device tensor (True: fine), never read back")

    def __len__(self) -> int:
        return len(self.loader)  # type: ignore[arg-type]

    def __iter__(self) -> Iterator:
        return self._iterate()

    # ------------------------------------------------------------------------------------------ the loop

    def _iterate(self):
        it = iter(self.loader)
        if self.ranks is not None:
            self.ranks.start_epoch(self.loader)
        prev: BatchEntry | None = None
        carry = [0.0, 0.0, 0.0, 0]   # wait, copy, guard, batches of skipped batches -> the next step
        clock = time.perf_counter
        done = False
        try:
            while True:
                t_req = clock()
                self._step_end = _timing_event(self.device)  # CUDA: the GPU reaches it when the step's work is done
                if prev is not None:
                    self._unrecorded.append(_step_done(prev, t_req))
                    prev = None
                if self.ranks is not None:
                    self.ranks.before_step(self.step + 1)
                self.readback.drain(block=False)
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
                self._unrecorded.append(_step_done(prev, time.perf_counter()))
            if done:
                if self.ranks is not None:
                    self.ranks.end_epoch()
                self.flush()
            else:  # stopped early (break, or an error in the training step): record what is complete
                self._record_ready()

    def poll(self) -> None:
        """Read back what has arrived, without waiting (may raise late: BadBatchError, BadLossError)."""
        self.readback.drain(block=False)

    def flush(self) -> None:
        """Read back every pending batch's flags (waits for the device) and record them. Called at the end of
        the iteration; call it before reading `findings` mid-epoch on an accelerator."""
        self.readback.drain(block=True)
        self._record_ready()

    def record_step(self, entry: BatchEntry) -> None:
        """A step whose times are complete (a loop that drives `process` itself, e.g. the Lightning callback):
        its profiler record is added once its flags are read too."""
        self._unrecorded.append(entry)
        self._record_ready()

    # ------------------------------------------------------------------------------------------ one batch

    def _acting(self, calls) -> list:
        if calls is not self._acting_key:
            self._acting_key = calls
            self._acting_val = [c.severity in self.options.act_on for c in calls]
        return self._acting_val

    def process(self, raw):
        """Guard one batch as drawn from the loader: (batch for the training loop or None if skipped, entry).
        Usable without the iterator (e.g. the Lightning callback)."""
        out, entry = self._process(raw)
        self.loss_guard.hand_out(entry, out)   # the batch a loss given to watch_loss comes from
        return out, entry

    def _process(self, raw):
        clock = time.perf_counter
        o = self.options
        self.step += 1
        data, keys, shards, rows, worker = _unwrap(raw)
        if worker is not None and worker.get("dropped"):
            self._count_listed(sum(d.get("checks") == ["skip_list"] for d in worker["dropped"]))
        listed = self.skip_list.mask(shards, keys) if self.skip_list is not None else None
        if worker is not None and worker.get("listed"):   # the collate guard found the whole batch listed
            listed = np.ones(len(worker["listed"]), dtype=bool)
        if listed is not None and listed.all() and self.ranks is not None:
            return self._listed_across_ranks(data, keys, shards, rows, listed)
        if listed is not None and listed.any():   # host lists: no device read
            data, keys, shards, rows, worker = _drop_listed(listed, data, keys, shards, rows, worker)
            self._count_listed(int(listed.sum()))
            if listed.all():
                entry = BatchEntry(self.step, 0, [], [], [], None, 0, [], 0.0)
                entry.read, entry.action = True, "skipped"
                return None, entry
        t0 = clock()
        data, worker, ev0, ev1 = _to_device(data, worker, self.device, o)
        t1 = clock()
        # a check the collate guard ran on a field is its finding, not run again here
        exclude = _labels(worker["calls"]) if worker is not None else frozenset()
        if _on_host(data):
            res = self.plan.run(data, exclude)
            return self._process_host(data, self._entry(res, len(res.calls), worker, keys, shards, rows, t1 - t0))
        return self._process_device(data, worker, exclude, (keys, shards, rows), t1 - t0, ev0, ev1)

    def _entry(self, res: BatchChecks, device_calls: int, worker, keys, shards, rows, copy_s: float) -> BatchEntry:
        """The step's record: this guard's results and the collate guard's (carried in `worker`)."""
        if worker is not None:
            res = res.concat(checks_from_payload(worker))
            if worker.get("dropped"):
                self.record.dropped_in_collate(self.step, worker["dropped"])
        self.last_checks = res
        return BatchEntry(self.step, res.num_samples, keys, shards, rows, res, device_calls, self._acting(res.calls),
                          copy_s)

    def _process_device(self, data, worker, exclude: frozenset, trace, copy_s: float, ev0, ev1):
        """An accelerator: nothing here reads device memory back, except skip and late_raise=False (one read)."""
        o = self.options
        policy = o.policy
        ranks = self.ranks
        sync = policy == "skip" or (policy == "raise" and (not o.late_raise or ranks is not None))
        # across ranks raise agrees before the batch goes out, as skip (a late raise could not agree the step)
        output = _step_output(policy, sync, ranks is not None, o.weight_key is not None)
        extra = None
        if worker is not None and output != "flags":   # the rows the collate guard's checks act on
            pay = checks_from_payload(worker)
            extra = pay.rows([c.severity in o.act_on for c in pay.calls]) if pay.calls else None
        fl, va, act, out, weight = self.device_step.run(data, exclude, output, extra)
        calls = self.plan.calls_without(exclude)
        entry = self._entry(BatchChecks(calls, fl, va), len(calls), worker, *trace, copy_s)
        if sync:
            agreed = ranks.step(entry, act.any(), wait=True) if ranks is not None else None
            if (bool(act.any()) if agreed is None else bool(agreed)):  # the one host read (a sync per batch)
                read_now(entry)
                if policy == "raise":
                    self._raise(entry, data, agreed)
                self.record.skipped(entry, agreed)
                return None, entry
        elif ranks is not None:   # async: which ranks flagged, read back late (no sync)
            ranks.step(entry, act.any(), wait=False)
        if policy == "raise" and not sync:  # late raise: the batch goes out masked; the snapshot keeps it as checked
            entry.snapshot_batch = data
        if weight is not None:
            out = self._weigh(out, data, act, weight)
        tokens = _tokens(self.plan, data)
        ev2 = _timing_event(self.device) if self.device is not None else None
        if ev0 is not None:
            entry.timing_events = (self._step_end, ev0, ev1, ev2)
            self._step_end = None
        self.readback.stage(entry, tokens)
        return out, entry

    def _process_host(self, data, entry: BatchEntry):
        """The CPU path: flags are host memory already, so read them now (no device to stall) and do only
        what a flagged batch needs."""
        res = entry.checks
        if type(res) is HostChecks:  # numpy already: no tensor round trip (values: when first read)
            fl = entry.flagged_host = res.flagged_np
            entry.value_from = res
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
        policy = self.options.policy
        agreed = None
        if self.ranks is not None:   # skip, raise: wait for the ranks' agreement; mask, warn: async
            agreed = self.ranks.step(entry, act is not None, wait=policy in ("skip", "raise"))
        if act is not None or agreed:
            if policy == "raise":
                self._raise(entry, data, agreed)
            if policy == "skip":
                self.record.skipped(entry, agreed)
                return None, entry
            if policy == "mask" and act is not None:
                out = mask_batch(self.plan, data, torch.from_numpy(act), self.ignore_index, self.pad_id)
        if policy == "mask" and self.options.weight_key is not None:
            out = self._weigh(out, data, torch.from_numpy(act if act is not None
                                                          else np.zeros(fl.shape[1], dtype=bool)))
        entry.tokens_host = _tokens(self.plan, data) if self.plan.ids_key is not None else 0
        if any_flag:
            self.record.on_read(entry)
        return out, entry

    def _raise(self, entry, data, agreed) -> None:
        if agreed is None:   # not distributed (or the ranks no longer agree this epoch)
            self.record.raise_bad(entry, data)
        else:
            self.record.raise_bad(entry, data, trace_id=self.ranks.trace_id(entry.step), ranks=agreed)

    def _listed_across_ranks(self, data, keys, shards, rows, listed: np.ndarray):
        """Every sample of the batch is on the skip list, under torch.distributed: this rank cannot drop the step
        alone (the others' collectives would wait for it). Under skip its flag in the step's agreement makes every
        rank skip the step; under the other policies the batch goes out with every sample masked (loss weight 0),
        and a raise agreed for another rank's bad batch is raised here too."""
        o = self.options
        n = len(listed)
        self._count_listed(n)
        checks = HostChecks((), np.zeros((0, n), dtype=bool), np.zeros((0, n)))
        entry = BatchEntry(self.step, n, keys, shards, rows, checks, 0, [], 0.0)
        entry.read, entry.flagged_host, entry.action = True, checks.flagged_np, "skipped"
        agreed = self.ranks.step(entry, o.policy == "skip", wait=o.policy in ("skip", "raise"))
        if o.policy == "skip":
            self.record.skipped(entry, agreed)
            return None, entry
        if o.policy == "raise" and agreed:
            self._raise(entry, data, agreed)
        data, _, _, _ = _to_device(data, None, self.device, o)
        self.plan.resolve(data)   # which entries mask_batch neutralizes (the first batch may be this one)
        act = torch.ones(n, dtype=torch.bool, device=self.device)
        out = mask_batch(self.plan, data, act, self.ignore_index, self.pad_id)
        if o.weight_key is not None:
            out = self._weigh(out, data, act)
        entry.action = "masked"
        return out, entry

    def _count_listed(self, n: int) -> None:
        self.skipped_listed += n
        if n and self.profiler is not None:
            self.profiler.record_listed(n)

    def _weigh(self, out, data, act: torch.Tensor, weight: torch.Tensor | None = None):
        """mask: the per-sample loss weights (`sample_weight`; a dict batch gets them under weight_key)."""
        w = self.sample_weight = loss_weight(act) if weight is None else weight
        if type(out) is dict:
            out = out if out is not data else dict(out)
            out[self.options.weight_key] = w
        return out

    # ------------------------------------------------------------------------------------------ loss, records

    def watch_loss(self, loss: torch.Tensor, batch=None) -> bool:
        """Test the training loss of the batch last handed out (or `batch`): non-finite, or a spike. The verdict
        is read back late (no sync) except on the CPU and under skip / mask. Returns True when the optimizer
        step should be skipped (skip / mask, bad loss; always False under raise / warn); also `skip_step`. Across
        ranks the skip is agreed (one small all-reduce): every rank skips the optimizer step, or none does."""
        skip = self.loss_guard.check(loss, batch, self.step)
        if self.ranks is not None and self.options.policy in ("skip", "mask"):   # every rank skips, or none
            skip = self.loss_guard.skip_step = self.ranks.agree_skip(skip)
        return skip

    def watch_grads(self, model) -> bool:
        """Test the gradients now on `model`'s parameters (after backward; a module or (name, parameter) pairs):
        non-finite total norm, or above max_grad_norm (dataaudit.guard.grads), naming the largest. Read back
        late except on the CPU and under skip / mask. True when the optimizer step should be skipped (skip /
        mask); under raise a BadGradError with a snapshot of the batch."""
        skip = self.grad_guard.check(model, self.step)
        if self.ranks is not None and self.options.policy in ("skip", "mask"):   # every rank skips, or none
            skip = self.grad_guard.skip_step = self.ranks.agree_skip(skip)
        return skip

    def _record_ready(self) -> None:
        """Profiler records for steps whose compute time and flags are both known, in step order."""
        while self._unrecorded and self._unrecorded[0].read:
            e = self._unrecorded.popleft()
            if self.profiler is not None:
                self.profiler.add(_step_record(e))

    def summary(self) -> dict:
        """Profiler summary plus the guard's record: bad batches, findings count, snapshots, skipped checks."""
        s = self.profiler.summary() if self.profiler is not None else {}
        s.update({"policy": self.policy, "act_on": sorted(self.act_on), "loss_events": len(self.loss_events),
                  "grad_events": len(self.grad_events), "skipped_listed": self.skipped_listed,
                  "checks": [c.label for c in self.plan.calls], "skipped_checks": dict(self.plan.skipped),
                  "findings": len(self.findings), "bad_batch_records": len(self.bad_batches),
                  "snapshots": [str(p) for p in self.snapshots]})
        if self.ranks is not None:   # rank, agreement, rank_overlap / rank_imbalance / coverage
            s["ranks"] = self.ranks.summary()
        return s

    def close(self) -> None:
        self.flush()
        if self.profiler is not None:
            self.profiler.close()


def _drop_listed(listed: np.ndarray, data, keys, shards, rows, worker):
    """The batch without the samples the skip list names (rows selected on the host, before the copy)."""
    keep = np.flatnonzero(~listed)
    n = len(listed)
    pick = lambda v: None if v is None else [v[i] for i in keep.tolist()]  # noqa: E731
    return (take_rows(data, keep, n), pick(keys), pick(shards), pick(rows),
            None if worker is None else take_rows(worker, keep, n, payload=True))


def _tokens(plan: GuardPlan, data):
    """The batch's token count (attention mask sum, else the ids; 0 without token ids): an int on the CPU, a
    device tensor elsewhere (read back late with the flags)."""
    if plan.ids_key is None:
        return 0
    named = data if isinstance(data, Mapping) else dict(enumerate(data))
    m = named.get(plan.mask_key) if plan.mask_key is not None else None
    if m is None:
        return named[plan.ids_key].numel()
    if m.is_cpu:
        return int(m.sum())
    return m.sum(dtype=torch.int64)


def _step_done(e: BatchEntry, t: float) -> BatchEntry:
    """The step of `e` ended at t: its compute time (wall_s held the hand-out time until now) and wall time."""
    e.compute_s = t - e.wall_s
    e.wall_s = e.wait_s + e.copy_s + e.guard_s + e.compute_s
    return e


def _step_record(e: BatchEntry) -> StepRecord:
    fl = e.flagged_host
    bad = [] if fl is None else [c.label for i, c in enumerate(e.checks.calls) if fl[i].any()]
    return StepRecord(
        step=e.step, samples=e.batch_size, tokens=int(e.tokens_host or 0), wait_s=e.wait_s,
        copy_s=e.copy_s, guard_s=e.guard_s, compute_s=e.compute_s or 0.0, wall_s=e.wall_s,
        bad_checks=bad, action=e.action if bad else "", skipped_batches=e.skipped_before,
        gpu_copy_s=e.gpu[0] if e.gpu else None, gpu_guard_s=e.gpu[1] if e.gpu else None,
        gpu_idle_s=e.gpu[2] if e.gpu else None)


def _to_device(data, worker, device, o: GuardOptions):
    """(batch, collate payload, CUDA timing events before and after) on `device` (None: as they are)."""
    if device is None:
        return data, worker, None, None
    pin = o.pin_memory and device.type == "cuda"
    ev0 = _timing_event(device)
    data = move_tree(data, device, o.non_blocking, pin)
    if worker is not None:
        worker = move_tree(worker, device, o.non_blocking, pin)
    return data, worker, ev0, _timing_event(device)


def _step_output(policy: str, sync: bool, ranks: bool, weigh: bool) -> str:
    """What the device step computes besides the flags (the `output` of DeviceStep.run)."""
    if sync:
        return "act"        # read on the host before the batch goes out
    if policy == "warn":
        return "act" if ranks else "flags"   # the ranks learn which rank flagged
    if policy == "raise":
        return "mask"       # a late raise hands the batch out masked
    return "weigh" if weigh else "mask"


def _on_host(data) -> bool:
    """The batch's tensors are in host memory (the guard's CPU path: its flags are read at once)."""
    if not isinstance(data, (Mapping, tuple, list)):   # not a batch the plan reads: it says so, on either path
        return not isinstance(data, torch.Tensor) or data.is_cpu
    return device_of(data.values() if isinstance(data, Mapping) else data).type == "cpu"


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


__all__ = ["DeviceGuard", "BadBatchError", "BadLossError", "BadGradError", "Finding", "GuardOptions", "POLICIES"]
