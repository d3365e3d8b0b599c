"""Which rows of an Arrow column hold a string that is not valid UTF-8.

Parquet writers need not validate their strings (pyarrow's own `Array.from_buffers` does not), and Arrow trusts a
string column to be UTF-8: whatever later turns a value into Python text raises UnicodeDecodeError and ends the
job. So the reader checks every string it yields, strings inside lists, structs and maps included. A valid column
costs one `validate(full=True)` (vectorized, GB/s); only a column that fails is walked to name its rows, each
failing string array checked value by value.
"""
from __future__ import annotations

import functools

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

_STRINGS = (pa.types.is_string, pa.types.is_large_string)
_LISTS = (pa.types.is_list, pa.types.is_large_list, pa.types.is_fixed_size_list)


@functools.cache
def holds_strings(t: pa.DataType) -> bool:
    """Whether values of this type contain strings anywhere (the columns worth checking)."""
    if any(is_(t) for is_ in _STRINGS):
        return True
    if pa.types.is_dictionary(t):
        return holds_strings(t.value_type)
    if pa.types.is_map(t):
        return holds_strings(t.key_type) or holds_strings(t.item_type)
    if any(is_(t) for is_ in _LISTS):
        return holds_strings(t.value_type)
    if pa.types.is_struct(t):
        return any(holds_strings(f.type) for f in t)
    return False


def _valid(arr: pa.Array) -> bool:
    try:
        arr.validate(full=True)
    except pa.ArrowInvalid:
        return False
    return True


def _each(arr: pa.Array) -> np.ndarray:
    """Rows of a string array whose bytes do not decode (the slow path: only for an array that failed)."""
    bad = []
    for i, b in enumerate(arr.view(pa.large_binary() if pa.types.is_large_string(arr.type) else pa.binary())
                          .to_pylist()):
        if b is not None:
            try:
                b.decode("utf-8")
            except UnicodeDecodeError:
                bad.append(i)
    return np.array(bad, np.int64)


def _walk(arr: pa.Array) -> np.ndarray:
    """Rows of `arr` (relative to its slice) holding invalid UTF-8 somewhere inside."""
    t = arr.type
    none = np.empty(0, np.int64)
    if not holds_strings(t):
        return none
    if any(is_(t) for is_ in _STRINGS):
        return none if _valid(arr) else _each(arr)
    if pa.types.is_dictionary(t):
        bad = _walk(arr.dictionary)
        if not len(bad):
            return none
        return np.flatnonzero(pc.fill_null(pc.is_in(arr.indices, pa.array(bad)), False).to_numpy(zero_copy_only=False))
    if pa.types.is_struct(t):
        found = [_walk(arr.field(i)) for i in range(t.num_fields)]   # field(i) follows the struct's slice
        return np.unique(np.concatenate(found)) if found else none
    if pa.types.is_map(t):
        arr = pa.ListArray.from_arrays(arr.offsets, pa.StructArray.from_arrays([arr.keys, arr.items],
                                                                               ["key", "value"]))
    bad = _walk(arr.flatten())
    if not len(bad):
        return none
    return np.unique(pc.list_parent_indices(arr).to_numpy()[bad])


def invalid_rows(arr: pa.Array) -> np.ndarray:
    """Sorted row indices of `arr` holding a string that is not valid UTF-8; empty for a valid column (checked in
    one vectorized pass)."""
    if not holds_strings(arr.type) or _valid(arr):
        return np.empty(0, np.int64)
    return _walk(arr)
