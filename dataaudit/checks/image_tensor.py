"""Checks on decoded image tensors, target "image_tensor": a NumericField of images, [C, H, W] per sample (or
[H, W, C] with layout="hwc"), whose per-sample dims are known (`uniform_shape` for a batch tensor, `field.shape`
for ragged samples: WebDataset .npy shapes, the collate guard's list of tensors).

The field of a float image tensor is numeric too: NaN / Inf are `nonfinite`'s (the checks here look at the finite
elements only, as extreme_span does).

All three read one statistic: each channel's min and max over its finite elements, computed once per field and
layout (`memo`) and shared; on the CPU it also gives `nonfinite` its row min and max (the guard runs the image
checks first on a field both read: two passes over the batch for the four checks). As in numeric.py:

  dense   a batch tensor: amin / amax over a [B, C, H*W] view (hwc: [B, H*W, C] on a device, a channels-first
          copy on the CPU). On the CPU the plain reductions run first, only rows holding a NaN / Inf are redone
          with them masked out, and the small per-sample arithmetic runs in numpy; on a device the masked
          reductions run at once: no host read.
  generic ragged samples (the collate guard, the audit): segment min / max over (sample, channel) segments. It
          reads the largest channel count back to the host: CPU callers only (the guard's device path is dense).

A sample whose dims are unknown or not 3 (or do not match its element count) counts as one channel.
"""
from __future__ import annotations

import math

import numpy as np

from dataaudit.checks.base import CheckOutput, SettingError, register
from dataaudit.extras import LazyModule
from dataaudit.tensors import (
    NumericField,
    element_position,
    has_memo,
    host_np,
    host_path,
    memo,
    seg_lengths,
    seg_max,
    seg_min,
    uniform_shape,
)

torch = LazyModule("torch", globals())   # imported on first use: the audit of text never loads it


__all__ = ["image_constant", "image_value_range", "image_channels", "VALUE_RANGES", "LAYOUTS"]

LAYOUTS = ("chw", "hwc")
# The value range of each normalization, inclusive:
#   normalized  mean/std-normalized floats. ImageNet statistics give [-2.12, 2.64], CLIP's [-1.79, 2.15], 0.5/0.5
#               [-1, 1]; even a std of 0.05 stays within 10. Pixels left in 0..255 (uint8 values, or normalized
#               without the / 255) reach far beyond: any image whose brightest pixel is above 10/255.
#   unit        floats in [0, 1], with a 0.1 margin for the overshoot of bicubic / antialiased resizing.
#   uint8       0..255, exact (integer pixels: a resize of uint8 data clamps): normalized floats (negative) or
#               16-bit values are out.
VALUE_RANGES = {"normalized": (-10.0, 10.0), "unit": (-0.1, 1.1), "uint8": (0.0, 255.0)}


def _resolve_data(data: dict, folder) -> None:
    """[data] image_layout: how image tensors are laid out, "chw" (default) or "hwc" (channels last)."""
    if "image_layout" in data and data["image_layout"] not in LAYOUTS:
        raise SettingError(f"[data] image_layout must be one of {', '.join(LAYOUTS)}, got {data['image_layout']!r}")


def _layout(layout: str) -> bool:
    """True for channels first."""
    if layout not in LAYOUTS:
        raise ValueError(f"image checks: unknown layout {layout!r}; use one of {', '.join(LAYOUTS)}")
    return layout == "chw"


def _finite(v: torch.Tensor) -> torch.Tensor | None:
    return v.abs() < math.inf if v.is_floating_point() else None


