"""Throughput profiler: where a training loop's time goes, step by step.

Every step's wall time (from one request for a batch to the next) is split into four parts that add up to it:

    wait     blocked in the DataLoader waiting for the next batch
    copy     host-to-device copy (pinning included when the loader did not pin)
    guard    the guard's own work: checks, policy, reading back earlier steps' flags
    compute  everything the training loop did with the batch until it asked for the next one

plus samples, tokens (real tokens: the attention mask's sum, else the ids' size), the checks that flagged
the batch and, on CUDA, the GPU-side copy/guard times and the time the GPU sat idle waiting for the batch
(from CUDA events, read back late). On the CPU the "device waited for data" share is wait / wall.

    prof.summary()      -> dict (totals, rates, shares, bad batches by check)
    prof.records        -> the last `keep` StepRecords
    log lines every `log_every` steps on the "dataaudit.guard" logger; `jsonl=PATH` appends one JSON object
    per step and one {"summary": ...} at close (for TensorBoard / wandb / pandas).
"""
from __future__ import annotations

import json
import logging
import time
from collections import Counter, deque
from dataclasses import asdict, dataclass, field
from pathlib import Path

log = logging.getLogger("dataaudit.guard")


@dataclass
class StepRecord:
    step: int
    samples: int
    tokens: int
    wait_s: float
    copy_s: float
    guard_s: float
    compute_s: float
    wall_s: float
    bad_checks: list = field(default_factory=list)    # "check:field" that flagged a sample of this batch
    action: str = ""                                  # "", warned, masked, skipped, raised
    skipped_batches: int = 0                          # batches skipped (policy skip) before this one
    gpu_copy_s: float | None = None
    gpu_guard_s: float | None = None
    gpu_idle_s: float | None = None                   # GPU idle between the previous step's work and this copy


