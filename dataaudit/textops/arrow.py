"""Pure-pyarrow helpers shared by textops, dedup, contamination and the text checks (this module imports
neither torch nor `dataaudit.checks`, so every text path can use it without loading them)."""
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
        if pa.types.is_string(arr.type) and sum(c.nbytes for c in arr.chunks) >= _STRING_LIMIT:
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
    raise TypeError(f"expected a string array, got {t}")


def to_int64(result) -> np.ndarray:
    """Arrow integer result (nulls -> 0) as an int64 numpy array."""
    return np.asarray(pc.fill_null(result, 0).to_numpy(zero_copy_only=False), dtype=np.int64)


def to_bool(result) -> np.ndarray:
    """Arrow boolean result (nulls -> False) as a numpy bool array."""
    return np.asarray(pc.fill_null(result, False).to_numpy(zero_copy_only=False), dtype=bool)


def flatten_lists(lists: pa.Array) -> tuple[pa.Array, np.ndarray, np.ndarray]:
    """Flatten a list array -> (values, parent row of each value (int64), number of values per row)."""
    counts = to_int64(pc.list_value_length(lists))
    values = pc.list_flatten(lists)
    parents = np.repeat(np.arange(len(counts), dtype=np.int64), counts)
    return values, parents, counts


def string_buffers(arr: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(offsets, data) of a string / large_string array: offsets int64 (len(arr) + 1) rebased to 0, into the
    uint8 bytes `data` (a zero-copy view where possible). Null rows own no bytes (in Arrow a null slot's bytes
    are unspecified; when it has some, the bytes are compacted into a copy)."""
    bufs = arr.buffers()
    n = len(arr)
    if n == 0 or bufs[1] is None:
        return np.zeros(n + 1, np.int64), np.zeros(0, np.uint8)
    odt = np.int64 if pa.types.is_large_string(arr.type) else np.int32
    off = np.frombuffer(bufs[1], dtype=odt)[arr.offset: arr.offset + n + 1].astype(np.int64)
    data = np.frombuffer(bufs[2], dtype=np.uint8) if bufs[2] is not None else np.zeros(0, np.uint8)
    if arr.null_count:
        valid = to_bool(pc.is_valid(arr))
        lengths = np.diff(off)
        if (lengths[~valid] != 0).any():
            keep = np.repeat(valid, lengths)
            data = data[off[0]:off[-1]][keep]
            off = np.zeros(n + 1, np.int64)
            np.cumsum(np.where(valid, lengths, 0), out=off[1:])
            return off, data
    return off - off[0], data[off[0]:off[-1]]