def _masked_extremes(x3: torch.Tensor, red: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-channel (min, max) over the finite elements of a [B, C, N] / [B, N, C] float view: each NaN / Inf
    read as the reduction's neutral value (two kernels each)."""
    inf = math.inf
    return (torch.nan_to_num(x3, nan=inf, posinf=inf, neginf=inf).amin(red),
            torch.nan_to_num(x3, nan=-inf, posinf=-inf, neginf=-inf).amax(red))


def _channels_first(field: NumericField, dims: tuple, chw: bool) -> tuple[torch.Tensor, int]:
    """The batch as [B, C, H*W] and the dim to reduce. Channels last: [B, H*W, C] on a device (reduced along
    dim 1); on the CPU a channels-first copy (torch reduces a strided middle dim many times slower)."""
    b = field.num_samples
    if chw:
        return field.values.reshape(b, dims[0], -1), 2
    x3 = field.values.reshape(b, -1, dims[2])
    return (x3.transpose(1, 2).contiguous(), 2) if _on_host(field) else (x3, 1)


def _dense(field: NumericField, dims: tuple, chw: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """A device batch: per-channel (min, max) over the finite elements, masked at once (no host read)."""
    x3, red = _channels_first(field, dims, chw)
    if not x3.is_floating_point():
        return x3.amin(red), x3.amax(red)
    return _masked_extremes(x3, red)


def _dense_cpu(field: NumericField, dims: tuple, chw: bool) -> tuple[np.ndarray, np.ndarray]:
    """A CPU batch: per-channel (min, max) as float64 numpy [B, C]. The plain reductions first (NaN propagates into
    its channel's min and max, +-Inf into one); only rows holding a NaN / Inf are redone without them."""
    x3, red = _channels_first(field, dims, chw)
    cmin_t, cmax_t = x3.amin(red), x3.amax(red)
    cmin, cmax = host_np(cmin_t).astype(np.float64), host_np(cmax_t).astype(np.float64)
    if not x3.is_floating_point():
        return cmin, cmax
    if not has_memo(field, "row_amin"):  # the exact row min / max (NaN propagates): nonfinite reads them
        memo(field, "row_amin", lambda: cmin_t.amin(1))
        memo(field, "row_amax", lambda: cmax_t.amax(1))
    bad = ~(np.isfinite(cmin).all(1) & np.isfinite(cmax).all(1))
    if np.count_nonzero(bad):
        idx = np.flatnonzero(bad)
        lo, hi = _masked_extremes(x3.index_select(0, torch.from_numpy(idx)), red)
        cmin[idx], cmax[idx] = host_np(lo), host_np(hi)
    return cmin, cmax


def _generic(field: NumericField, chw: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """Ragged samples: per-channel (min, max) over the finite elements by segment reductions, [B, C max]."""
    b = field.num_samples
    lens = seg_lengths(field)
    shape = field.shape
    if shape is not None and shape.dim() == 2 and shape.shape[1] == 3:
        ch = shape[:, 0] if chw else shape[:, 2]
        ok = (shape >= 0).all(1) & (shape.prod(1) == lens) & (ch > 0)
    else:
        ch, ok = torch.ones_like(lens), torch.zeros_like(lens, dtype=torch.bool)
    ch = torch.where(ok, ch, torch.ones_like(lens))
    # chw: the channel of an element is its position // (H * W); hwc: its position % C
    block = torch.where(ok, lens // ch, lens.clamp(min=1)) if chw else ch
    width = max(int(ch.max()), 1) if b else 1  # the one host read: CPU callers only
    pos = element_position(field)
    s = field.sample
    chan = pos // block.index_select(0, s) if chw else pos % block.index_select(0, s)
    segs = NumericField(values=field.values, sample=s * width + chan, num_samples=b * width,
                        dtypes=torch.zeros(b * width, dtype=torch.int8, device=field.device), valid=field.valid)
    fin = _finite(field.values)
    return seg_min(segs, where=fin).view(b, width), seg_max(segs, where=fin).view(b, width)


def _stats_np(cmin: np.ndarray, cmax: np.ndarray) -> dict:
    lo, hi = cmin.min(1), cmax.max(1)
    if np.count_nonzero(cmax >= cmin) == cmin.size:  # every channel has a finite element (the usual case)
        return {"lo": lo, "hi": hi, "has": np.ones(lo.shape, bool), "span": (cmax - cmin).max(1),
                "absmax": np.maximum(-lo, hi)}   # == max(|lo|, |hi|) as lo <= hi
    has_ch = cmax >= cmin  # a channel without finite elements keeps the neutral values (min > max)
    has = has_ch.any(1)
    return {"lo": lo, "hi": hi, "has": has, "span": np.where(has_ch, cmax - cmin, 0.0).max(1),
            "absmax": np.where(has, np.maximum(np.abs(lo), np.abs(hi)), 0.0)}


def _stats_torch(cmin: torch.Tensor, cmax: torch.Tensor) -> dict:
    cmin, cmax = cmin.to(torch.float64), cmax.to(torch.float64)
    zero = 0.0   # a Python scalar: no fill kernel
    has_ch = cmax >= cmin
    lo, hi, has = cmin.amin(1), cmax.amax(1), has_ch.any(1)
    return {"lo": lo, "hi": hi, "has": has, "span": torch.where(has_ch, cmax - cmin, zero).amax(1),
            "absmax": torch.where(has, torch.maximum(-lo, hi), zero)}   # == max(|lo|, |hi|) as lo <= hi


def _on_host(field: NumericField) -> bool:
    """Whether the CPU fast path applies (tests turn it off to run the device path on CPU tensors)."""
    return host_path(field.values)


def _extremes(field: NumericField, layout: str) -> dict:
    """Per sample, over its finite elements: lo / hi (float64 min / max), absmax (the larger |lo|, |hi|), span
    (float64: the largest max - min of a channel) and has (bool: at least one finite element). numpy arrays on
    the CPU (small per-sample arithmetic is cheaper there), torch tensors on the field's device otherwise. Once
    per field and layout."""
    chw = _layout(layout)

    def compute():
        dims = uniform_shape(field)
        if dims is not None and len(dims) == 3 and field.valid is None and field.num_samples and math.prod(dims):
            if _on_host(field):
                return _stats_np(*_dense_cpu(field, dims, chw))
            return _stats_torch(*_dense(field, dims, chw))
        cmin, cmax = _generic(field, chw)
        if host_path(cmin):
            return _stats_np(host_np(cmin).astype(np.float64), host_np(cmax).astype(np.float64))
        return _stats_torch(cmin, cmax)

    return memo(field, "image_extremes_" + layout, compute)


def _out(flagged, value, detail=None) -> CheckOutput:
    """numpy (the CPU statistics) or torch per-sample results as the check's output tensors."""
    if isinstance(flagged, np.ndarray):
        return CheckOutput(torch.from_numpy(flagged), torch.from_numpy(value), detail)
    return CheckOutput(flagged=flagged.to(torch.bool), value=value.to(torch.float64), detail=detail)


# Guard default: shares its statistic (a min and a max per channel) with image_value_range and nonfinite.
@register("image_constant", target="image_tensor", severity="warning", guard_default=8,
          params={"max_span": 1e-6, "layout": "chw"}, data={"image_layout": "layout"},
          detail="every channel holds one value (largest channel span {value:.3g} <= {max_span:g})",
          description="Every channel of the image holds one value, over its finite elements (max - min of each "
                      "channel <= max_span): a blank, black or solid-color image; per channel, so that a blank "
                      "image normalized per channel still counts. value = the largest channel span.")
def image_constant(field: NumericField, max_span: float = 1e-6, layout: str = "chw") -> CheckOutput:
    e = _extremes(field, layout)
    return _out(e["has"] & (e["span"] <= max_span), e["span"])


@register("image_value_range", target="image_tensor", severity="error", guard_default=9,
          params={"expected": "normalized", "min": None, "max": None, "layout": "chw"},
          data={"image_layout": "layout"},
          detail="values outside the {expected} range (largest |value| {value:.4g})",
          description="A finite value outside the range of the expected normalization: normalized (mean/std, "
                      "[-10, 10]), unit ([0, 1] +- 0.1) or uint8 ([0, 255]); min / max replace its bounds. "
                      "Catches pixels left in 0..255 where normalized or unit floats are expected. NaN / Inf are "
                      "nonfinite's. value = the largest |value| of the sample.")
def image_value_range(field: NumericField, expected: str = "normalized", min=None, max=None,  # noqa: A002
                      layout: str = "chw") -> CheckOutput:
    if expected not in VALUE_RANGES:
        raise ValueError(f"image_value_range: unknown expected {expected!r}; use one of {', '.join(VALUE_RANGES)}")
    lo_b, hi_b = VALUE_RANGES[expected]
    lo_b, hi_b = float(lo_b if min is None else min), float(hi_b if max is None else max)
    e = _extremes(field, layout)
    return _out(e["has"] & ((e["lo"] < lo_b) | (e["hi"] > hi_b)), e["absmax"])


@register("image_channels", target="image_tensor", severity="error", guard_default=10,
          params={"channels": [1, 3], "layout": "chw"}, data={"image_layout": "layout"},
          resolve_data=_resolve_data,
          detail="{value:.0f} channel(s), expected one of {channels}",
          description="The image's channel count (dim 0, or dim 2 with layout hwc: [data] image_layout) is not "
                      "one of channels: RGBA, a channels-last tensor read as channels-first. A sample that is not "
                      "3-dim is flagged with value -1; null samples are not. value = the channel count.")
def image_channels(field: NumericField, channels=(1, 3), layout: str = "chw") -> CheckOutput:
    chw = _layout(layout)
    allowed = {int(c) for c in channels}
    n = field.num_samples
    dims = uniform_shape(field)
    if dims is not None:  # a batch tensor: one channel count, known on the host (no per-sample work)
        c = (dims[0] if chw else dims[2]) if len(dims) == 3 else -1
        if host_path(field.values):
            return CheckOutput(torch.from_numpy(np.full(n, c not in allowed)), torch.from_numpy(np.full(n, float(c))))
        return CheckOutput(torch.full((n,), c not in allowed, dtype=torch.bool, device=field.device),
                           torch.full((n,), float(c), dtype=torch.float64, device=field.device))
    shape = field.shape
    if shape is None or shape.dim() != 2 or shape.shape[1] != 3:  # dims unknown: nothing to say
        z = torch.zeros(n, dtype=torch.float64, device=field.device)
        return _out(torch.zeros(n, dtype=torch.bool, device=field.device), z)
    c = shape[:, 0] if chw else shape[:, 2]  # -1 where the sample is not 3-dim
    ok = torch.zeros(n, dtype=torch.bool, device=field.device)
    for a in allowed:  # a few scalar compares: no host->device copy
        ok |= c == a
    flagged = ~ok
    if field.present is not None:
        flagged &= field.present
    out = _out(flagged, c)
    if host_path(c):
        out.detail = _ChannelDetail(c.numpy(), list(channels))
    return out


class _ChannelDetail:
    """image_channels' per-sample detail strings (CPU), formatted only for the samples a report reads."""

    def __init__(self, counts: np.ndarray, channels: list):
        self.counts, self.channels = counts, channels

    def __len__(self) -> int:
        return len(self.counts)

    def __getitem__(self, i) -> str:
        if self.counts[i] < 0:
            return "not a 3-dim image tensor"
        return f"{self.counts[i]} channel(s), expected one of {self.channels}"
