"""Helpers of the pretraining quality rules (quality_gopher, quality_c4, quality_fineweb, quality_basic): Python's
line splits over a whole batch, and the first rule that fires per document."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dataaudit.textops.arrow import string_buffers
from dataaudit.textops.hashing import WS_CLASS, numba_kernels
from dataaudit.textops.spacy_en import LINE_BREAK_RE, SPACE_CLASS

from .base import CheckOutput
from .text_common import as_string_array, flatten_lists, to_bool, to_int64


KERNELS = "dataaudit.textops._spacy_kernels"     # the one-pass line and word splits


def texts(arr) -> pa.Array:
    """The batch as a string array, null -> "" (a null document has no words, as an empty one)."""
    return pc.fill_null(as_string_array(arr), "")


def splitlines(arr: pa.Array) -> tuple[pa.Array, np.ndarray, np.ndarray]:
    """Every text's `str.splitlines()`: (lines, parent text, lines per text). Python splits at \\n, \\r, \\r\\n,
    \\v, \\f, \\x1c-\\x1e, \\x85, U+2028, U+2029 and gives no line after a final break (none for ""). One pass of the
    numba kernel, else a regex split."""
    k = numba_kernels(KERNELS, work=arr.nbytes)
    if k is not None:
        off, data = string_buffers(arr)
        m = k.count_lines(off, data)
        out_data = np.empty(max(len(data), 1), np.uint8)
        out_off = np.zeros(m + 1, np.int64)
        parent = np.empty(m, np.int64)
        k.split_lines(off, data, out_data, out_off, parent)
        lines = pa.Array.from_buffers(pa.large_string(), m, [None, pa.py_buffer(out_off),
                                                               pa.py_buffer(out_data[:out_off[m]])])
        return lines, parent, np.bincount(parent, minlength=len(arr)).astype(np.int64)
    values, parent, counts = flatten_lists(pc.split_pattern_regex(arr, pattern=LINE_BREAK_RE))
    if len(values):
        last = np.cumsum(counts) - 1
        last = last[counts > 0]
        empty_last = last[to_int64(pc.binary_length(values.take(pa.array(last)))) == 0]
        if empty_last.size:
            keep = np.ones(len(values), dtype=bool)
            keep[empty_last] = False
            values = values.filter(pa.array(keep))
            parent = parent[keep]
            counts = np.bincount(parent, minlength=len(counts)).astype(np.int64)
    return values, parent, counts


def words_per_line(lines: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """Per line: its words (`str.split()`) and the characters of its longest word."""
    k = numba_kernels(KERNELS, work=lines.nbytes)
    if k is not None:
        off, data = string_buffers(lines)
        words = np.zeros(len(lines), np.int64)
        longest = np.zeros(len(lines), np.int64)
        k.line_words(off, data, WS_CLASS, words, longest)
        return words, longest
    pieces = pc.split_pattern_regex(lines, pattern="[" + SPACE_CLASS + "]+")
    flat = pc.list_flatten(pieces)
    wparent = np.repeat(np.arange(len(lines)), to_int64(pc.list_value_length(pieces)))
    nonempty = to_int64(pc.binary_length(flat)) > 0
    longest = np.zeros(len(lines), np.int64)
    np.maximum.at(longest, wparent, to_int64(pc.utf8_length(flat)))
    return np.bincount(wparent[nonempty], minlength=len(lines)).astype(np.int64), longest


def per_text(parent: np.ndarray, mask: np.ndarray, n: int, weights=None) -> np.ndarray:
    """How many of each text's items `mask` holds (or the sum of `weights` over them)."""
    w = mask.astype(np.float64) if weights is None else np.where(mask, weights, 0).astype(np.float64)
    return np.bincount(parent, weights=w, minlength=n)


def match(arr: pa.Array, pattern: str) -> np.ndarray:
    return to_bool(pc.match_substring_regex(arr, pattern=pattern))


def count(arr: pa.Array, literal: str) -> np.ndarray:
    return to_int64(pc.count_substring(arr, pattern=literal))


def ratio(num, den) -> np.ndarray:
    """num / den in float64 as Python divides (x / 0: inf, or nan for 0 / 0; datatrove would raise there)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.asarray(num, dtype=np.float64) / np.asarray(den, dtype=np.float64)


def first_rule(fired: list[np.ndarray], n: int) -> np.ndarray:
    """Per text, the index of the first rule of `fired` (bool arrays, in the order the filter tests them) that
    fires, -1 when none."""
    which = np.full(n, -1, dtype=np.int64)
    for k in range(len(fired) - 1, -1, -1):
        which[fired[k]] = k
    return which


def rule_output(which: np.ndarray, measured: list, describe) -> CheckOutput:
    """A quality check's output from the first rule each text breaks (`which`, -1: none): value = that rule's
    measured value (0 when none), detail = describe(rule, value) for the flagged texts."""
    n = len(which)
    flagged = which >= 0
    value = np.zeros(n, dtype=np.float64)
    detail = None
    rows = np.flatnonzero(flagged)
    if rows.size:
        detail = np.full(n, None, dtype=object)
        for i in rows:
            value[i] = measured[which[i]][i]
            detail[i] = describe(int(which[i]), value[i])
    return CheckOutput(flagged=flagged, value=value, detail=detail)


def first_bound(tests: list, n: int, eligible: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray | None]:
    """(flagged, detail) of bounds tested in order, a text flagged by the first it breaks: tests = [(values, op
    "<" or ">", limit (0: off), describe(i) -> the detail of text i)]; `eligible`: the texts judged at all."""
    flagged = np.zeros(n, dtype=bool)
    detail = None
    for v, op, limit, describe in tests:
        if not limit:
            continue
        hit = (v < limit if op == "<" else v > limit) & ~flagged
        if eligible is not None:
            hit &= eligible
        rows = np.flatnonzero(hit)
        if rows.size:
            detail = np.full(n, None, dtype=object) if detail is None else detail
            for i in rows:
                detail[i] = describe(i)
            flagged |= hit
    return flagged, detail


def num(x: float) -> str:
    """A measured value for a detail string: an integer as one, else 2 decimals (more when needed to differ)."""
    if float(x).is_integer():
        return str(int(x))
    return f"{x:.2f}" if abs(x) >= 0.01 else f"{x:.3g}"
