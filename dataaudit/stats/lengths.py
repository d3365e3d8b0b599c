"""Mergeable length distributions.

Lengths go into log-spaced buckets (each bucket spans at most 1% of its value), so quantiles carry at most 1%
relative error, the state is a fixed-size count vector, and merging two shards' results is an addition: order
of shards and of workers never changes the result.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

GAMMA = 1.02            # bucket i (i >= 1) holds lengths in (GAMMA**(i-1), GAMMA**i]; bucket 0 holds 0
NUM_BUCKETS = 1400      # GAMMA**1400 > 1e12: longer than any document
_LOG_GAMMA = math.log(GAMMA)


def bucket_of(lengths: np.ndarray) -> np.ndarray:
    lengths = np.asarray(lengths, dtype=np.float64)
    idx = np.zeros(lengths.shape, dtype=np.int64)
    pos = lengths > 0
    # Subtracting a hair keeps exact powers of GAMMA in the lower bucket despite log rounding.
    idx[pos] = np.ceil(np.log(lengths[pos]) / _LOG_GAMMA - 1e-9).astype(np.int64) + 1
    return np.minimum(idx, NUM_BUCKETS - 1)


def bucket_upper(idx: np.ndarray | int) -> np.ndarray:
    idx = np.asarray(idx)
    return np.where(idx == 0, 0.0, GAMMA ** (idx - 1.0))


@dataclass
class LengthStats:
    unit: str
    count: int = 0
    total: float = 0.0
    min: float | None = None
    max: float | None = None
    over_context: int = 0
    buckets: np.ndarray = field(default_factory=lambda: np.zeros(NUM_BUCKETS, dtype=np.int64))

    def add(self, lengths: np.ndarray, context_length: int | None = None) -> None:
        lengths = np.asarray(lengths)
        if lengths.size == 0:
            return
        self.count += int(lengths.size)
        self.total += float(lengths.sum(dtype=np.float64))
        lo, hi = float(lengths.min()), float(lengths.max())
        self.min = lo if self.min is None else min(self.min, lo)
        self.max = hi if self.max is None else max(self.max, hi)
        self.buckets += np.bincount(bucket_of(lengths), minlength=NUM_BUCKETS)
        if context_length is not None:
            self.over_context += int((lengths > context_length).sum())

    def merge(self, other: "LengthStats") -> "LengthStats":
        out = LengthStats(self.unit)
        out.count = self.count + other.count
        out.total = self.total + other.total
        mins = [v for v in (self.min, other.min) if v is not None]
        maxs = [v for v in (self.max, other.max) if v is not None]
        out.min = min(mins) if mins else None
        out.max = max(maxs) if maxs else None
        out.over_context = self.over_context + other.over_context
        out.buckets = self.buckets + other.buckets
        return out

    def quantile(self, q: float) -> float | None:
        if self.count == 0:
            return None
        rank = q * (self.count - 1)
        idx = int(np.searchsorted(np.cumsum(self.buckets), rank, side="right"))
        # Lengths are counts: the largest integer in the bucket (exact below 50, within 2% above).
        value = float(math.floor(bucket_upper(idx) + 1e-9))
        return min(max(value, self.min), self.max)

    def histogram(self, bins: int = 24) -> dict:
        """Counts over log2-spaced edges from 0 to the max, for charts."""
        if self.count == 0:
            return {"edges": [], "counts": []}
        top = max(self.max, 1.0)
        edges = np.unique(np.concatenate([[0.0], np.geomspace(1.0, top * 1.0000001, bins)]))
        uppers = bucket_upper(np.arange(NUM_BUCKETS))
        which = np.clip(np.searchsorted(edges, uppers, side="left") - 1, 0, len(edges) - 2)
        counts = np.bincount(which, weights=self.buckets, minlength=len(edges) - 1).astype(np.int64)
        return {"edges": [round(float(e), 3) for e in edges], "counts": counts.tolist()}

    def to_json(self, context_length: int | None = None) -> dict:
        mean = self.total / self.count if self.count else None
        return {
            "unit": self.unit,
            "count": self.count,
            "min": self.min,
            "max": self.max,
            "mean": None if mean is None else round(mean, 6),
            "quantiles": {f"p{int(q * 100)}": self.quantile(q) for q in (0.5, 0.9, 0.99)},
            "histogram": self.histogram(),
            "context_length": context_length,
            "over_context": self.over_context if context_length is not None else None,
        }

    # Serializable state, for partial results written per shard.
    def state(self) -> dict:
        nz = np.nonzero(self.buckets)[0]
        return {"unit": self.unit, "count": self.count, "total": self.total, "min": self.min, "max": self.max,
                "over_context": self.over_context,
                "buckets": {str(int(i)): int(self.buckets[i]) for i in nz}}

    @classmethod
    def from_state(cls, state: dict) -> "LengthStats":
        out = cls(state["unit"], state["count"], state["total"], state["min"], state["max"], state["over_context"])
        for i, c in state["buckets"].items():
            out.buckets[int(i)] = c
        return out
