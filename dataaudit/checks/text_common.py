"""Shared helpers for the text checks: Arrow string normalisation, null-safe counting and segmented
reductions over flattened list values (all vectorized; no per-sample Python loops)."""
from __future__ import annotations

import weakref

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

# The Arrow helpers are textops' (pure pyarrow); re-exported here for the checks.
from dataaudit.textops.arrow import as_string_array, flatten_lists, to_bool, to_int64

__all__ = ["as_string_array", "flatten_lists", "to_bool", "to_int64", "char_lengths", "count_regex", "null_mask",
           "segment_max", "safe_ratio", "rows_as_str", "clip"]


# The last arrays measured and their lengths: a batch's texts go to empty_text (and empty_reply, its assistant
# turns) and to the audit's length statistics (~0.05 s per 100 MB each time). Keyed by the array object itself (a
# weak reference: a freed array's id may be reused), whose Arrow data cannot change.
_MEASURED = 4
_measured: list = []            # [(weak reference, lengths)], the latest first


def char_lengths(arr: pa.Array) -> np.ndarray:
    """Length in Unicode code points of every string (null -> 0), read-only."""
    global _measured
    for ref, lengths in _measured:
        if ref() is arr:
            return lengths
    lengths = to_int64(pc.utf8_length(arr))
    lengths.flags.writeable = False
    try:
        _measured = [(weakref.ref(arr), lengths)] + [m for m in _measured[:_MEASURED - 1] if m[0]() is not None]
    except TypeError:        # not an Arrow array (no weak references): measured each time
        pass
    return lengths


def count_regex(arr: pa.Array, pattern: str) -> np.ndarray:
    """Number of non-overlapping RE2 matches of `pattern` in every string (null -> 0)."""
    return to_int64(pc.count_substring_regex(arr, pattern=pattern))


def null_mask(arr: pa.Array) -> np.ndarray:
    return to_bool(pc.is_null(arr))


def segment_max(values: np.ndarray, counts: np.ndarray, empty=0) -> np.ndarray:
    """Max of consecutive segments of `values` (segment i has counts[i] elements; empty -> `empty`)."""
    out = np.full(len(counts), empty, dtype=np.result_type(values.dtype, np.asarray(empty).dtype))
    nonempty = counts > 0
    if values.size == 0 or not nonempty.any():
        return out
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))[nonempty]
    out[nonempty] = np.maximum.reduceat(values, starts)
    return out


def safe_ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """num / den as float64 with 0 where den == 0."""
    num = np.asarray(num, dtype=np.float64)
    den = np.asarray(den, dtype=np.float64)
    out = np.zeros(np.broadcast(num, den).shape, dtype=np.float64)
    np.divide(num, den, out=out, where=den > 0)
    return out


def rows_as_str(arr: pa.Array, rows: np.ndarray) -> list[str]:
    """Python strings of the selected rows (only used to build detail text for flagged rows)."""
    if len(rows) == 0:
        return []
    return [s if s is not None else "" for s in arr.take(pa.array(rows, type=pa.int64())).to_pylist()]


def clip(s: str, n: int = 40) -> str:
    """Short printable excerpt for detail strings."""
    r = s if len(s) <= n else s[: n - 1] + "…"
    return repr(r)[1:-1]


def beyond(value: float, limit: float) -> str:
    """`value` with the fewest decimals (2 to 6) that still show it beyond `limit`: 0.1612 against 0.16 is
    "0.161", never "0.16 > 0.16"."""
    for digits in range(2, 7):
        if round(value, digits) != round(limit, digits):
            return f"{value:.{digits}f}"
    return repr(value)
