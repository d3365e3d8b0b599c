"""Checks on class labels (target "label", a NumericField) and token ids + attention mask (target "tokens",
a TokenFields).

Same contract as numeric.py: torch tensors on the field's device, flagged bool [B], value float64 [B], no
Python loop over samples, no host sync. For tokens, "real" tokens are the ids with valid == True
(tokens_from_tensor / tokens_from_arrow set valid from the attention mask, mask != 0; a TokenFields built by hand
with ids.valid unset gets it from its mask the same way); a mask value other than 0/1 is reported by
mask_mismatch.
"""
from __future__ import annotations

import math

import numpy as np

from dataaudit.checks.base import CheckOutput, register
from dataaudit.checks.numeric import below
from dataaudit.extras import LazyModule
from dataaudit.tensors import (
    NumericField,
    TokenFields,
    aligned_index,
    dense_rows,
    dense_view,
    host_path,
    memo,
    same_dense_layout,
    seg_any,
    seg_count,
    seg_lengths,
    seg_max,
    seg_min,
    valid_from_mask,
    with_valid,
)
from dataaudit.tensors.dtypes import numpy_convertible

torch = LazyModule("torch", globals())   # imported on first use: the audit of text never loads it

_I64_MIN, _I64_MAX = -(2 ** 63), 2 ** 63 - 1

__all__ = ["label_out_of_range", "token_id_out_of_range", "too_long", "all_padding", "mask_mismatch"]


def _out(flagged: torch.Tensor, value: torch.Tensor) -> CheckOutput:
    return CheckOutput(flagged=flagged.to(torch.bool), value=value.to(torch.float64))


def _int64(scalar) -> int | None:
    """The scalar as the int64 an integer element can equal, or None when none can (a fraction, out of range)."""
    if float(scalar) != math.floor(float(scalar)) or not -(2 ** 63) <= scalar < 2 ** 63:
        return None
    return int(scalar)


def _eq(v: torch.Tensor, scalar) -> torch.Tensor:
    """Elementwise v == scalar, exact for integer values of any width (no wrap-around of the scalar)."""
    if v.is_floating_point():
        return v == scalar
    s = _int64(scalar)
    if s is None:
        return torch.zeros_like(v, dtype=torch.bool)
    return v.to(torch.int64) == s


def _real_ids(tokens: TokenFields) -> NumericField:
    """The ids with `valid` marking real tokens: as given, or (TokenFields built by hand from Arrow columns,
    ids.valid unset) derived from the mask so the ragged and padded forms agree."""
    ids = tokens.ids
    if ids.valid is not None or tokens.mask is None:
        return ids
    return with_valid(ids, valid_from_mask(ids, tokens.mask))


def _class_range(field: NumericField, upper: int, ignore=None) -> CheckOutput:
    """Flag samples with an element outside [0, upper) or non-finite (elements == ignore skipped).

    value: the largest offending element if one is >= upper (+inf included), else the smallest if one is < 0,
    else NaN if one is NaN; for an unflagged sample its largest element (0 if it has none)."""
    v = field.values
    if not v.is_floating_point() and abs(upper) < 2 ** 62:
        x2 = dense_view(field, allow_valid=True)
        if x2 is not None:
            if host_path(x2) and x2.dtype in numpy_convertible():
                return _class_range_rows(field, x2, upper, ignore)
            return _class_range_dense(field, x2, upper, ignore)
    where = None if ignore is None else ~_eq(v, ignore)
    if v.is_floating_point():
        isnan = torch.isnan(v)
        num = ~isnan if where is None else where & ~isnan
        any_nan = seg_any(field, isnan if where is None else where & isnan)
    else:
        num = where
        any_nan = torch.zeros(field.num_samples, dtype=torch.bool, device=field.device)
    n = seg_count(field, num)
    mx = seg_max(field, v, num)
    mn = seg_min(field, v, num)
    # Compare on per-sample extremes; `above`/`below` keep integer comparisons exact.
    too_big = (n > 0) & ~below(mx, upper)          # mx >= upper
    too_small = (n > 0) & below(mn, 0)
    mxf, mnf = mx.to(torch.float64), mn.to(torch.float64)
    nan = torch.full_like(mxf, math.nan)
    fine = torch.where(n > 0, mxf, torch.zeros_like(mxf))
    value = torch.where(too_big, mxf, torch.where(too_small, mnf, torch.where(any_nan, nan, fine)))
    return _out(too_big | too_small | any_nan, value)


