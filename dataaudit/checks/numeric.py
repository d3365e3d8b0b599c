"""Checks on any numeric field (embeddings, audio, image arrays, scores...), target "numeric".

Each check takes a NumericField (from_arrow for the audit, from_tensor for the guard) and returns a CheckOutput
of torch tensors on the field's device: flagged bool [B], value float64 [B]. Only segment reductions and
elementwise ops: no Python loop over samples, no host sync. Elements with valid == False are ignored.
"""
from __future__ import annotations

import math

import numpy as np
import torch

from dataaudit.checks.base import CheckOutput, register
from dataaudit.checks.numeric_field import (
    DTYPE_CODE,
    DTYPE_NAMES,
    FLOAT_DTYPES,
    INTEGER_DTYPES,
    NumericField,
    dtype_name,
    seg_count,
    seg_max,
    seg_min,
    seg_std,
)

__all__ = ["nonfinite", "extreme_span", "constant", "out_of_range", "dtype_mismatch", "dtype_name",
           "expected_dtype_codes"]


def _out(field: NumericField, flagged: torch.Tensor, value: torch.Tensor, detail=None) -> CheckOutput:
    return CheckOutput(flagged=flagged.to(torch.bool), value=value.to(torch.float64), detail=detail)


def _none(field: NumericField) -> CheckOutput:
    z = torch.zeros(field.num_samples, dtype=torch.float64, device=field.device)
    return CheckOutput(flagged=torch.zeros(field.num_samples, dtype=torch.bool, device=field.device), value=z)


def _finite(v: torch.Tensor) -> torch.Tensor | None:
    """Per-element finiteness; None (= all finite) for integer / bool values."""
    return v.abs() < math.inf if v.is_floating_point() else None  # == isfinite (NaN < inf is False), faster


def _count_float(field: NumericField, where: torch.Tensor | None) -> torch.Tensor:
    return seg_count(field, where).to(torch.float64)


@register("nonfinite", target="numeric", severity="error",
          detail="{value:.0f} non-finite element(s) (NaN / Inf)",
          description="The sample holds NaN or +-Inf values (a null element inside a list counts as NaN). "
                      "Integer fields are never flagged.")
def nonfinite(field: NumericField) -> CheckOutput:
    v = field.values
    if not v.is_floating_point():
        return _none(field)
    n = _count_float(field, ~_finite(v))
    return _out(field, n > 0, n)


@register("extreme_span", target="numeric", severity="warning", params={"threshold": 1e4},
          detail="value span (max - min) {value:.4g} exceeds {threshold:g}",
          description="max - min over the finite elements exceeds the threshold (unnormalized or corrupted "
                      "values). value = the span, 0 for a sample without finite elements.")
def extreme_span(field: NumericField, threshold: float = 1e4) -> CheckOutput:
    v = field.values
    fin = _finite(v)
    has = seg_count(field, fin) > 0
    span = seg_max(field, v, fin).to(torch.float64) - seg_min(field, v, fin).to(torch.float64)
    span = torch.where(has, span, torch.zeros_like(span))
    return _out(field, span > threshold, span)


@register("constant", target="numeric", severity="warning", params={"std_threshold": 1e-6, "min_elements": 2},
          detail="constant values: std {value:.3g} < {std_threshold:g}",
          description="The finite elements of the sample (at least min_elements of them) all have the same value "
                      "(population std below std_threshold): blank image, silent audio, zeroed embedding.")
def constant(field: NumericField, std_threshold: float = 1e-6, min_elements: int = 2) -> CheckOutput:
    std, _, n = seg_std(field, where=_finite(field.values))
    return _out(field, (n >= int(min_elements)) & (std < std_threshold), std)


def _int_bound_below(v: torch.Tensor, bound: float) -> torch.Tensor:
    """v < bound for int64 v, exact (no float32 round trip), bound any real."""
    c = math.ceil(bound)  # for integers, v < bound <=> v < ceil(bound)
    if c > 2 ** 63 - 1:
        return torch.ones_like(v, dtype=torch.bool)
    if c <= -(2 ** 63):
        return torch.zeros_like(v, dtype=torch.bool)
    return v < c


