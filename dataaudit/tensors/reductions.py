"""Per-sample (segment) reductions of a NumericField.

All take the field and optional per-element `values` (default field.values) and `where` (bool per element);
elements with valid == False or where == False do not take part. An empty sample gets the reduction's neutral
value: 0 for sum/count, +inf / -inf (integer: int64 max / min) for min / max, unless `empty` is given.
Excluded elements are replaced by the neutral value with torch.where (never dropped by indexing), and nothing
reads back to the host: safe inside a CUDA training step.

Three execution paths, chosen per field from its layout (cached on the instance, keyed by its `sample`
tensor) and giving the same result:
  dense   every sample has the same number of elements (from_tensor, fixed-size Arrow lists): reshape to
          [B, per] and reduce along dim 1.
  grouped elements grouped by sample in order (from_arrow; verified once on CPU for hand-built fields):
          counts from a cumsum, float sums with segment_reduce.
  scatter anything else: index_add_ / scatter_reduce_(include_self=True) into a tensor pre-filled with the
          neutral value.
Float sums on CPU always go through segment_reduce (one sequential pass per sample, masked elements adding
+0.0), so the same sample gives bit-identical sums whether it came ragged from Arrow or padded from a tensor.
Counts, min and max are exact in every path.
"""
from __future__ import annotations

import math

import numpy as np

from dataaudit.extras import LazyModule
from dataaudit.tensors.field import Layout, NumericField, layout_of
from dataaudit.tensors.rows import host_path

torch = LazyModule("torch", globals())   # imported on first use: the audit of text never loads it


def _dense_offsets(lay: Layout, device) -> torch.Tensor:
    if lay.offsets is None:
        lay.offsets = torch.arange(lay.num_samples + 1, device=device) * lay.per
    return lay.offsets


def _take_mask(field: NumericField, where: torch.Tensor | None) -> torch.Tensor | None:
    if where is None:
        return field.valid
    if field.valid is None:
        return where
    return where & field.valid


def seg_lengths(field: NumericField) -> torch.Tensor:
    """Number of stored elements per sample, ignoring `valid` (int64 [B])."""
    lay = layout_of(field)
    if lay.kind == "dense":
        return torch.full((field.num_samples,), lay.per, dtype=torch.int64, device=field.device)
    if lay.kind == "grouped":
        return lay.offsets.diff()
    out = torch.zeros(field.num_samples, dtype=torch.int64, device=field.device)
    return out.index_add_(0, field.sample, torch.ones_like(field.sample))


def _count_mask(field: NumericField, m: torch.Tensor) -> torch.Tensor:
    lay = layout_of(field)
    b = field.num_samples
    if lay.kind == "dense":
        if host_path(m) and b and lay.per:  # torch's CPU sum over bool is slow; numpy counts at memory speed
            return torch.from_numpy(np.count_nonzero(m.numpy().reshape(b, lay.per), axis=1).astype(np.int64))
        return m.reshape(b, lay.per).sum(1, dtype=torch.int64)
    if lay.kind == "grouped":
        if m.shape[0] == 0:
            return torch.zeros(b, dtype=torch.int64, device=m.device)
        cs = torch.cumsum(m, 0, dtype=torch.int64)
        off = lay.offsets
        # count in [start, end) = cs[end - 1] - cs[start - 1], with cs[-1] read as 0
        hi = torch.where(off[1:] > 0, cs.index_select(0, (off[1:] - 1).clamp(min=0)), 0)
        lo = torch.where(off[:-1] > 0, cs.index_select(0, (off[:-1] - 1).clamp(min=0)), 0)
        return hi - lo
    out = torch.zeros(b, dtype=torch.int64, device=field.device)
    return out.index_add_(0, field.sample, m.to(torch.int64))