def _kept(x, ignore, valid):
    """The elements a range check counts (not == ignore, and valid) as a bool array shaped like x (int64 numpy or
    torch), or None for all of them."""
    ig = None if ignore is None else _int64(ignore)
    keep = None if ig is None else x != ig   # an ignore no integer equals keeps every element (as _eq)
    if valid is not None:
        vm = valid.reshape(x.shape) if isinstance(x, torch.Tensor) else valid.numpy().reshape(x.shape)
        keep = vm if keep is None else keep & vm
    return keep


def _class_range_dense(field: NumericField, x2: torch.Tensor, upper: int, ignore) -> CheckOutput:
    """_class_range_rows in torch, on any device and with no host read: the same row rules in about half the
    kernels of the generic segment path (what a GPU batch of labels or token ids costs)."""
    x = x2 if x2.dtype == torch.int64 else x2.to(torch.int64)   # exact comparisons with any Python int
    keep = _kept(x, ignore, field.valid)
    if keep is None:
        mx, mn = x.amax(1), x.amin(1)
        too_big, too_small = mx >= upper, mn < 0
        value = torch.where(too_big, mx, torch.where(too_small, mn, mx))
    elif upper > 0:
        # Elements not kept read as 0, a value in range: they flag nothing, and a row without kept elements gets
        # max 0, the value the rules give it. Five kernels fewer than the masked extremes below.
        y = torch.where(keep, x, 0)
        mx, mn = y.amax(1), y.amin(1)
        too_big, too_small = mx >= upper, mn < 0
        value = torch.where(too_big, mx, torch.where(too_small, mn, mx))
    else:
        mx = torch.where(keep, x, _I64_MIN).amax(1)
        mn = torch.where(keep, x, _I64_MAX).amin(1)
        has = keep.any(1)
        too_big, too_small = has & (mx >= upper), has & (mn < 0)
        value = torch.where(too_big, mx, torch.where(too_small, mn, torch.where(has, mx, 0)))
    return CheckOutput(flagged=too_big | too_small, value=value.to(torch.float64))


def _class_range_rows(field: NumericField, x2: torch.Tensor, upper: int, ignore) -> CheckOutput:
    """CPU fast path of _class_range for an integer dense field (valid mask allowed): row max / min / count of
    the kept elements in numpy, then the same per-sample rules, exactly (int64 throughout)."""
    a = x2.numpy()
    if a.dtype != np.int64:
        a = a.astype(np.int64)
    keep = _kept(a, ignore, field.valid)
    if keep is None:
        mx = a.max(1)
        has = np.full(a.shape[0], a.shape[1] > 0)
    else:  # masked reductions without a temporary copy
        mx = np.max(a, axis=1, where=keep, initial=_I64_MIN)
        has = keep.any(1)
    too_big = has & (mx >= upper)
    if a.min() >= 0:  # nothing negative anywhere (padding included): no row is too small
        mn, too_small = mx, np.zeros(a.shape[0], dtype=bool)
    else:
        mn = a.min(1) if keep is None else np.min(a, axis=1, where=keep, initial=_I64_MAX)
        too_small = has & (mn < 0)
    value = np.where(too_big, mx, np.where(too_small, mn, np.where(has, mx, 0))).astype(np.float64)
    return CheckOutput(flagged=torch.from_numpy(too_big | too_small), value=torch.from_numpy(value))