def _int_bound_above(v: torch.Tensor, bound: float) -> torch.Tensor:
    f = math.floor(bound)  # v > bound <=> v > floor(bound)
    if f < -(2 ** 63):
        return torch.ones_like(v, dtype=torch.bool)
    if f >= 2 ** 63 - 1:
        return torch.zeros_like(v, dtype=torch.bool)
    return v > f


def below(v: torch.Tensor, bound) -> torch.Tensor:
    """Elementwise v < bound, exact for integer values (torch would wrap a large Python int to a narrow dtype,
    or compare in float32); NaN -> False."""
    if math.isnan(bound):
        return torch.zeros_like(v, dtype=torch.bool)
    if v.is_floating_point():
        return v < bound
    if math.isinf(bound):
        return torch.full_like(v, bound > 0, dtype=torch.bool)
    return _int_bound_below(v.to(torch.int64), bound)


def above(v: torch.Tensor, bound) -> torch.Tensor:
    """Elementwise v > bound; see `below`."""
    if math.isnan(bound):
        return torch.zeros_like(v, dtype=torch.bool)
    if v.is_floating_point():
        return v > bound
    if math.isinf(bound):
        return torch.full_like(v, bound < 0, dtype=torch.bool)
    return _int_bound_above(v.to(torch.int64), bound)


@register("out_of_range", target="numeric", severity="warning", params={"min": None, "max": None},
          detail="{value:.0f} element(s) outside [{min}, {max}]",
          description="Elements below min or above max (NaN is not counted: see nonfinite; +-Inf is). Runs only "
                      "with a bound configured; with none it flags nothing.")
def out_of_range(field: NumericField, min=None, max=None) -> CheckOutput:  # noqa: A002 (param names are config keys)
    if min is None and max is None:
        return _none(field)
    v = field.values
    bad = None
    if min is not None:
        bad = below(v, float(min))
    if max is not None:
        hi = above(v, float(max))
        bad = hi if bad is None else bad | hi
    n = _count_float(field, bad)
    return _out(field, n > 0, n)


_FAMILIES = {"int": INTEGER_DTYPES, "integer": INTEGER_DTYPES, "float": FLOAT_DTYPES, "bool": frozenset({"bool"})}


def expected_dtype_codes(expected) -> tuple[int, ...]:
    """Dtype codes accepted by `expected`: "int" | "float" | "bool", an exact name from DTYPE_NAMES, or a list of
    those."""
    items = [expected] if isinstance(expected, str) else list(expected)
    names: set[str] = set()
    for e in items:
        if e in _FAMILIES:
            names |= _FAMILIES[e]
        elif e in DTYPE_CODE:
            names.add(e)
        else:
            raise ValueError(f"dtype_mismatch: unknown expected dtype {e!r}; use int, float, bool or one of "
                             f"{', '.join(DTYPE_NAMES)}")
    return tuple(sorted(DTYPE_CODE[n] for n in names))


_NAMES_NP = np.array(DTYPE_NAMES, dtype=object)


@register("dtype_mismatch", target="numeric", severity="error", required=("expected",),
          detail="stored dtype code {value:.0f} (see DTYPE_NAMES) is not {expected}",
          description="The sample's stored dtype is not of the expected kind (int, float, bool or an exact "
                      "name such as float32). value = the dtype code; detail names it (CPU).")
def dtype_mismatch(field: NumericField, expected) -> CheckOutput:
    codes = expected_dtype_codes(expected)
    d = field.dtypes
    ok = torch.zeros(d.shape, dtype=torch.bool, device=d.device)
    for c in codes:  # a handful of scalar compares: no host->device copy, no sync
        ok |= d == c
    flagged = ~ok
    if field.present is not None:
        flagged &= field.present
    detail = None
    if d.device.type == "cpu":  # naming needs the codes on the host: only where that is free
        idx = d.numpy().astype(np.int64)
        idx = np.where((idx >= 0) & (idx < len(DTYPE_NAMES)), idx, DTYPE_CODE["other"])
        exp = expected if isinstance(expected, str) else "/".join(expected)
        detail = "stored as " + _NAMES_NP[idx] + f", expected {exp}"
    return _out(field, flagged, d.to(torch.float64), detail)
