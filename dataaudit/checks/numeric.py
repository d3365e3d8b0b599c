"""Checks on any numeric field (embeddings, audio, image arrays, scores...), target "numeric".

Each check takes a NumericField (from_arrow for the audit, from_tensor for the guard) and returns a CheckOutput
of torch tensors on the field's device: flagged bool [B], value float64 [B]. Only segment reductions and
elementwise ops: no Python loop over samples, no host sync. Elements with valid == False are ignored.

CPU fast path (a dense field without a valid mask, e.g. a batch tensor from `from_tensor`): the checks share
cached row reductions (`row_reduce`: min, max, or a sum) instead of building per-element masks, and redo the
generic computation only for the rows those reductions mark as suspect (a row with a NaN/Inf, a row outside
the bounds). Same flags and values as the generic path, bit for bit (tests/guard/test_guard_checks.py); on other
devices the generic, sync-free path runs.
"""
from __future__ import annotations

import functools
import math

import numpy as np

from dataaudit.checks.base import CheckOutput, register
from dataaudit.checks.numeric_detail import Constant, ExtremeSpan, Nonfinite, OutOfRange
from dataaudit.extras import LazyModule
from dataaudit.tensors import (
    DTYPE_CODE,
    DTYPE_NAMES,
    FLOAT_DTYPES,
    INTEGER_DTYPES,
    NumericField,
    dense_rows,
    dtype_name,
    from_tensor,
    has_memo,
    host_np,
    host_path,
    row_reduce,
    seg_count,
    seg_max,
    seg_min,
    seg_std,
    uniform_dtype_code,
)

torch = LazyModule("torch", globals())   # imported on first use: the audit of text never loads it


__all__ = ["nonfinite", "extreme_span", "constant", "out_of_range", "dtype_mismatch", "dtype_name",
           "expected_dtype_codes"]


def _out(field: NumericField, flagged: torch.Tensor, value: torch.Tensor, detail=None) -> CheckOutput:
    return CheckOutput(flagged=flagged.to(torch.bool), value=value.to(torch.float64), detail=detail)


_np_zeros = np.zeros


def _none(field: NumericField) -> CheckOutput:
    if host_path(field.values):  # numpy allocates small arrays faster than torch (and than slicing one buffer)
        n = field.num_samples
        return CheckOutput(torch.from_numpy(_np_zeros(n, bool)), torch.from_numpy(_np_zeros(n)))
    z = torch.zeros(field.num_samples, dtype=torch.float64, device=field.device)
    return CheckOutput(flagged=torch.zeros(field.num_samples, dtype=torch.bool, device=field.device), value=z)


def _finite(v: torch.Tensor) -> torch.Tensor | None:
    """Per-element finiteness; None (= all finite) for integer / bool values."""
    return v.abs() < math.inf if v.is_floating_point() else None  # == isfinite (NaN < inf is False), faster


def _count_float(field: NumericField, where: torch.Tensor | None) -> torch.Tensor:
    return seg_count(field, where).to(torch.float64)


def _rows_nonfinite(field: NumericField, x2: torch.Tensor | None = None) -> np.ndarray | None:
    """CPU fast path, float dense field: None when no row can hold a NaN/Inf, else bool [B], True for the rows
    that may. From the row min and max when a check already computed them (exact: NaN and +-Inf propagate into
    them), else from one row sum (NaN/Inf propagate into it; a finite row whose sum overflows is a false suspect
    that the exact recount clears)."""
    if has_memo(field, "row_amin") and has_memo(field, "row_amax"):
        bad = ~(np.isfinite(host_np(row_reduce(field, "amin"))) & np.isfinite(host_np(row_reduce(field, "amax"))))
    else:
        fin = np.isfinite(host_np(row_reduce(field, "sum", x2)))
        if np.count_nonzero(fin) == fin.size:  # == fin.all(), a fraction of its fixed cost
            return None
        bad = ~fin
    return bad if np.count_nonzero(bad) else None


def _on_rows(x2: torch.Tensor, rows: np.ndarray, general, base: CheckOutput, **params) -> CheckOutput:
    """CPU fast path: `base` with the rows marked in `rows` (bool [B]) replaced by the generic check's result on
    just those rows (a copy of them: few by design)."""
    idx = torch.from_numpy(np.flatnonzero(rows))
    out = general(from_tensor(x2.index_select(0, idx)), **params)
    base.flagged[idx] = out.flagged
    base.value[idx] = out.value
    return base