# Guard default: a class index past the head is a device-side assert in cross_entropy on CUDA.
@register("label_out_of_range", target="label", severity="error", params={"num_classes": None,
                                                                           "ignore_index": -100},
          required=("num_classes",), data={"num_classes": "num_classes"}, guard_default=4,
          detail="label {value:g} outside [0, {num_classes})",
          description="A class label (other than ignore_index) is negative, >= num_classes, or not finite (NaN). "
                      "value = the worst offending label: the largest if one is >= num_classes, else the "
                      "smallest, else NaN.")
def label_out_of_range(field: NumericField, num_classes: int, ignore_index=-100) -> CheckOutput:
    return _class_range(field, int(num_classes), ignore_index)


# Guard default: an id past the embedding table is a device-side assert.
@register("token_id_out_of_range", target="tokens", severity="error", params={"vocab_size": None},
          required=("vocab_size",), data={"vocab_size": "vocab_size"}, guard_default=5,
          detail="token id {value:g} outside [0, {vocab_size})",
          description="A real token id is negative or >= vocab_size (wrong tokenizer, overflowed dtype): an "
                      "embedding lookup out of bounds. value = the worst offending id (largest if one is >= "
                      "vocab_size, else the smallest).")
def token_id_out_of_range(tokens: TokenFields, vocab_size: int) -> CheckOutput:
    return _class_range(_real_ids(tokens), int(vocab_size))


def _mask_count(mask: NumericField) -> torch.Tensor:
    """mask != 0 count per sample (shared by too_long and all_padding through the field's memo)."""
    def count():
        m2 = _np_rows(mask)
        if m2 is not None:  # CPU fast path: numpy counts nonzeros at memory speed
            return torch.from_numpy(np.count_nonzero(m2, axis=1).astype(np.int64))
        return seg_count(mask, mask.values != 0)
    return memo(mask, "nonzero_count", count)


def _np_rows(field: NumericField, allow_valid: bool = False) -> np.ndarray | None:
    """CPU fast path: the dense field's [B, per] values as a numpy view (see `dataaudit.tensors.dense_rows`)."""
    x2 = dense_rows(field, allow_valid)
    if x2 is None or x2.dtype not in numpy_convertible():
        return None
    return x2.numpy()


def _eq_np(a: np.ndarray, scalar) -> np.ndarray:
    """numpy twin of _eq for the CPU fast paths: exact for integers of any width."""
    if a.dtype.kind == "f":
        return a == scalar
    s = _int64(scalar)
    if s is None:
        return np.zeros(a.shape, dtype=bool)
    return (a if a.dtype == np.int64 else a.astype(np.int64)) == s


def _real_count(tokens: TokenFields) -> torch.Tensor:
    """Real tokens per sample: mask != 0 count when there is a mask, else the valid ids."""
    if tokens.mask is not None:
        return _mask_count(tokens.mask)
    return seg_count(_real_ids(tokens))


# Guard default: shares all_padding's per-row mask count.
@register("too_long", target="tokens", severity="warning", params={"context_length": None},
          required=("context_length",), data={"context_length": "context_length"}, guard_default=7,
          detail="{value:.0f} tokens > context length {context_length}",
          description="More real tokens than the context length (they would be truncated silently). value = the "
                      "number of real tokens (mask count when there is a mask, else the sequence length).")
def too_long(tokens: TokenFields, context_length: int) -> CheckOutput:
    n = _real_count(tokens)
    return _out(n > int(context_length), n)


# Guard default: a sequence with no real token makes a NaN attention softmax or an empty loss.
@register("all_padding", target="tokens", severity="warning", params={"pad_id": None}, data={"pad_id": "pad_id"},
          guard_default=6,
          detail="no real token (length {value:.0f})",
          description="The sequence has no real token: it is empty, every id is pad_id, or its attention mask is "
                      "all zero. value = the sequence length (valid ids). Null (missing) rows are not flagged.")
