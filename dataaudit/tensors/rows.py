"""Reduce once, read by many checks.

`memo(field, key, fn)` caches a per-sample reduction on the field (keyed by the identity of its values and
valid tensors, so replacing either drops the cache), so checks that need the same statistic share one pass:
on a dense float field nonfinite, extreme_span and out_of_range together read the data twice (row min and
row max) instead of once or more per check. It works on every device (it only keeps tensors).

`dense_rows(field)` is the CPU fast path's entry: the [B, per] matrix of a dense CPU field. On the CPU a
check may read small per-sample results back (there is no device to stall) and branch on them, e.g. redo
the exact, generic computation only for the few rows a cheap row reduction marks as suspect. On any other
device it returns None and the checks keep the sync-free paths: the generic segment reductions
(reductions.py), or, where a check has one, a torch row reduction over `dense_view(field)` (the same [B, per]
view on any device; the label and token range checks use it).
"""
from __future__ import annotations

import numpy as np

from dataaudit.extras import LazyModule
from dataaudit.tensors.field import NumericField, layout_of

torch = LazyModule("torch", globals())   # imported on first use: the audit of text never loads it


def memo(field: NumericField, key: str, fn):
    """fn() computed once per field (and per values/valid tensors) under `key`."""
    m = field.__dict__.get("_memo")
    if m is None or m["_values"] is not field.values or m["_valid"] is not field.valid:
        m = {"_values": field.values, "_valid": field.valid}
        field.__dict__["_memo"] = m
    if key not in m:
        m[key] = fn()
    return m[key]


def has_memo(field: NumericField, key: str) -> bool:
    m = field.__dict__.get("_memo")
    return m is not None and m["_values"] is field.values and m["_valid"] is field.valid and key in m


def dense_rows(field: NumericField, allow_valid: bool = False) -> torch.Tensor | None:
    """The values as a [B, per] matrix when the CPU fast path applies: CPU, dense layout, per > 0 and (unless
    allow_valid) no `valid` mask. None otherwise."""
    if not host_path(field.values):
        return None
    return dense_view(field, allow_valid)


def dense_view(field: NumericField, allow_valid: bool = False) -> torch.Tensor | None:
    """dense_rows on any device: the [B, per] view of a field whose layout is dense from construction (a
    from_tensor batch tensor), for row reductions in torch where the generic segment path would take several
    kernels per statistic. None otherwise. Reads nothing back."""
    v = field.values
    if field.num_samples == 0 or (field.valid is not None and not allow_valid):
        return None
    lay = layout_of(field)
    if lay.kind != "dense" or lay.per == 0:
        return None
    r = field.__dict__.get("_rows")
    if r is not None and r[0] is v:  # from_tensor of a contiguous 2-D tensor: that tensor
        return r[1]
    return v.view(field.num_samples, lay.per) if v.is_contiguous() else v.reshape(field.num_samples, lay.per)


def row_reduce(field: NumericField, op: str, x2: torch.Tensor | None = None) -> torch.Tensor:
    """Cached row reduction ("amin", "amax" or "sum", in the values' dtype) of a `dense_rows` field (x2: its
    dense_rows, when the caller has it), over all elements: NaN propagates into min, max and sum, +-Inf into the
    extreme they are."""
    key = "row_" + op
    d = field.__dict__
    m = d.get("_memo")
    if m is None or m["_values"] is not field.values or m["_valid"] is not field.valid:
        m = d["_memo"] = {"_values": field.values, "_valid": field.valid}
    else:
        r = m.get(key)
        if r is not None:
            return r
    r = m[key] = getattr(dense_rows(field) if x2 is None else x2, op)(1)
    return r


def host_path(t: torch.Tensor) -> bool:
    """Whether a CPU fast path (numpy, host reads) may run on `t`: it is in host memory and torch.compile is not
    tracing (a numpy call or a host read would break the compiled graph; the device path is what compiles)."""
    return t.is_cpu and not torch.compiler.is_compiling()


def host_np(t: torch.Tensor) -> np.ndarray:
    """Numpy view of a small CPU tensor (float16 / bfloat16 widened to float32, exactly)."""
    if t.dtype in (torch.float16, torch.bfloat16):
        t = t.float()
    return t.numpy()


def same_dense_layout(a: NumericField, b: NumericField) -> bool:
    """Both fields dense with the same number of samples and elements per sample (element i of one is element
    i of the other): a padded ids tensor and its attention mask. Known from construction, on every device."""
    la, lb = layout_of(a), layout_of(b)
    return (la.kind == "dense" and lb.kind == "dense" and la.per == lb.per
            and a.num_samples == b.num_samples)


def uniform_dtype_code(field: NumericField) -> int | None:
    """The storage dtype code every sample shares when that is known without reading `dtypes` (a from_tensor
    field whose per-sample codes were never replaced), else None."""
    d = field.__dict__
    if "_dtype_code" in d and d.get("_dtypes") is None:
        return d["_dtype_code"]
    return None


def uniform_shape(field: NumericField) -> tuple[int, ...] | None:
    """The dims every sample shares when that is known without reading `shape` (a from_tensor field), else None."""
    return field.__dict__.get("_dims")
