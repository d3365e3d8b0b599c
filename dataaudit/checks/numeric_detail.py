"""The offending value of a numeric finding and where it is, for the report: `embedding[17] = nan`,
`loss_weight = 1e+38 > 1e+06`.

The checks' `explain` (see dataaudit.checks.base): the audit builds one only for a batch the check flagged, the
guard never does. On the first detail read, the batch's elements are read back once and, per sample, the first
offending element is found with numpy (one pass, no loop over samples); only the flagged samples' strings are
formatted.
"""
from __future__ import annotations

import numpy as np

from dataaudit.checks.base import FieldDetail
from dataaudit.extras import LazyModule
from dataaudit.tensors import NumericField

torch = LazyModule("torch", globals())   # imported on first use: the audit of text never loads it


def fmt(v) -> str:
    """A value as a report shows it: integers exactly, floats in %g (nan, inf, 1e+38)."""
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    return f"{float(v):g}"


class _Elements:
    """The field's elements on the host, the sample and position within it of each, and the finite mask."""

    def __init__(self, field: NumericField):
        v = field.values
        if v.dtype in (torch.float16, torch.bfloat16):
            v = v.float()
        self.values = v.detach().cpu().numpy()
        self.sample = field.sample.detach().cpu().numpy().astype(np.int64, copy=False)
        n = field.num_samples
        starts = np.searchsorted(self.sample, np.arange(n))   # elements are grouped by sample, in order
        self.pos = np.arange(self.sample.size) - starts[self.sample] if n else np.zeros(0, np.int64)
        self.valid = np.ones(self.sample.size, bool) if field.valid is None else \
            field.valid.detach().cpu().numpy().astype(bool)
        self.finite = np.isfinite(self.values) if self.values.dtype.kind == "f" else np.ones(self.values.size, bool)
        self.n = n

    def first(self, mask: np.ndarray) -> np.ndarray:
        """Per sample, the index of its first element where `mask` holds (-1: none)."""
        idx = np.flatnonzero(mask & self.valid)[::-1]
        out = np.full(self.n, -1, np.int64)
        out[self.sample[idx]] = idx            # reversed: the first element of each sample is written last
        return out

    def name(self, e: int, field: str, listed: bool) -> str:
        """Element e as a path: `x[17]` in a list field, `x` in a scalar one."""
        return f"{field}[{self.pos[e]}]" if listed else field

    def at(self, e: int, field: str, listed: bool) -> str:
        return f"{self.name(e, field, listed)} = {fmt(self.values[e])}"


class _Lazy(FieldDetail):
    """`value`: the check's value per sample (numpy), `params`: its parameters."""

    def __init__(self, field: NumericField, value: np.ndarray, **params):
        self.field, self.value, self.params = field, value, params
        self._elements = self._first = None

    def _once(self):
        if self._elements is None:
            self._elements = _Elements(self.field)
            self._first = self.locate(self._elements)
        return self._elements, self._first

    def text(self, i: int, field: str, listed: bool) -> str:
        el, first = self._once()
        return self.describe(el, first, int(i), field, listed)


class Nonfinite(_Lazy):
    """`x[17] = nan (3 non-finite elements)`; a scalar field: `x = inf`."""

    def locate(self, el):
        return el.first(~el.finite)

    def describe(self, el, first, i, field, listed):
        text = el.at(first[i], field, listed)
        n = int(self.value[i])
        return text + f" ({n} non-finite elements)" if n > 1 else text


class OutOfRange(_Lazy):
    """`loss_weight = 1e+38 > 1e+06`; a list: `x[3] = -7 < 0 (2 elements outside [0, 10])`. NaN is not counted."""

    def locate(self, el):
        lo, hi = self.params.get("min"), self.params.get("max")
        with np.errstate(invalid="ignore"):
            bad = np.zeros(el.values.size, bool)
            if lo is not None:
                bad |= el.values < lo
            if hi is not None:
                bad |= el.values > hi
        return el.first(bad)

    def describe(self, el, first, i, field, listed):
        e = first[i]
        lo, hi = self.params.get("min"), self.params.get("max")
        n = int(self.value[i])
        if e < 0:   # a half-precision value at the bound's edge: torch and numpy may round it apart
            return f"{field}: {n} elements outside [{lo}, {hi}]"
        side = f"< {fmt(lo)}" if lo is not None and el.values[e] < lo else f"> {fmt(hi)}"
        text = f"{el.at(e, field, listed)} {side}"
        return text + f" ({n} elements outside [{lo}, {hi}])" if n > 1 else text


class ExtremeSpan(_Lazy):
    """`x: max x[9] = 20000, min x[3] = -50000, span 70000 > 10000` (the first max and min, finite elements)."""

    def locate(self, el):
        v, s, ok = el.values, el.sample, el.finite & el.valid
        hi, lo = np.full(el.n, -np.inf), np.full(el.n, np.inf)
        np.maximum.at(hi, s[ok], v[ok].astype(np.float64))
        np.minimum.at(lo, s[ok], v[ok].astype(np.float64))
        return el.first(ok & (v == hi[s])), el.first(ok & (v == lo[s]))

    def describe(self, el, first, i, field, listed):
        kmax, kmin = first[0][i], first[1][i]
        return (f"{field}: max {el.at(kmax, field, listed)}, min {el.at(kmin, field, listed)}, "
                f"span {fmt(self.value[i])} > {fmt(self.params['threshold'])}")


class Constant(_Lazy):
    """`x: all 768 finite elements = 0 (std 0 < 1e-06)`."""

    def locate(self, el):
        ok = el.finite & el.valid
        return el.first(ok), np.bincount(el.sample[ok], minlength=el.n)

    def describe(self, el, first, i, field, listed):
        e, count = first[0][i], first[1][i]
        return (f"{field}: all {count} finite elements = {fmt(el.values[e])} "
                f"(std {self.value[i]:.3g} < {self.params['std_threshold']:g})")
