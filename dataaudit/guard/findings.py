"""What the device guard found in the batches, and what it did about them.

Finding is one flagged (sample, check); FindingsRecord turns a batch whose flags are on the host into findings, a
record per bad batch and a log line, and under policy raise into a snapshot of the batch and BadBatchError. The
loss guard (dataaudit.guard.loss) adds its snapshots to the same record.
"""
from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from dataaudit.guard.plan import format_value
from dataaudit.guard.snapshot import save_snapshot

log = logging.getLogger("dataaudit.guard")

ACTIONS = {"raise": "raised", "skip": "skipped", "mask": "masked", "warn": "warned"}


class BadBatchError(RuntimeError):
    """A batch failed an acting check under policy "raise". Attributes: step, trace_id, snapshot (path or None),
    findings (list of Finding)."""

    def __init__(self, message: str, *, step: int, trace_id: str, snapshot, findings):
        super().__init__(message)
        self.step, self.trace_id, self.snapshot, self.findings = step, trace_id, snapshot, findings


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
    rank: int | None = None  # the process's rank under torch.distributed (None: not distributed)


class FindingsRecord:
    """The findings of a run (at most max_findings), a record per bad batch, the snapshots written.

    plan: the GuardPlan (its resolved config goes into snapshots); options: the guard's GuardOptions (policy,
    act_on, snapshot_dir, max_findings); profiler: a ThroughputProfiler or None (bad batches by check)."""

    def __init__(self, plan, options, profiler):
        self.plan, self.options, self.profiler = plan, options, profiler
        self.findings: list[Finding] = []
        self.bad_batches: list[dict] = []
        self.snapshots: list[Path] = []
        self.rank: int | None = None   # set by the guard's RankSync: findings and snapshots name the rank

    def on_read(self, e) -> None:
        """The batch's flags are on the host (a BatchEntry): findings, log line, late raise."""
        if e.flagged_host is None or e.action == "skipped":
            return
        fl = e.flagged_host
        if not fl.size or not fl.any():
            return
        policy = self.options.policy
        acted = any(a and fl[c].any() for c, a in enumerate(e.acting))
        if policy == "raise" and acted and e.snapshot_batch is not None:
            self.raise_bad(e, e.snapshot_batch)  # late raise (the batch went out masked)
        e.action = ACTIONS[policy] if acted else "warned"
        self.add(e, e.action)

    def add(self, e, action: str) -> list[Finding]:
        """The batch's findings (acting checks: `action`, the others: warned), recorded and logged."""
        fl, va = e.flagged_host, e.value_host
        out = []
        for c, call in enumerate(e.checks.calls):
            idx = np.flatnonzero(fl[c])
            for i in idx.tolist():
                v = float(va[c, i])
                out.append(Finding(e.step, i, _at(e.keys, i), _at(e.shards, i), call.check, call.field,
                                   call.severity, v, format_value(call, v),
                                   action if e.acting[c] else "warned",
                                   "device" if c < e.device_calls else "collate", self.rank))
        room = self.options.max_findings - len(self.findings)
        if room > 0:
            self.findings.extend(out[:room])
        by_check: dict[str, list[int]] = {}
        for f in out:
            by_check.setdefault(f"{f.check}:{f.field}", []).append(f.position)
        self.bad_batches.append({"step": e.step, "action": action,
                                 "checks": {k: len(v) for k, v in by_check.items()},
                                 "positions": by_check,
                                 "keys": sorted({str(f.key) for f in out if f.key is not None})})
        log.warning("guard: step %d: %s -> %s", e.step, describe(out) or "no flag on this rank", action)
        return out

    def raise_bad(self, e, data, *, trace_id: str | None = None, ranks=None) -> None:
        """Policy raise: record the batch, snapshot `data` (the batch as checked), raise BadBatchError.
        Across ranks (dataaudit.guard.ranks): `trace_id` is the one every rank uses for this step and `ranks` the
        ranks whose batch had an acting flag (this rank's own batch may be clean: its part is snapshotted all the
        same)."""
        trace_id = trace_id or uuid.uuid4().hex
        e.action = "raised"
        fl = e.flagged_host
        own = fl is not None and fl.size and fl.any()
        out = self.add(e, "raised") if own else []
        if not own:
            self.bad_batches.append({"step": e.step, "action": "raised", "checks": {}, "positions": {}, "keys": []})
        if ranks is not None:
            self.bad_batches[-1]["ranks"] = list(ranks)
        path = None
        o = self.options
        if o.snapshot_dir is not None:
            named = dict(data) if isinstance(data, Mapping) else dict(enumerate(data))
            path = save_snapshot(o.snapshot_dir, named=named, is_dict=isinstance(data, Mapping),
                                 checks=e.checks, device_calls=e.device_calls, keys=e.keys, shards=e.shards,
                                 rows=e.rows, step=e.step, trace_id=trace_id, policy=o.policy, plan=self.plan,
                                 rank=self.rank)
            self.snapshots.append(path)
        acting = [f for f in out if f.severity in o.act_on]
        where = ""
        if ranks is not None:
            where = f" on rank(s) {', '.join(map(str, ranks))}" + (
                "" if self.rank in ranks else f"; this rank ({self.rank}) had none, it stops with them")
        msg = (f"guard: bad batch at step {e.step}{where} (trace {trace_id})"
               + (f": {describe(acting or out)}" if out else "")
               + (f"; snapshot: {path}" if path else ""))
        if self.profiler is not None:
            self.profiler.record_bad(sorted({f"{f.check}:{f.field}" for f in out}), "raised")
        raise BadBatchError(msg, step=e.step, trace_id=trace_id, snapshot=path, findings=out)

    def dropped_in_collate(self, step: int, dropped) -> None:
        """The samples the collate guard dropped (drop=True) from the batch of `step`: a record each."""
        self.bad_batches.extend({"step": step, "dropped_in_collate": d} for d in dropped)

    def skipped(self, e, ranks=None) -> None:
        """Policy skip: the batch was dropped (`ranks`: the ranks whose batch had an acting flag, when they
        agree: a rank with a clean batch drops it too)."""
        e.action = "skipped"
        self.add(e, "skipped")
        if ranks is not None:
            self.bad_batches[-1]["ranks"] = list(ranks)
        if self.profiler is not None:
            fl = e.flagged_host
            self.profiler.record_bad([c.label for i, c in enumerate(e.checks.calls) if fl[i].any()], "skipped")


def _at(seq, i):
    return None if seq is None or i >= len(seq) else seq[i]


def describe(findings: list[Finding], limit: int = 6) -> str:
    """One line: per check:field, the first `limit` positions with their shard:key, and the first detail."""
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


__all__ = ["Finding", "FindingsRecord", "BadBatchError", "ACTIONS", "describe"]
