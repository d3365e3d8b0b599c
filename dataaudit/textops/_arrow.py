"""Small Arrow helpers for textops (kept here so that textops imports neither torch nor the checks)."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

_STRING_LIMIT = 2**31 - 1


def as_string_array(arr) -> pa.Array:
    """One contiguous string / large_string array from an Array, ChunkedArray, dictionary or Python list."""
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


def flatten_lists(lists: pa.Array) -> tuple[pa.Array, np.ndarray]:
    """Flatten a list array -> (values, parent row of each value as int64)."""
    counts = np.asarray(pc.fill_null(pc.list_value_length(lists), 0).to_numpy(zero_copy_only=False), np.int64)
    return pc.list_flatten(lists), np.repeat(np.arange(len(counts), dtype=np.int64), counts)
