"""NumericField / TokenFields from a batch tensor (the training guard's side, any device): views only, no host
sync, and no per-element work without a mask."""
from __future__ import annotations

import math


from dataaudit.extras import LazyModule
from dataaudit.tensors.dtypes import TORCH_DTYPE_CODE, dtype_code, numpy_convertible
from dataaudit.tensors.field import LAZY, Layout, NumericField, TensorField, TokenFields
from dataaudit.tensors.rows import host_path

torch = LazyModule("torch", globals())   # imported on first use: the audit of text never loads it


def _broadcast_mask(mask: torch.Tensor, shape: torch.Size) -> torch.Tensor:
    """Bool mask broadcast over `shape`, aligned on the leading dims (mask [B, T] over x [B, T, D])."""
    if mask.dtype == torch.bool:
        m = mask
    elif host_path(mask) and mask.dtype in numpy_convertible():  # numpy compares small integer tensors several times faster
        m = torch.from_numpy(mask.numpy() != 0)
    else:
        m = mask != 0
    extra = len(shape) - m.dim()
    if extra < 0:
        raise ValueError(f"mask of shape {tuple(mask.shape)} has more dims than the data {tuple(shape)}")
    m = m.reshape(tuple(m.shape) + (1,) * extra)
    return torch.broadcast_to(m, shape)


def from_tensor(x: torch.Tensor, mask: torch.Tensor | None = None) -> NumericField:
    """A NumericField from a batch tensor [B, ...] (a training batch, any device); sample = the row.

    mask: optional, aligned with x's leading dims ([B, T] for x [B, T] or [B, T, D]; broadcastable): nonzero marks
    real elements (attention mask) -> `valid`. No host sync: only views, expand, elementwise ops; no per-element
    work at all without a mask (the sample index is built only if something asks for it).
    Values keep the tensor's dtype (a view when x is contiguous).
    """
    if x.dim() == 0:
        raise ValueError("from_tensor needs a batch tensor [B, ...]")
    shape = x.shape
    b = shape[0]
    per = math.prod(shape[1:])
    values = x.reshape(-1)
    valid = None if mask is None else _broadcast_mask(mask.to(x.device), shape).reshape(-1)
    # sample (arange(b) repeated per times) and dtypes (b times the tensor's code) are built lazily: TensorField.
    # Built straight into __dict__ (what the dataclass __init__, the lazy setters and set_layout would store).
    code = TORCH_DTYPE_CODE.get(x.dtype)
    field = TensorField.__new__(TensorField)
    d = field.__dict__
    d["values"], d["_sample"], d["num_samples"], d["_dtypes"], d["valid"], d["present"] = (
        values, None, b, None, valid, None)
    d["_dtype_code"] = code if code is not None else dtype_code(x.dtype)
    d["_shape"], d["_dims"] = None, tuple(shape[1:])   # per-sample dims: `uniform_shape`, or .shape on demand
    d["_layout"] = Layout(LAZY, b, "dense", per, None)
    if len(shape) == 2 and host_path(x) and x.is_contiguous():
        d["_rows"] = (values, x)  # dense_rows: x itself is the [B, per] matrix (no second view per batch)
    return field


def tokens_from_tensor(ids: torch.Tensor, mask: torch.Tensor | None = None) -> TokenFields:
    """TokenFields of a padded batch: ids [B, T] and attention mask [B, T]. ids.valid = mask != 0. A mask whose
    shape does not fit the ids (e.g. longer) is kept as is, leaving ids.valid unset; mask_mismatch flags it."""
    if mask is None:
        return TokenFields(ids=from_tensor(ids))
    fits = mask.dim() <= ids.dim() and tuple(mask.shape) == tuple(ids.shape[:mask.dim()])
    return TokenFields(ids=from_tensor(ids, mask if fits else None), mask=from_tensor(mask))