def seg_count(field: NumericField, where: torch.Tensor | None = None) -> torch.Tensor:
    """int64 [B]: number of valid elements per sample (where `where` holds, if given)."""
    m = _take_mask(field, where)
    if m is None:
        return seg_lengths(field)
    return _count_mask(field, m)


def seg_any(field: NumericField, where: torch.Tensor) -> torch.Tensor:
    """bool [B]: some valid element satisfies `where`."""
    return seg_count(field, where) > 0


def seg_all(field: NumericField, where: torch.Tensor) -> torch.Tensor:
    """bool [B]: every valid element satisfies `where` (True for a sample without valid elements)."""
    return seg_count(field, ~where) == 0


def _acc_dtype(v: torch.Tensor) -> torch.dtype:
    return torch.float64 if v.is_floating_point() else torch.int64


def _sum_unmasked(field: NumericField, v: torch.Tensor) -> torch.Tensor:
    lay = layout_of(field)
    b = field.num_samples
    if v.is_floating_point() and host_path(v) and lay.kind != "scatter":
        off = lay.offsets if lay.kind == "grouped" else _dense_offsets(lay, v.device)
        return torch.segment_reduce(v, "sum", offsets=off, unsafe=True)
    if lay.kind == "dense":
        return v.reshape(b, lay.per).sum(1)
    out = torch.zeros(b, dtype=v.dtype, device=field.device)
    return out.index_add_(0, field.sample, v)


def seg_sum(field: NumericField, values: torch.Tensor | None = None, where: torch.Tensor | None = None,
            dtype: torch.dtype | None = None) -> torch.Tensor:
    """[B] sum per sample, accumulated in `dtype` (default float64 for float values, int64 otherwise)."""
    v = field.values if values is None else values
    dtype = dtype or _acc_dtype(v)
    m = _take_mask(field, where)
    if m is not None:
        v = torch.where(m, v, torch.zeros((), dtype=v.dtype, device=v.device))
    return _sum_unmasked(field, v.to(dtype))


def seg_broadcast(field: NumericField, per_sample: torch.Tensor) -> torch.Tensor:
    """Per-element copy of a per-sample tensor [B] (each element gets its sample's entry)."""
    lay = layout_of(field)
    if lay.kind == "dense":
        return per_sample.unsqueeze(1).expand(field.num_samples, lay.per).reshape(-1)
    return per_sample.index_select(0, field.sample)


