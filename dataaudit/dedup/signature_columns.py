"""The `sig` column of a signature table and its (n, num_perm) uint32 matrix, each the other's zero-copy view."""
from __future__ import annotations

import numpy as np
import pyarrow as pa


def signature_array(sig: np.ndarray) -> pa.FixedSizeBinaryArray:
    """The `sig` column of (n, num_perm) uint32 signatures (zero copy)."""
    sig = np.ascontiguousarray(sig, dtype="<u4")
    return pa.FixedSizeBinaryArray.from_buffers(pa.binary(4 * sig.shape[1]), sig.shape[0],
                                                [None, pa.py_buffer(sig)])


def signature_matrix(column: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """(n, num_perm) uint32 signatures of a `sig` column (zero copy for one chunk)."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
    width = column.type.byte_width
    data = np.frombuffer(column.buffers()[1], dtype="<u4")
    start = column.offset * width // 4
    return data[start:start + len(column) * width // 4].reshape(len(column), width // 4)
