"""The device guard's read-back: device results come to the host late, with no sync in the training loop.

A batch's flags and values ([C, B]) and its token count, and a watched loss's verdict, are copied non_blocking
into pinned host memory with a CUDA event recorded after the copies; they are read, in the order they were
queued, once their event has completed (usually at the next step), or at once when a caller blocks (flush, the
bound on held batches). On the CPU the results are host memory already and are handed on at once; on another
device (meta) there is nothing to read.

BatchEntry is one batch on its way through the guard: provenance, the checks' results, the action taken, and the
step's times for the profiler. ReadbackQueue holds what is in flight and hands each batch entry, once read, to
`on_read` (findings, late raise).
"""
from __future__ import annotations

from collections import deque
from typing import Any, Callable

import torch


class BatchEntry:
    """One batch on its way through the guard; its flags are on the host (numpy [C, B]) once `read` is True."""

    __slots__ = ("step", "batch_size", "keys", "shards", "rows", "checks", "device_calls", "acting",
                 "flagged_host", "_value_host", "value_from", "tokens_host", "timing_events", "snapshot_batch",
                 "action", "wait_s", "copy_s", "guard_s", "compute_s", "wall_s", "skipped_before", "gpu", "read")

    def __init__(self, step, batch_size, keys, shards, rows, checks, device_calls, acting, copy_s):
        self.step, self.batch_size, self.keys, self.shards, self.rows = step, batch_size, keys, shards, rows
        self.checks, self.device_calls, self.acting, self.copy_s = checks, device_calls, acting, copy_s
        self.flagged_host = self._value_host = self.value_from = self.tokens_host = None  # numpy [C, B] once read
        self.timing_events = self.snapshot_batch = None
        self.action = ""
        self.wait_s = self.guard_s = self.wall_s = 0.0
        self.compute_s = None
        self.skipped_before = 0
        self.gpu = None
        self.read = False

    @property
    def value_host(self):
        """numpy [C, B] values once read back (on the CPU path taken from `value_from`, a HostChecks, when first
        read: most batches flag nothing and never need them)."""
        if self._value_host is None and self.value_from is not None:
            self._value_host = self.value_from.value_np
        return self._value_host

    @value_host.setter
    def value_host(self, v) -> None:
        self._value_host, self.value_from = v, None


def pinned_copy(t: torch.Tensor) -> torch.Tensor:
    """A non_blocking copy of a device tensor into pinned host memory (complete once a later event is)."""
    p = torch.empty(t.shape, dtype=t.dtype, pin_memory=True)
    p.copy_(t, non_blocking=True)
    return p


def read_now(entry: BatchEntry) -> None:
    """The batch's flags and values on the host now (a sync on an accelerator: skip, raise with late_raise=False)."""
    if entry.read:
        return
    entry.flagged_host = entry.checks.flagged.cpu().numpy()
    entry.value_host = entry.checks.value.cpu().numpy()
    entry.read = True


class ReadbackQueue:
    """Device -> host copies in flight, read in the order they were queued once their CUDA event has completed.

    on_read(entry): a batch entry's flags are on the host. after_drain(): called at the end of each drain that
    completes (the profiler's records of the steps now complete)."""

    def __init__(self, on_read: Callable[[BatchEntry], None], after_drain: Callable[[], None]):
        self.on_read, self.after_drain = on_read, after_drain
        self.pending: deque = deque()   # (event, host copies, item, land(item, host copies)), in queue order

    def __len__(self) -> int:
        return len(self.pending)

    def stage(self, entry: BatchEntry, tokens) -> None:
        """Send a batch's flags, values and token count (a tensor or an int) to the host."""
        fl, va = entry.checks.flagged, entry.checks.value
        if fl.device.type == "cpu":
            entry.flagged_host, entry.value_host = fl.numpy(), va.numpy()
            entry.tokens_host = int(tokens)
            entry.read = True
            self.on_read(entry)
            return
        if fl.device.type != "cuda":  # e.g. meta: nothing to read back
            entry.read = True
            entry.flagged_host = entry.value_host = None
            entry.tokens_host = 0
            return
        self.later((fl, va, tokens), entry, self._land_batch)

    def later(self, tensors: tuple, item: Any, land: Callable[[Any, tuple], None]) -> None:
        """Copy CUDA `tensors` (an int among them stays an int) into pinned host memory behind one event;
        land(item, host copies) once the event has completed."""
        staged = tuple(pinned_copy(t) if isinstance(t, torch.Tensor) else int(t) for t in tensors)
        ev = torch.cuda.Event()
        ev.record()
        self.pending.append((ev, staged, item, land))

    def drain(self, block: bool, limit: int | None = None) -> None:
        """Land what has arrived (block: wait for it; limit: at most that many items), then `after_drain`."""
        pending = self.pending
        while pending and (limit is None or limit > 0):
            ev, staged, item, land = pending[0]
            if not block and not ev.query():
                break
            if block:
                ev.synchronize()
            pending.popleft()
            if limit is not None:
                limit -= 1
            land(item, staged)   # may raise (a late raise): the item is off the queue already
        self.after_drain()

    def _land_batch(self, e: BatchEntry, staged: tuple) -> None:
        pf, pv, pt = staged
        e.flagged_host, e.value_host = pf.numpy(), pv.numpy()
        e.tokens_host = int(pt) if isinstance(pt, torch.Tensor) else pt
        if e.timing_events is not None:  # complete: recorded before the read-back event on the same stream
            end_prev, a, b, c = e.timing_events
            e.gpu = (a.elapsed_time(b) / 1e3, b.elapsed_time(c) / 1e3,
                     end_prev.elapsed_time(a) / 1e3 if end_prev is not None else None)
        e.read = True
        self.on_read(e)


__all__ = ["BatchEntry", "ReadbackQueue", "pinned_copy", "read_now"]
