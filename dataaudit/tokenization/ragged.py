"""Whole-array work on ragged id sequences (flat values + per-sequence lengths): no Python loop per sequence."""
from __future__ import annotations

from dataclasses import dataclass
from itertools import chain

import numpy as np


@dataclass
class Ragged:
    flat: np.ndarray       # int64 values of every sequence, concatenated
    lengths: np.ndarray    # int64 length of each sequence

    @property
    def starts(self) -> np.ndarray:
        return np.cumsum(self.lengths) - self.lengths

    def segment_ids(self) -> np.ndarray:
        """The sequence index of every flat element."""
        return np.repeat(np.arange(len(self.lengths)), self.lengths)

    def count(self, element_mask: np.ndarray) -> np.ndarray:
        """Per sequence: how many of its elements the boolean mask selects."""
        return np.bincount(self.segment_ids()[element_mask], minlength=len(self.lengths)).astype(np.int64)

    def filter(self, element_mask: np.ndarray) -> "Ragged":
        return Ragged(self.flat[element_mask], self.count(element_mask))

    def to_lists(self) -> list[list[int]]:
        values = self.flat.tolist()
        ends = np.cumsum(self.lengths).tolist()
        starts = (np.cumsum(self.lengths) - self.lengths).tolist()
        return [values[s:e] for s, e in zip(starts, ends)]

    @classmethod
    def from_lists(cls, lists: list[list[int]]) -> "Ragged":
        lengths = np.fromiter(map(len, lists), dtype=np.int64, count=len(lists))
        flat = np.fromiter(chain.from_iterable(lists), dtype=np.int64, count=int(lengths.sum()))
        return cls(flat, lengths)


def compare(a: Ragged, b: Ragged) -> tuple[np.ndarray, np.ndarray]:
    """(equal, first_diff) per sequence pair; first_diff is -1 for equal pairs, else the first index where they
    differ (the shorter length when one is a prefix of the other)."""
    n = len(a.lengths)
    m = np.minimum(a.lengths, b.lengths)
    total = int(m.sum())
    seg = np.repeat(np.arange(n), m)
    pos = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(m) - m, m)
    neq = a.flat[np.repeat(a.starts, m) + pos] != b.flat[np.repeat(b.starts, m) + pos]
    first = m.copy()
    hits = np.flatnonzero(neq)
    if hits.size:
        segs, at = np.unique(seg[hits], return_index=True)
        first[segs] = pos[hits[at]]
    equal = (a.lengths == b.lengths) & (first == m)
    return equal, np.where(equal, -1, first)