def all_padding(tokens: TokenFields, pad_id=None) -> CheckOutput:
    ids = _real_ids(tokens)
    length = seg_count(ids)
    a = None if pad_id is None else _np_rows(ids, allow_valid=True)
    if a is not None:  # CPU fast path: "no real non-pad token" as one numpy any() per row
        real = ~_eq_np(a, pad_id)
        if ids.valid is not None:
            real &= ids.valid.numpy().reshape(a.shape)
        flagged = torch.from_numpy(~real.any(1))
    elif pad_id is None:
        flagged = length == 0
    else:
        flagged = seg_count(ids, ~_eq(ids.values, pad_id)) == 0
    if tokens.mask is not None:
        flagged = flagged | (_mask_count(tokens.mask) == 0)
    if ids.present is not None:
        flagged = flagged & ids.present
    return _out(flagged, length)


# Guard opt-in: an elementwise pass over the ids and the mask.
@register("mask_mismatch", target="tokens", severity="warning", params={"pad_id": None, "pad_in_content_ok": False},
          data={"pad_id": "pad_id"},
          detail="{value:.0f} position(s) where the attention mask and the padding disagree (-1: the mask's "
                 "length differs from the ids')",
          description="The attention mask disagrees with the ids: its length differs (value -1), it holds values "
                      "other than 0/1, it is 0 on a non-pad token or 1 on a pad token (pad_id known; the latter "
                      "allowed with pad_in_content_ok, for tokenizers whose pad is eos). value = the number of "
                      "disagreeing positions. No mask: nothing flagged.")
def mask_mismatch(tokens: TokenFields, pad_id=None, pad_in_content_ok: bool = False) -> CheckOutput:
    ids, mask = with_valid(tokens.ids, None), tokens.mask
    b = ids.num_samples
    if mask is None:
        z = torch.zeros(b, dtype=torch.float64, device=ids.device)
        return _out(torch.zeros(b, dtype=torch.bool, device=ids.device), z)
    mask = with_valid(mask, None)
    if same_dense_layout(ids, mask):
        a, mv2 = _np_rows(ids), _np_rows(mask)
        if a is not None and mv2 is not None:
            return _mask_mismatch_rows(a, mv2, pad_id, pad_in_content_ok)
    len_bad = seg_lengths(ids) != seg_lengths(mask)
    mv = mask.values
    m0, m1 = mv == 0, mv == 1
    disagree = ~(m0 | m1)  # values other than 0/1 (NaN included)
    if pad_id is not None and ids.values.shape[0] > 0 and mv.shape[0] > 0:
        if same_dense_layout(ids, mask):  # a padded batch: element i of the mask is element i of the ids
            tok, same = ids.values, None
        else:
            idx, same = aligned_index(ids, mask)
            tok = ids.values.index_select(0, idx)
        is_pad = _eq(tok, pad_id)
        wrong = m0 & ~is_pad
        if not pad_in_content_ok:
            wrong = wrong | (m1 & is_pad)
        disagree = disagree | (wrong if same is None else same & wrong)
    n = seg_count(mask, disagree)
    flagged = len_bad | (n > 0)
    value = torch.where(len_bad, torch.full_like(n, -1), n)
    return _out(flagged, value)


def _mask_mismatch_rows(a: np.ndarray, mv: np.ndarray, pad_id, pad_in_content_ok: bool) -> CheckOutput:
    """CPU fast path of mask_mismatch for a padded batch (ids and mask of the same shape): the same rules in
    numpy, element i of the mask against element i of the ids."""
    m0, m1 = mv == 0, mv == 1
    disagree = ~(m0 | m1)  # values other than 0/1 (NaN included)
    if pad_id is not None:
        is_pad = _eq_np(a, pad_id)
        disagree |= m0 & ~is_pad
        if not pad_in_content_ok:
            disagree |= m1 & is_pad
    n = np.count_nonzero(disagree, axis=1)
    return CheckOutput(flagged=torch.from_numpy(n > 0), value=torch.from_numpy(n.astype(np.float64)))
