"""Text normalization for duplicate and overlap detection, on whole Arrow string arrays (pyarrow.compute)."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

PUNCT_RUN = r"\p{P}+"


def normalize(arr, *, nfc: bool = True, lowercase: bool = True, strip_punct: bool = False,
              collapse_ws: bool = True) -> pa.Array:
    """Normalized copy of a string array (nulls stay null), the steps in this order:

    nfc          Unicode NFC composition ("e" + U+0301 -> "é")
    lowercase    Unicode lowercase
    strip_punct  remove punctuation characters (Unicode category P: ".,;!?'"-" and the like; symbols stay)
    collapse_ws  every run of whitespace (Python's str.split() set: ASCII and Unicode spaces, line and
                 paragraph separators) -> one space, leading/trailing whitespace removed
    """
    from ._arrow import as_string_array
    arr = as_string_array(arr)
    if nfc:
        arr = pc.utf8_normalize(arr, form="NFC")
    if lowercase:
        arr = pc.utf8_lower(arr)
    if strip_punct:
        arr = pc.replace_substring_regex(arr, pattern=PUNCT_RUN, replacement="")
    if collapse_ws:
        arr = collapse_whitespace(arr)
    return arr


def collapse_whitespace(arr: pa.Array) -> pa.Array:
    """Every run of whitespace (Python's `str.split()` set) -> one space, leading/trailing removed."""
    from .hashing import PY_WHITESPACE, _string_buffers, numba_kernels
    k = numba_kernels()
    if k is None:
        return pc.utf8_trim(pc.replace_substring_regex(arr, pattern=PY_WHITESPACE, replacement=" "), characters=" ")
    if arr.offset:
        arr = pa.concat_arrays([arr])                   # offset 0: the validity bitmap can be reused as is
    offsets, data = _string_buffers(arr)
    out_off = np.empty(len(arr) + 1, np.int64)
    out_data = np.empty(max(int(offsets[-1] - offsets[0]), 1), np.uint8)
    k.collapse_ws(offsets, data, out_off, out_data, k.ASCII_WS)
    large = pa.types.is_large_string(arr.type) or out_off[-1] >= 2**31
    typ = pa.large_string() if large else pa.string()
    out_off = out_off if large else out_off.astype(np.int32)
    validity = arr.buffers()[0] if arr.null_count else None
    return pa.Array.from_buffers(typ, len(arr), [validity, pa.py_buffer(out_off), pa.py_buffer(out_data)],
                                 null_count=arr.null_count)
