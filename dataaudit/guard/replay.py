"""Replay a guard snapshot through the user's loss to name the samples that make it non-finite.

The protocol: `module:factory` names a callable; `factory()` returns `loss_fn(batch) -> loss`, where batch is
the snapshot's batch (a dict of tensors on the chosen device, or a tuple) restricted to some rows, and loss is
a scalar or per-sample losses. A loss is bad when any element is non-finite (or, with a threshold, when its mean
is above it: a spike snapshot). An nn.Module whose forward takes the batch fits as it is.

Bisection (default) peels one culprit at a time: each level runs the loss on the left half only; a bad left half
is followed, a finite one sends the search to the right half without running it (a batch whose loss is bad and
whose left half is fine has its trouble in the right half, unless samples only fail together), and the sample
it ends on is run alone, so every culprit named was seen failing on its own. Then the rest of the batch without
the culprits is run: finite -> done, else the next culprit is searched in it. One culprit in 64 rows: 1 + 6 + 1
+ 1 = at most 9 forward passes. When samples only fail together (no single one fails alone), the smallest group
seen failing is named instead. `per_sample` runs every sample alone (1 + B passes).

`compare_device` reruns the whole batch on another device in float32 (as Megatron's rerun machine does): a bad
loss that comes back there is the data's ("data"); one that does not was the device's or a transient fault's
("device/transient"), and its samples are not put on the skip list.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import torch

MODES = ("bisect", "per-sample")


class Replay:
    """Runs loss_fn on row subsets of a snapshot's batch, counting forward passes."""

    def __init__(self, snapshot, loss_fn: Callable, device="cpu", threshold: float | None = None,
                 fp32: bool = False):
        self.snap, self.loss_fn, self.device, self.threshold = snapshot, loss_fn, torch.device(device), threshold
        self.fp32 = fp32   # floating tensors of the batch as float32
        self.rows = len(snapshot.keys) if snapshot.keys is not None else _batch_rows(snapshot.batch)
        self.passes = 0
        self.losses: list[dict] = []

    def subset(self, idx: Sequence[int]):
        take = torch.tensor(list(idx), dtype=torch.int64)
        b = self.snap.batch

        def rows(v):
            if isinstance(v, torch.Tensor):
                if v.dim() >= 1 and v.shape[0] == self.rows:
                    v = v.index_select(0, take)
                return v.to(self.device, torch.float32 if self.fp32 and v.is_floating_point() else None)
            if isinstance(v, (list, tuple)) and len(v) == self.rows:
                return [v[i] for i in idx]
            return v

        return {k: rows(v) for k, v in b.items()} if isinstance(b, dict) else tuple(rows(v) for v in b)

    def bad(self, idx: Sequence[int]) -> bool:
        """One forward pass on the rows idx (the RNG restored as the step had it, for dropout)."""
        rng = self.snap.rng
        if "cpu" in rng:
            torch.set_rng_state(rng["cpu"])
        if "cuda" in rng and self.device.type == "cuda":
            torch.cuda.set_rng_state(rng["cuda"], self.device)
        self.passes += 1
        with torch.no_grad():
            loss = self.loss_fn(self.subset(idx))
        loss = torch.as_tensor(loss).detach().double()
        finite = bool(torch.isfinite(loss).all())
        value = float(loss.mean())
        self.losses.append({"rows": len(idx), "first": int(idx[0]), "loss": value if finite else str(value)})
        return not finite or (self.threshold is not None and value > self.threshold)

    def find_one(self, group: list[int]) -> tuple[int | None, list[int]]:
        """(culprit, []) or (None, the smallest group seen bad): `group` is known bad."""
        verified = group
        implied = False
        while len(group) > 1:
            left, right = group[:len(group) // 2], group[len(group) // 2:]
            if self.bad(left):
                group, verified, implied = left, left, False
            else:
                group, implied = right, True
        if implied and not self.bad(group):
            return None, verified
        return group[0], []

    def bisect(self) -> dict:
        rest = list(range(self.rows))
        culprits, together = [], []
        if not self.bad(rest):
            return self._result("bisect", culprits, together)
        while rest:
            c, group = self.find_one(rest)
            if c is None:
                together = group
                break
            culprits.append(c)
            rest = [i for i in rest if i != c]
            if not rest or not self.bad(rest):
                break
        return self._result("bisect", culprits, together)

    def per_sample(self) -> dict:
        reproduced = self.bad(list(range(self.rows)))
        culprits = [i for i in range(self.rows) if self.bad([i])]
        together = list(range(self.rows)) if reproduced and not culprits else []
        return self._result("per-sample", culprits, together, reproduced)

    def _result(self, mode: str, culprits: list[int], together: list[int], reproduced: bool | None = None) -> dict:
        s = self.snap
        return {"snapshot": str(s.path), "trace_id": s.trace_id, "step": s.step, "mode": mode,
                "batch_rows": self.rows, "loss": s.loss, "threshold": self.threshold,
                "reproduced": bool(self.losses and _is_bad(self.losses[0], self.threshold))
                if reproduced is None else reproduced,
                "forward_passes": self.passes, "culprits": [self.trace(i) for i in culprits],
                "together": [self.trace(i) for i in together], "losses": self.losses}

    def trace(self, i: int) -> dict:
        s = self.snap
        return {"position": i, "shard": _at(s.shards, i), "key": _at(s.keys, i), "row": _at(s.rows, i)}


def replay(snapshot, loss_fn: Callable, mode: str = "bisect", device="cpu", threshold: float | None = None) -> dict:
    """The culprit samples of a snapshot's bad loss (see the module doc); a JSON-able result."""
    r = Replay(snapshot, loss_fn, device, threshold)
    return r.bisect() if mode == "bisect" else r.per_sample()


def compare_device(snapshot, loss_fn: Callable, device, threshold: float | None = None) -> dict:
    """The whole batch once more on `device` in float32 (an nn.Module loss_fn is moved there in float32 too):
    {"device", "reproduced", "loss", "verdict": "data" | "device/transient"}."""
    if isinstance(loss_fn, torch.nn.Module):
        loss_fn = loss_fn.to(device=device, dtype=torch.float32)
    r = Replay(snapshot, loss_fn, device, threshold, fp32=True)
    bad = r.bad(list(range(r.rows)))
    return {"device": str(torch.device(device)), "reproduced": bad, "loss": r.losses[0]["loss"],
            "verdict": "data" if bad else "device/transient"}


def default_threshold(snapshot) -> float | None:
    """The bar a finite bad loss was judged against: a spike's (or a diverged run's) threshold, a ceiling's
    ceiling; else None (non-finite only)."""
    loss = snapshot.loss or {}
    kind = loss.get("kind")
    if kind == "ceiling":
        return loss.get("ceiling")
    return loss.get("threshold") if kind in ("spike", "diverged") else None


def _is_bad(entry: dict, threshold) -> bool:
    v = entry["loss"]
    return isinstance(v, str) or (threshold is not None and v > threshold)


def _batch_rows(batch: Any) -> int:
    for v in (batch.values() if isinstance(batch, dict) else batch):
        if isinstance(v, torch.Tensor) and v.dim() >= 1:
            return v.shape[0]
    return 0


def _at(seq, i):
    return None if seq is None or i >= len(seq) else seq[i]


__all__ = ["replay", "Replay", "MODES", "default_threshold", "compare_device"]