def seg_std(field: NumericField, values: torch.Tensor | None = None, where: torch.Tensor | None = None
            ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(population std, mean, count) per sample over the valid elements where `where` holds: float64 [B],
    float64 [B], int64 [B]; 0, 0, 0 for an empty sample.

    Two passes in float64 (mean, then mean of squared deviations), so a large common offset (1e6 + tiny noise)
    does not cancel the way E[x^2] - E[x]^2 does."""
    x = field.values if values is None else values
    m = _take_mask(field, where)
    # One float64 working copy, updated in place (the input may be a read-only Arrow buffer: always copy).
    x = x.to(torch.float64, copy=True)
    excluded = None if m is None else ~m
    if excluded is not None:  # zero excluded elements first: NaN/Inf would poison the sums
        x.masked_fill_(excluded, 0.0)
    n = seg_count(field, where)
    nf = n.clamp(min=1).to(torch.float64)
    mean = _sum_unmasked(field, x) / nf
    lay = layout_of(field)
    if lay.kind == "dense":
        x.view(field.num_samples, lay.per).sub_(mean.unsqueeze(1))
    else:
        x.sub_(mean.index_select(0, field.sample))
    if excluded is not None:
        x.masked_fill_(excluded, 0.0)
    dev = x.mul_(x)
    return torch.sqrt(_sum_unmasked(field, dev) / nf), mean, n


def _minmax_dtype(v: torch.Tensor) -> torch.dtype:
    if v.dtype in (torch.float32, torch.float64, torch.int64):
        return v.dtype
    if v.is_floating_point():  # float16 / bfloat16: exact in float32
        return torch.float32
    return torch.int64  # bool and narrower integers


def _seg_extreme(field, values, where, empty, reduce: str) -> torch.Tensor:
    v = field.values if values is None else values
    dtype = _minmax_dtype(v)
    v = v.to(dtype)
    if dtype.is_floating_point:
        neutral = math.inf if reduce == "amin" else -math.inf
    else:
        info = torch.iinfo(dtype)
        neutral = info.max if reduce == "amin" else info.min
    m = _take_mask(field, where)
    if m is not None:
        v = torch.where(m, v, torch.full((), neutral, dtype=dtype, device=v.device))
    lay = layout_of(field)
    b = field.num_samples
    if lay.kind == "dense" and lay.per > 0:
        v2 = v.reshape(b, lay.per)
        out = v2.amin(1) if reduce == "amin" else v2.amax(1)
    else:
        out = torch.full((b,), neutral, dtype=dtype, device=field.device)
        out = out.scatter_reduce_(0, field.sample, v, reduce, include_self=True)
    if empty is not None:
        has = seg_count(field, where) > 0
        out = torch.where(has, out, torch.full((), empty, dtype=out.dtype, device=out.device))
    return out


def seg_min(field: NumericField, values: torch.Tensor | None = None, where: torch.Tensor | None = None,
            empty=None) -> torch.Tensor:
    """[B] minimum per sample (float32/float64 kept, float16/bfloat16 -> float32, integers/bool -> int64).
    Empty sample: +inf (integers: int64 max) or `empty`. NaN among the elements propagates: mask it with `where`."""
    return _seg_extreme(field, values, where, empty, "amin")


def seg_max(field: NumericField, values: torch.Tensor | None = None, where: torch.Tensor | None = None,
            empty=None) -> torch.Tensor:
    """[B] maximum per sample; see seg_min. Empty sample: -inf (integers: int64 min) or `empty`."""
    return _seg_extreme(field, values, where, empty, "amax")


def _require_grouped(field: NumericField) -> None:
    if layout_of(field).kind == "scatter" and field.device.type == "cpu":  # verified out of order (unknowable on GPU)
        raise ValueError("this operation needs the elements grouped by sample in ascending order")


def element_position(field: NumericField) -> torch.Tensor:
    """int64 per element: its position within its sample (needs the grouped layout: see field.py)."""
    _require_grouped(field)
    lens = seg_lengths(field)
    starts = torch.cumsum(lens, 0) - lens
    return torch.arange(field.values.shape[0], device=field.device) - starts.index_select(0, field.sample)


def aligned_index(src: NumericField, dst: NumericField) -> tuple[torch.Tensor, torch.Tensor]:
    """For each element of `dst`: the index into src.values of the element at the same position of the same
    sample, and whether that sample has as many elements in both (where it does not, the index is 0 and
    meaningless). Both fields must have the grouped layout and the same num_samples; src must be non-empty."""
    _require_grouped(src)
    ls, ld = seg_lengths(src), seg_lengths(dst)
    starts = torch.cumsum(ls, 0) - ls
    same = (ls == ld).index_select(0, dst.sample)
    idx = starts.index_select(0, dst.sample) + element_position(dst)
    idx = torch.where(same, idx, torch.zeros_like(idx))
    return idx, same


def valid_from_mask(ids: NumericField, mask: NumericField) -> torch.Tensor | None:
    """Per id element: mask != 0 at the same position, on samples whose mask has as many elements as their ids;
    True elsewhere (a length mismatch is mask_mismatch's to report). None when either side has no elements.
    Needs the grouped layout (every constructor of this package gives it)."""
    if ids.values.shape[0] == 0 or mask.values.shape[0] == 0:
        return None
    idx, same = aligned_index(mask, ids)
    mv = mask.values.index_select(0, idx)
    return torch.where(same, mv != 0, torch.ones_like(same))
