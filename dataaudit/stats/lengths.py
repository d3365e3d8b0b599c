"""Mergeable length distributions.

Lengths go into log-spaced buckets (each bucket spans at most 1% of its value), so quantiles carry at most 1%
relative error, the state is a fixed-size count vector, and merging two shards' results is an addition: order
of shards and of workers never changes the result.

The token lengths of a conversation field (dataaudit.stats.conversation_lengths) carry more: which rendering was
counted, the conversations that could not be rendered, and of those longer than the context length, how many
lose part of their last assistant reply when cut to it (and how many could not be told).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

GAMMA = 1.02            # bucket i (i >= 1) holds lengths in (GAMMA**(i-1), GAMMA**i]; bucket 0 holds 0
NUM_BUCKETS = 1400      # GAMMA**1400 > 1e12: longer than any document
REPLY_NONE = -1         # reply end of a conversation without an assistant turn
REPLY_UNKNOWN = -2      # reply end that could not be located (the template failed on the conversation's prefix)
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
    # Conversations only (rendering None otherwise): "chat_template" or "role_prefixed"; conversations that could
    # not be rendered (not counted above) and one of their errors (the smallest message: whatever the order of
    # shards); of the conversations over the context, those losing part of their last assistant reply and those
    # whose reply end could not be located.
    rendering: str | None = None
    render_errors: int = 0
    render_error: str | None = None
    truncated_replies: int = 0
    replies_unknown: int = 0

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

    def add_conversations(self, tokens: np.ndarray, reply_end: np.ndarray, context_length: int | None,
                          rendering: str, render_errors: int = 0, render_error: str | None = None) -> None:
        """Token lengths of conversations with, for each, the token offset where its last assistant turn ends
        (REPLY_NONE: no assistant turn; REPLY_UNKNOWN: not located; only read where the conversation is longer
        than the context). A conversation is cut to its first `context_length` tokens: it loses part of its last
        reply when that reply ends past the cut."""
        tokens, reply_end = np.asarray(tokens), np.asarray(reply_end)
        self.add(tokens, context_length)
        self.rendering = _smallest(self.rendering, rendering)
        self.render_errors += int(render_errors)
        self.render_error = _smallest(self.render_error, render_error)
        if context_length is not None and tokens.size:
            over = tokens > context_length
            self.truncated_replies += int((over & (reply_end > context_length)).sum())
            self.replies_unknown += int((over & (reply_end == REPLY_UNKNOWN)).sum())

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
        out.rendering = _smallest(self.rendering, other.rendering)
        out.render_errors = self.render_errors + other.render_errors
        out.render_error = _smallest(self.render_error, other.render_error)
        out.truncated_replies = self.truncated_replies + other.truncated_replies
        out.replies_unknown = self.replies_unknown + other.replies_unknown
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
        out = {
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
        if self.rendering is not None:
            out.update({
                "rendering": self.rendering,
                "render_errors": self.render_errors,
                "render_error": self.render_error,
                "truncated_replies": self.truncated_replies if context_length is not None else None,
                "replies_unknown": self.replies_unknown if context_length is not None else None,
            })
        return out

    # Serializable state, for partial results written per shard.
    def state(self) -> dict:
        nz = np.nonzero(self.buckets)[0]
        out = {"unit": self.unit, "count": self.count, "total": self.total, "min": self.min, "max": self.max,
               "over_context": self.over_context,
               "buckets": {str(int(i)): int(self.buckets[i]) for i in nz}}
        if self.rendering is not None:
            out.update(rendering=self.rendering, render_errors=self.render_errors, render_error=self.render_error,
                       truncated_replies=self.truncated_replies, replies_unknown=self.replies_unknown)
        return out

    @classmethod
    def from_state(cls, state: dict) -> "LengthStats":
        out = cls(state["unit"], state["count"], state["total"], state["min"], state["max"], state["over_context"])
        for i, c in state["buckets"].items():
            out.buckets[int(i)] = c
        if state.get("rendering") is not None:
            out.rendering, out.render_errors, out.render_error = \
                state["rendering"], state["render_errors"], state["render_error"]
            out.truncated_replies, out.replies_unknown = state["truncated_replies"], state["replies_unknown"]
        return out


def _smallest(a: str | None, b: str | None) -> str | None:
    """The one of two optional strings a merge keeps: the same whatever the order of merging."""
    return min((v for v in (a, b) if v is not None), default=None)