class ThroughputProfiler:
    def __init__(self, log_every: int = 100, jsonl: str | Path | None = None, keep: int = 1000,
                 logger: logging.Logger | None = None):
        self.log_every = log_every
        self.jsonl = Path(jsonl) if jsonl else None
        self.records: deque[StepRecord] = deque(maxlen=keep)
        self.logger = logger or log
        self._fh = None
        self.reset()

    def reset(self) -> None:
        self.steps = 0
        self.samples = 0
        self.tokens = 0
        self.wait_s = self.copy_s = self.guard_s = self.compute_s = self.wall_s = 0.0
        self.gpu_copy_s = self.gpu_guard_s = self.gpu_idle_s = 0.0
        self.gpu_steps = 0
        self.bad_batches = 0
        self.bad_by_check: Counter = Counter()
        self.actions: Counter = Counter()
        self.skipped_batches = 0
        self.skipped_listed = 0    # samples dropped because the skip list names them
        self._window: list[StepRecord] = []
        self.started = time.perf_counter()

    def add(self, rec: StepRecord) -> None:
        self.steps += 1
        self.samples += rec.samples
        self.tokens += rec.tokens
        self.wait_s += rec.wait_s
        self.copy_s += rec.copy_s
        self.guard_s += rec.guard_s
        self.compute_s += rec.compute_s
        self.wall_s += rec.wall_s
        if rec.gpu_copy_s is not None:
            self.gpu_steps += 1
            self.gpu_copy_s += rec.gpu_copy_s
            self.gpu_guard_s += rec.gpu_guard_s or 0.0
            self.gpu_idle_s += rec.gpu_idle_s or 0.0
        self.record_bad(rec.bad_checks, rec.action)
        self.records.append(rec)
        self._window.append(rec)
        if self.jsonl is not None:
            self._write(asdict(rec))
        if self.log_every and self.steps % self.log_every == 0:
            self.logger.info(self.line(self._window))
            self._window = []

    def record_bad(self, bad_checks, action: str) -> None:
        """Count a bad batch (also used for skipped batches, which have no step record)."""
        if bad_checks:
            self.bad_batches += 1
            self.bad_by_check.update(dict.fromkeys(bad_checks, 1))
        if action:
            self.actions[action] += 1
        if action == "skipped":
            self.skipped_batches += 1

    def record_listed(self, n: int) -> None:
        """Count samples dropped because the skip list (dataaudit.guard.skip_list) names them."""
        self.skipped_listed += n

    def _write(self, obj: dict) -> None:
        if self._fh is None:
            self.jsonl.parent.mkdir(parents=True, exist_ok=True)
            self._fh = open(self.jsonl, "a", encoding="utf-8")
        self._fh.write(json.dumps(obj) + "\n")
        self._fh.flush()

    @staticmethod
    def _rates(recs) -> dict:
        wall = sum(r.wall_s for r in recs)
        return {"samples_per_s": sum(r.samples for r in recs) / wall if wall else 0.0,
                "tokens_per_s": sum(r.tokens for r in recs) / wall if wall else 0.0,
                "wait_share": sum(r.wait_s for r in recs) / wall if wall else 0.0,
                "guard_share": sum(r.guard_s for r in recs) / wall if wall else 0.0}

    def line(self, recs=None) -> str:
        """One log line over `recs` (default: everything so far)."""
        recs = list(self.records) if recs is None else recs
        n = len(recs)
        r = self._rates(recs)
        ms = lambda a: 1e3 * sum(getattr(x, a) for x in recs) / max(n, 1)  # noqa: E731
        bad = Counter()
        for x in recs:
            bad.update(dict.fromkeys(x.bad_checks, 1))
        s = (f"guard: steps {self.steps - n + 1}-{self.steps} | {r['samples_per_s']:,.0f} samples/s"
             + (f", {r['tokens_per_s']:,.0f} tokens/s" if any(x.tokens for x in recs) else "")
             + f" | per step: wait {ms('wait_s'):.2f} ms, copy {ms('copy_s'):.2f} ms, guard {ms('guard_s'):.2f} ms,"
             f" compute {ms('compute_s'):.2f} ms | waited for data {100 * r['wait_share']:.1f}%")
        if bad:
            s += " | bad batches: " + ", ".join(f"{k} {v}" for k, v in bad.most_common())
        return s

    def summary(self) -> dict:
        wall = self.wall_s
        out = {
            "steps": self.steps, "samples": self.samples, "tokens": self.tokens,
            "wall_s": wall, "wait_s": self.wait_s, "copy_s": self.copy_s, "guard_s": self.guard_s,
            "compute_s": self.compute_s,
            "unaccounted_s": wall - (self.wait_s + self.copy_s + self.guard_s + self.compute_s),
            "samples_per_s": self.samples / wall if wall else 0.0,
            "tokens_per_s": self.tokens / wall if wall else 0.0,
            "wait_share": self.wait_s / wall if wall else 0.0,
            "guard_share": self.guard_s / wall if wall else 0.0,
            "device_waited_share": self.wait_s / wall if wall else 0.0,
            "bad_batches": self.bad_batches, "bad_batches_by_check": dict(self.bad_by_check),
            "actions": dict(self.actions), "skipped_batches": self.skipped_batches,
            "skipped_listed": self.skipped_listed,
        }
        if self.gpu_steps:  # CUDA: GPU-side times from events; the GPU's own idle time replaces wait / wall
            out.update({"gpu_copy_s": self.gpu_copy_s, "gpu_guard_s": self.gpu_guard_s,
                        "gpu_idle_s": self.gpu_idle_s, "gpu_steps": self.gpu_steps,
                        "device_waited_share": self.gpu_idle_s / wall if wall else 0.0})
        return out

    def close(self) -> None:
        if self.jsonl is not None and self.steps:
            self._write({"summary": self.summary()})
        if self._fh is not None:
            self._fh.close()
            self._fh = None


__all__ = ["ThroughputProfiler", "StepRecord"]
