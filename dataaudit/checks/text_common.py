"""Shared helpers for the text checks: Arrow string normalisation, null-safe counting and segmented
reductions over flattened list values (all vectorized; no per-sample Python loops)."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

# Arrays whose character data exceeds this are promoted to large_string before combining chunks.
_STRING_LIMIT = 2**31 - 1


def as_string_array(arr) -> pa.Array:
    """Return `arr` as one contiguous pa.Array of string / large_string (nulls preserved).

    Accepts pa.Array, pa.ChunkedArray, dictionary-encoded strings, string_view, an all-null array, or a
    plain Python sequence of str/None.
    """
    if isinstance(arr, pa.ChunkedArray):
        t = arr.type
        if pa.types.is_string(t) and sum(c.nbytes for c in arr.chunks) >= _STRING_LIMIT:
            arr = arr.cast(pa.large_string())
        arr = pa.concat_arrays(arr.chunks) if arr.num_chunks else pa.array([], type=arr.type)
    elif not isinstance(arr, pa.Array):
        arr = pa.array(list(arr), type=pa.string())
    t = arr.type
    if pa.types.is_dictionary(t):
        arr = arr.dictionary_decode()
        t = arr.type
    if pa.types.is_null(t):
        return arr.cast(pa.string())
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return arr
    if hasattr(pa.types, "is_string_view") and pa.types.is_string_view(t):
        return arr.cast(pa.large_string())
    raise TypeError(f"text checks need a string array, got {t}")


def to_int64(result) -> np.ndarray:
    """Arrow integer result (nulls -> 0) as an int64 numpy array."""
    return np.asarray(pc.fill_null(result, 0).to_numpy(zero_copy_only=False), dtype=np.int64)


def to_bool(result) -> np.ndarray:
    """Arrow boolean result (nulls -> False) as a numpy bool array."""
    return np.asarray(pc.fill_null(result, False).to_numpy(zero_copy_only=False), dtype=bool)


def char_lengths(arr: pa.Array) -> np.ndarray:
    """Length in Unicode code points of every string (null -> 0)."""
    return to_int64(pc.utf8_length(arr))


def count_regex(arr: pa.Array, pattern: str) -> np.ndarray:
    """Number of non-overlapping RE2 matches of `pattern` in every string (null -> 0)."""
    return to_int64(pc.count_substring_regex(arr, pattern=pattern))


def null_mask(arr: pa.Array) -> np.ndarray:
    return to_bool(pc.is_null(arr))


def flatten_lists(lists: pa.Array) -> tuple[pa.Array, np.ndarray, np.ndarray]:
    """Flatten a list array -> (values, parent row of each value (int64), number of values per row)."""
    counts = to_int64(pc.list_value_length(lists))
    values = pc.list_flatten(lists)
    parents = np.repeat(np.arange(len(counts), dtype=np.int64), counts)
    return values, parents, counts


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