# Guard default: NaN/Inf inputs -> NaN loss; one row sum per float tensor (the row min/max when computed).
@register("nonfinite", target="numeric", severity="error", guard_default=1, explain=Nonfinite,
          detail="{value:.0f} non-finite element(s) (NaN / Inf)",
          description="The sample holds NaN or +-Inf values (a null element inside a list counts as NaN). "
                      "Integer fields are never flagged.")
def nonfinite(field: NumericField) -> CheckOutput:
    if not field.values.is_floating_point():
        return _none(field)
    x2 = dense_rows(field)
    if x2 is None:
        return _nonfinite(field)
    suspect = _rows_nonfinite(field, x2)
    return _none(field) if suspect is None else _on_rows(x2, suspect, _nonfinite, _none(field))


def _nonfinite(field: NumericField) -> CheckOutput:
    n = _count_float(field, ~_finite(field.values))
    return _out(field, n > 0, n)


# Guard opt-in (two extra reductions); computes the row min/max first, for the others to reuse.
@register("extreme_span", target="numeric", severity="warning", params={"threshold": 1e4}, guard_rank=0,
          explain=ExtremeSpan,
          detail="value span (max - min) {value:.4g} exceeds {threshold:g}",
          description="max - min over the finite elements exceeds the threshold (unnormalized or corrupted "
                      "values). value = the span, 0 for a sample without finite elements.")
def extreme_span(field: NumericField, threshold: float = 1e4) -> CheckOutput:
    x2 = dense_rows(field)
    if x2 is None:
        return _extreme_span(field, threshold)
    mn, mx = host_np(row_reduce(field, "amin", x2)), host_np(row_reduce(field, "amax", x2))
    with np.errstate(invalid="ignore"):  # inf - inf in a row with Infs: that row is redone below
        span = mx.astype(np.float64) - mn.astype(np.float64)  # as the generic path: each extreme to float64, then -
    base = CheckOutput(flagged=torch.from_numpy(span > threshold), value=torch.from_numpy(span))
    if field.values.is_floating_point():
        bad = ~(np.isfinite(mn) & np.isfinite(mx))  # rows with a NaN/Inf: span over their finite elements
        if bad.any():
            return _on_rows(x2, bad, _extreme_span, base, threshold=threshold)
    return base


def _extreme_span(field: NumericField, threshold: float = 1e4) -> CheckOutput:
    v = field.values
    fin = _finite(v)
    has = seg_count(field, fin) > 0
    span = seg_max(field, v, fin).to(torch.float64) - seg_min(field, v, fin).to(torch.float64)
    span = torch.where(has, span, torch.zeros_like(span))
    return _out(field, span > threshold, span)


# Guard opt-in: a two-pass float64 std, ~20x the cost of the default checks.
@register("constant", target="numeric", severity="warning", params={"std_threshold": 1e-6, "min_elements": 2},
          explain=Constant,
          detail="constant values: std {value:.3g} < {std_threshold:g}",
          description="The finite elements of the sample (at least min_elements of them) all have the same value "
                      "(population std below std_threshold): blank image, silent audio, zeroed embedding.")
def constant(field: NumericField, std_threshold: float = 1e-6, min_elements: int = 2) -> CheckOutput:
    x2 = dense_rows(field)
    # CPU fast path: when no row holds a NaN/Inf the finite-element mask is all True; leave it out.
    all_finite = x2 is not None and (not field.values.is_floating_point() or _rows_nonfinite(field, x2) is None)
    std, _, n = seg_std(field, where=None if all_finite else _finite(field.values))
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


# Guard default (only with a bound configured): shares the row min/max, computed before the others use them.
@register("out_of_range", target="numeric", severity="warning", params={"min": None, "max": None},
          required=(("min", "max"),), guard_default=2, guard_rank=1, explain=OutOfRange,
          detail="{value:.0f} element(s) outside [{min}, {max}]",
          description="Elements below min or above max (NaN is not counted: see nonfinite; +-Inf is). Runs only "
                      "with a bound configured; with none it flags nothing.")
