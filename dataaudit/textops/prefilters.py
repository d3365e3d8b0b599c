"""Gates: which rows of a batch may match a masking check's RE2 prefilter, read by a numba kernel faster than RE2
reads the prefilter. RE2 then reads only the rows a gate passes (`checks.pii.candidates`), so the rows found are the
prefilter's own: a gate may pass more rows, never fewer. Without numba there is no gate (None) and RE2 reads every
row.

- `pii_gate`: the shapes pii's prefilter holds (`_prefilter_kernels.pii_gate`). On chat turns and instructions it
  passes about 5 rows in 100 (the prefilter itself: 5), and reads ~3x faster than RE2 reads the prefilter.
- `secrets_gate`: the secrets check's prefilter (`_prefilter_kernels.secrets_gate`), read at the bytes each of its
  branches holds. Its keywords ("key", "pass", ...) are common words, so a gate on them alone passed 16% of the bytes
  of chat text and 40% of long text (RE2 then read those rows slower per byte, and the whole came within 5-15% of
  RE2 alone); this one also wants what the keyword branch wants around an assignment: a value of 8 characters after
  the ":", "=", "!" or "(", and a keyword in the word before it.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from .arrow import as_string_array, string_buffers
from .hashing import numba_kernels

_KERNELS = "dataaudit.textops._prefilter_kernels"


def _kernels(arr: pa.Array):
    return numba_kernels(_KERNELS, work=arr.nbytes)


def pii_gate(arr: pa.Array) -> np.ndarray | None:
    """Per row, whether it may match pii's prefilter (bool; null: no), or None without numba."""
    return _gate(arr, "pii_gate")


def secrets_gate(arr: pa.Array) -> np.ndarray | None:
    """Per row, whether it may match the secrets check's prefilter (bool; null: no), or None without numba."""
    return _gate(arr, "secrets_gate")


def passes(gate, text: str) -> bool:
    """Whether `gate` (`pii_gate`, `secrets_gate`) passes the one text `text`; True without the kernels. False: the
    check's prefilter, and so every pattern of the check, matches nowhere in it (a report's snippet is masked by
    both checks whatever check flagged its text: one gate call costs a fraction of reading it in Python)."""
    passed = gate(pa.array([text], pa.string()))
    return passed is None or bool(passed[0])


def _gate(arr: pa.Array, kernel: str) -> np.ndarray | None:
    arr = as_string_array(arr)
    k = _kernels(arr)
    if k is None:
        return None
    out = np.zeros(len(arr), np.bool_)
    off, data = string_buffers(arr)
    getattr(k, kernel)(off, data, out)
    return out


def need_table(needs: tuple[str, ...]) -> np.ndarray:
    """Per byte, bit k set when it is one of the (ASCII) characters of needs[k]."""
    table = np.zeros(256, np.uint8)
    for k, need in enumerate(needs):
        table[np.frombuffer(need.encode("ascii"), np.uint8)] |= np.uint8(1 << k)
    return table


def lines_holding(arr: pa.Array, needs: tuple[str, ...]):
    """The lines (split on "\\n") of `arr`'s rows that hold a character of some needs[k] (ASCII, at most 8 needs):
    (row of each, the batch's bytes, each line's byte start and end in them, code point start and end in its row,
    bit k set when it holds one of needs[k]), in order; or None without numba."""
    arr = as_string_array(arr)
    k = _kernels(arr)
    if k is None:
        return None
    off, data = string_buffers(arr)
    counts = np.empty(len(arr), np.int64)
    cap = numba_kernels("dataaudit.textops._repetition_kernels").count_newlines(data, off, counts) + len(arr)
    row, bstart, bend, cstart, cend = (np.empty(cap, np.int64) for _ in range(5))
    bits = np.empty(cap, np.uint8)
    n = k.need_lines(off, data, need_table(tuple(needs)), row, bstart, bend, cstart, cend, bits)
    return row[:n], data, bstart[:n], bend[:n], cstart[:n], cend[:n], bits[:n]
