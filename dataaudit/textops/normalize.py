"""Text normalization for duplicate and overlap detection, on whole Arrow string arrays (pyarrow.compute)."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .arrow import as_string_array, string_buffers
from .hashing import WS_CLASS, numba_kernels

PUNCT_RUN = r"\p{P}+"
# Python's str.split() whitespace, as an RE2 class (the numba kernels test the same set byte-wise)
PY_WHITESPACE = (r"[\t\n\x{0B}\x{0C}\r\x{1C}-\x{1F} \x{85}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}"
                 r"\x{202F}\x{205F}\x{3000}]+")


def normalize(arr, *, nfc: bool = True, lowercase: bool = True, strip_punct: bool = False,
              collapse_ws: bool = True) -> pa.Array:
    """Normalized copy of a string array (nulls stay null), the steps in this order:

    nfc          Unicode NFC composition ("e" + U+0301 -> "é")
    lowercase    Unicode lowercase
    strip_punct  remove punctuation characters (Unicode category P: ".,;!?'"-" and the like; symbols stay)
    collapse_ws  every run of whitespace (Python's str.split() set: ASCII and Unicode spaces, line and
                 paragraph separators) -> one space, leading/trailing whitespace removed
    """
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
    k = numba_kernels(work=arr.nbytes)
    if k is None:
        return pc.utf8_trim(pc.replace_substring_regex(arr, pattern=PY_WHITESPACE, replacement=" "), characters=" ")
    if arr.offset:
        arr = pa.concat_arrays([arr])                   # offset 0: the validity bitmap can be reused as is
    offsets, data = string_buffers(arr)
    out_off = np.empty(len(arr) + 1, np.int64)
    out_data = np.empty(max(len(data), 1), np.uint8)
    k.collapse_ws(offsets, data, out_off, out_data, WS_CLASS)
    large = pa.types.is_large_string(arr.type) or out_off[-1] >= 2**31
    typ = pa.large_string() if large else pa.string()
    out_off = out_off if large else out_off.astype(np.int32)
    validity = arr.buffers()[0] if arr.null_count else None
    return pa.Array.from_buffers(typ, len(arr), [validity, pa.py_buffer(out_off), pa.py_buffer(out_data)],
                                 null_count=arr.null_count)
