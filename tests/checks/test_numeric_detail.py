"""The numeric checks' report details name the first offending element of each flagged sample and its value."""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from dataaudit.checks import REGISTRY
from dataaudit.tensors import from_arrow


def details(check: str, column: pa.Array, listed: bool, **params) -> list:
    """The detail of every flagged sample, as the audit builds it."""
    spec = REGISTRY[check]
    field = from_arrow(column)
    params = {**spec.params, **params}
    out = spec.fn(field, **params)
    flagged = np.flatnonzero(np.asarray(out.flagged))
    explained = spec.explain(field, np.asarray(out.value, np.float64), **params)
    return [(int(i), explained.text(int(i), "x", listed)) for i in flagged]


def test_out_of_range_integers_in_lists_and_half_precision():
    col = pa.array([[1, 2, 3], [4, -7, 12, -1], None, [10, 11]], pa.list_(pa.int64()))
    assert details("out_of_range", col, True, min=0, max=10) == [
        (1, "x[1] = -7 < 0 (3 elements outside [0, 10])"), (3, "x[1] = 11 > 10")]
    half = pa.array([[0.5, 70000.0]], pa.list_(pa.float32())).cast(pa.list_(pa.float16()))
    assert details("out_of_range", half, True, max=1000.0) == [(0, "x[1] = inf > 1000")]   # 70000 overflows fp16


def test_nonfinite_null_element_and_scalars():
    assert details("nonfinite", pa.array([[1.0, None, 2.0], [0.0]]), True) == [(0, "x[1] = nan")]
    assert details("nonfinite", pa.array([1.5, float("-inf"), None, float("nan")]), False) == [
        (1, "x = -inf"), (3, "x = nan")]


def test_extreme_span_and_constant_name_their_elements():
    col = pa.array([[3.0, -2e4, float("nan"), 9e4, 9e4], [1.0, 2.0]])
    assert details("extreme_span", col, True) == [(0, "x: max x[3] = 90000, min x[1] = -20000, span 110000 > 10000")]
    assert details("constant", pa.array([[2.5, 2.5, float("inf"), 2.5], [1.0, 2.0]]), True) == [
        (0, "x: all 3 finite elements = 2.5 (std 0 < 1e-06)")]