def out_of_range(field: NumericField, min=None, max=None) -> CheckOutput:  # noqa: A002 (param names are config keys)
    if min is None and max is None:
        return _none(field)
    x2 = dense_rows(field)
    if x2 is None:
        return _out_of_range(field, min, max)
    # CPU fast path: a row whose min and max lie within the bounds has no element outside them (count 0); the
    # generic count runs on the other rows only (a NaN row min/max compares False: it is recounted too).
    ok = None
    for bound, op, hi in ((min, "amin", False), (max, "amax", True)):
        if bound is None:
            continue
        r = row_reduce(field, op, x2)
        if r.dtype in (torch.float32, torch.float64):
            # numpy compares in the values' dtype, as torch does (NaN compares False: recounted)
            a = r.numpy()
            inside = a <= float(bound) if hi else a >= float(bound)
        else:  # integers, float16/bfloat16: the exact torch comparisons of the generic path
            a = host_np(r)
            inside = ~host_np(above(r, float(bound)) if hi else below(r, float(bound)))
            if a.dtype.kind == "f":
                inside &= ~np.isnan(a)
        ok = inside if ok is None else ok & inside
    if ok.all():
        return _none(field)
    return _on_rows(x2, ~ok, _out_of_range, _none(field), min=min, max=max)


def _out_of_range(field: NumericField, min=None, max=None) -> CheckOutput:  # noqa: A002
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
    key = expected if isinstance(expected, str) else tuple(expected)
    codes = _CODES.get(key)
    if codes is None:
        if len(_CODES) >= 64:
            _CODES.clear()
        codes = _CODES[key] = _expected_codes(key)
    return codes


# A plain dict, not functools.lru_cache: torch.compile traces a dict lookup, and warns on every lru_cache call.
_CODES: dict = {}


def _expected_codes(expected) -> tuple[int, ...]:
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


# Numeric fields are checked against [data] numeric_dtype when it is set; labels and token ids must always be
# integers. Guard default on numeric fields (only with numeric_dtype): per-sample codes, no pass over the data.
@register("dtype_mismatch", severity="error", required=("expected",), data={"numeric_dtype": "expected"},
          target={"numeric": {}, "label": {"expected": "int"}, "token_ids": {"expected": "int"}},
          guard_default=3,
          detail="stored dtype code {value:.0f} (see DTYPE_NAMES) is not {expected}",
          description="The sample's stored dtype is not of the expected kind (int, float, bool or an exact "
                      "name such as float32). value = the dtype code; detail names it (CPU).")
def dtype_mismatch(field: NumericField, expected) -> CheckOutput:
    codes = expected_dtype_codes(expected)
    code = uniform_dtype_code(field)
    if code is not None and host_path(field.values) and field.present is None:
        # from_tensor: one storage dtype for the whole batch, known without building the per-sample codes
        n = field.num_samples
        dn = np.full(n, code, dtype=np.int8)
        exp = expected if isinstance(expected, str) else "/".join(expected)
        return CheckOutput(flagged=torch.from_numpy(np.full(n, code not in codes)),
                           value=torch.from_numpy(dn.astype(np.float64)), detail=_DtypeDetail(dn, exp))
    if code is not None and field.present is None:   # a device batch of one dtype: the verdict is known here
        n, dev = field.num_samples, field.device
        return _out(field, torch.full((n,), code not in codes, dtype=torch.bool, device=dev),
                    torch.full((n,), float(code), dtype=torch.float64, device=dev))
    d = field.dtypes
    if host_path(d):  # the codes are on the host: test them in numpy, name them only when asked
        dn = d.numpy()
        flagged = ~_accepted(codes)[dn.view(np.uint8)]
        if field.present is not None:
            flagged &= field.present.numpy()
        exp = expected if isinstance(expected, str) else "/".join(expected)
        return CheckOutput(flagged=torch.from_numpy(flagged), value=torch.from_numpy(dn.astype(np.float64)),
                           detail=_DtypeDetail(dn, exp))
    ok = torch.zeros(d.shape, dtype=torch.bool, device=d.device)
    for c in codes:  # a handful of scalar compares: no host->device copy, no sync
        ok |= d == c
    flagged = ~ok
    if field.present is not None:
        flagged &= field.present
    return _out(field, flagged, d.to(torch.float64))


@functools.lru_cache(maxsize=64)
def _accepted(codes: tuple[int, ...]) -> np.ndarray:
    """bool [256]: True at the accepted codes (indexed by the int8 code's byte)."""
    t = np.zeros(256, dtype=bool)
    for c in codes:
        t[c & 0xFF] = True
    return t


class _DtypeDetail:
    """dtype_mismatch's per-sample detail strings, formatted only for the samples a report reads."""

    def __init__(self, codes: np.ndarray, expected: str):
        self.codes, self.expected = codes, expected

    def __len__(self) -> int:
        return len(self.codes)

    def __getitem__(self, i) -> str:
        return f"stored as {dtype_name(self.codes[i])}, expected {self.expected}"
