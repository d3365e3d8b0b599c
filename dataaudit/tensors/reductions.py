"""One representation for numeric data in both worlds.

Ragged Arrow lists, fixed-shape tensors and padded+masked training batches all become a flat vector of
element values plus, for each element, the index of the sample it belongs to (and optionally whether it is a
real element or padding). Checks reduce over samples with `scatter_reduce`, so one torch implementation serves
the CPU audit and the GPU guard.
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import torch

# Storage dtypes are carried as small integer codes so a per-sample dtype (WebDataset .npy members may
# differ from sample to sample) lives in a tensor like everything else.
DTYPE_NAMES: tuple[str, ...] = (
    "bool", "uint8", "int8", "int16", "int32", "int64", "uint16", "uint32", "uint64",
    "float16", "bfloat16", "float32", "float64", "other",
)
DTYPE_CODE = {name: i for i, name in enumerate(DTYPE_NAMES)}
INTEGER_DTYPES = frozenset({"uint8", "int8", "int16", "int32", "int64", "uint16", "uint32", "uint64"})
FLOAT_DTYPES = frozenset({"float16", "bfloat16", "float32", "float64"})


@dataclass
class NumericField:
    """A numeric field of a batch of `num_samples` samples.

    values:  1-D tensor of every element of every sample (float or integer dtype).
    sample:  1-D int64 tensor, same length: the sample each element belongs to (0 <= sample < num_samples).
    valid:   optional 1-D bool tensor, same length: False marks padding that checks must ignore.
    dtypes:  1-D int8 tensor [num_samples]: storage dtype code per sample (index into DTYPE_NAMES).
    present: optional 1-D bool tensor [num_samples]: False where the sample has no value (null / missing).
    """

    values: torch.Tensor
    sample: torch.Tensor
    num_samples: int
    dtypes: torch.Tensor
    valid: torch.Tensor | None = None
    present: torch.Tensor | None = None

    @property
    def device(self) -> torch.device:
        return self.values.device


class _TensorField(NumericField):
    """What `from_tensor` returns: a NumericField whose per-element `sample` index (and per-sample `dtypes`, all
    the same code) are built only when something reads them. The dense layout (reshape to [B, per]) never needs
    the index, so wrapping a training batch costs no per-element work; `field.sample` and `field.dtypes` still
    give the full tensors on demand (it is an ordinary NumericField)."""

    @property
    def dtypes(self) -> torch.Tensor:
        d = self.__dict__.get("_dtypes")
        if d is None:
            d = torch.full((self.num_samples,), self.__dict__["_dtype_code"], dtype=torch.int8,
                           device=self.values.device)
            self.__dict__["_dtypes"] = d
        return d

    @dtypes.setter
    def dtypes(self, value) -> None:
        self.__dict__["_dtypes"] = value

    @property
    def sample(self) -> torch.Tensor:
        s = self.__dict__.get("_sample")
        if s is None:
            b = self.num_samples
            per = self.values.shape[0] // b if b else 0
            s = torch.arange(b, device=self.values.device).unsqueeze(1).expand(b, per).reshape(-1)
            self.__dict__["_sample"] = s
            lay = self.__dict__.get("_layout")
            if lay is not None and lay.sample is _LAZY:
                lay.sample = s
        return s

    @sample.setter
    def sample(self, value) -> None:
        self.__dict__["_sample"] = value


_LAZY = object()  # stands for a _TensorField's sample index that has not been built yet


def _sample_ref(field: NumericField):
    """The field's sample tensor, or _LAZY for a _TensorField that has not built it (without building it)."""
    if "_sample" in field.__dict__:
        s = field.__dict__["_sample"]
        return _LAZY if s is None else s
    return field.sample


def _replace(field: NumericField, **changes) -> NumericField:
    """A copy of the field with some attributes changed; keeps a lazy sample index lazy."""
    lazy = isinstance(field, _TensorField)
    kw = dict(values=field.values, sample=field.__dict__["_sample"] if lazy else field.sample,
              num_samples=field.num_samples, dtypes=field.__dict__.get("_dtypes") if lazy else field.dtypes,
              valid=field.valid, present=field.present)
    kw.update(changes)
    out = type(field)(**kw)
    if lazy:
        out.__dict__["_dtype_code"] = field.__dict__["_dtype_code"]
    return out


@dataclass
class TokenFields:
    """Token ids of a batch and, when the data has one, its attention mask (same element layout)."""

    ids: NumericField
    mask: NumericField | None = None


# ---------------------------------------------------------------------------------------------------------
# Layout invariant of every field built here: elements are grouped by sample in ascending sample order
# (sample is non-decreasing). Segment reductions do not need it; `element_position` / `aligned_index` do.
# ---------------------------------------------------------------------------------------------------------

_TORCH_DTYPE_NAME = {
    torch.bool: "bool", torch.uint8: "uint8", torch.int8: "int8", torch.int16: "int16", torch.int32: "int32",
    torch.int64: "int64", torch.float16: "float16", torch.bfloat16: "bfloat16", torch.float32: "float32",
    torch.float64: "float64",
}
for _n in ("uint16", "uint32", "uint64"):
    if hasattr(torch, _n):
        _TORCH_DTYPE_NAME[getattr(torch, _n)] = _n

_TORCH_DTYPE_CODE = {t: DTYPE_CODE[n] for t, n in _TORCH_DTYPE_NAME.items()}  # from_tensor's lookup

_ARROW_DTYPE_NAME = {
    pa.bool_(): "bool", pa.uint8(): "uint8", pa.int8(): "int8", pa.int16(): "int16", pa.int32(): "int32",
    pa.int64(): "int64", pa.uint16(): "uint16", pa.uint32(): "uint32", pa.uint64(): "uint64",
    pa.float16(): "float16", pa.float32(): "float32", pa.float64(): "float64",
}

_INT64_MAX = 2 ** 63 - 1
# torch dtypes whose CPU tensors convert to numpy without a copy (CPU fast paths use numpy for small kernels)
_NUMPY_OK = frozenset({torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.float16,
                       torch.float32, torch.float64})


def dtype_name(code) -> str:
    """Name of a dtype code (an int, or a 0-d tensor / numpy scalar); "other" for anything unknown."""
    code = int(code)
    return DTYPE_NAMES[code] if 0 <= code < len(DTYPE_NAMES) else "other"


def dtype_code(name) -> int:
    """Code of a dtype given by name ("float32", "<f4", "float", "bfloat16"), torch dtype, numpy dtype or Arrow
    type. Unknown or unparseable -> the code of "other"."""
    if isinstance(name, torch.dtype):
        return DTYPE_CODE[_TORCH_DTYPE_NAME.get(name, "other")]
    if isinstance(name, pa.DataType):
        return DTYPE_CODE[_ARROW_DTYPE_NAME.get(name, "other")]
    if isinstance(name, str) and name in DTYPE_CODE:
        return DTYPE_CODE[name]
    try:
        return DTYPE_CODE.get(np.dtype(name).name, DTYPE_CODE["other"])
    except (TypeError, ValueError):
        return DTYPE_CODE["other"]


def _from_numpy(a: np.ndarray) -> torch.Tensor:
    # Arrow buffers are immutable, so zero-copy numpy views are read-only; checks never write to values.
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="The given NumPy array is not writable")
        return torch.from_numpy(a)


def _leaf_values(leaf: pa.Array) -> np.ndarray:
    """Numpy values of a flat numeric Arrow array: floats keep their width, integers become int64 (uint64
    beyond int64 range becomes float64), bool stays bool. Null elements (inside a list) become NaN, with
    integer/bool leaves then converted to float64 so a missing element shows up as non-finite."""
    t = leaf.type
    if leaf.null_count:
        if not pa.types.is_floating(t):
            leaf = leaf.cast(pa.float64(), safe=False)
        return leaf.to_numpy(zero_copy_only=False)
    a = leaf.to_numpy(zero_copy_only=False)  # zero-copy for null-free primitive arrays (honours slicing)
    if pa.types.is_integer(t) and a.dtype != np.int64:
        if a.dtype == np.uint64 and a.size and int(a.max()) > _INT64_MAX:
            return a.astype(np.float64)
        return a.astype(np.int64)
    return a


def _is_list_like(t: pa.DataType) -> bool:
    return pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t)


def _per_sample_dtypes(dtypes, n: int, default_code: int) -> np.ndarray:
    codes = np.full(n, default_code, dtype=np.int8)
    if dtypes is None:
        return codes
    if isinstance(dtypes, pa.ChunkedArray):
        dtypes = dtypes.combine_chunks()
    if not isinstance(dtypes, pa.Array):
        dtypes = pa.array(dtypes, type=pa.string())
    if len(dtypes) != n:
        raise ValueError(f"dtypes has {len(dtypes)} entries for {n} samples")
    if pa.types.is_dictionary(dtypes.type):
        enc = dtypes
    else:
        enc = dtypes.cast(pa.string()).dictionary_encode()
    # Map the few distinct names once; then one vectorized take for all samples.
    table = np.array([dtype_code(s) for s in enc.dictionary.to_pylist()] + [default_code], dtype=np.int8)
    idx = enc.indices.fill_null(len(enc.dictionary)).to_numpy(zero_copy_only=False).astype(np.int64)
    return table[idx]


def from_arrow(array, dtypes=None, device=None) -> NumericField:
    """A NumericField from an Arrow numeric column.

    array: int/float/bool scalars (one element per sample) or list / large_list / fixed_size_list of them, nested
    to any depth (flattened fully). A null sample has no elements and present=False; a null inner list has no
    elements; a null leaf element inside a list becomes NaN (see `_leaf_values`). Sliced arrays work.
    dtypes: optional per-sample dtype names (e.g. the stored dtype of WebDataset .npy members); null entries and
    dtypes=None fall back to the Arrow value type. Samples' element order is kept; no per-sample Python loop.
    """
    if isinstance(array, pa.ChunkedArray):
        array = array.chunk(0) if array.num_chunks == 1 else array.combine_chunks()
    if pa.types.is_dictionary(array.type):
        array = array.dictionary_decode()
    n = len(array)
    leaf_type = array.type
    while _is_list_like(leaf_type):
        leaf_type = leaf_type.value_type
    if pa.types.is_null(leaf_type):
        values = np.zeros(0, dtype=np.float64)
        sample = np.zeros(0, dtype=np.int64)
        code = DTYPE_CODE["other"]
    elif pa.types.is_integer(leaf_type) or pa.types.is_floating(leaf_type) or pa.types.is_boolean(leaf_type):
        code = dtype_code(leaf_type)
        cur, parent = array, None
        while _is_list_like(cur.type):
            pidx = pc.list_parent_indices(cur).to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
            parent = pidx if parent is None else parent[pidx]
            cur = cur.flatten()  # skips null lists' contents, honours slicing, consistent with list_parent_indices
        if parent is None:  # scalar column: a null sample has no element
            if cur.null_count:
                keep = cur.is_valid().to_numpy(zero_copy_only=False)
                parent = np.flatnonzero(keep).astype(np.int64)
                cur = cur.filter(cur.is_valid())
            else:
                parent = np.arange(n, dtype=np.int64)
        values = _leaf_values(cur)
        sample = parent
    else:
        raise TypeError(f"from_arrow: not a numeric column: {array.type}")
    present = array.is_valid().to_numpy(zero_copy_only=False) if n else np.zeros(0, dtype=bool)
    offsets = np.searchsorted(sample, np.arange(n + 1, dtype=np.int64))  # sample is sorted by construction
    lengths = np.diff(offsets)
    field = NumericField(
        values=_from_numpy(values),
        sample=_from_numpy(sample),
        num_samples=n,
        dtypes=_from_numpy(_per_sample_dtypes(dtypes, n, code)),
        valid=None,
        present=_from_numpy(np.asarray(present, dtype=bool)),
    )
    field = _to_device(field, device)
    if n and (lengths == lengths[0]).all():
        _set_layout(field, "dense", int(lengths[0]))
    else:
        _set_layout(field, "grouped", 0, torch.from_numpy(offsets).to(field.device))
    return field


def _to_device(field: NumericField, device) -> NumericField:
    if device is None:
        return field
    mv = lambda t: None if t is None else t.to(device)  # noqa: E731
    return NumericField(values=mv(field.values), sample=mv(field.sample), num_samples=field.num_samples,
                        dtypes=mv(field.dtypes), valid=mv(field.valid), present=mv(field.present))


def _broadcast_mask(mask: torch.Tensor, shape: torch.Size) -> torch.Tensor:
    """Bool mask broadcast over `shape`, aligned on the leading dims (mask [B, T] over x [B, T, D])."""
    if mask.dtype == torch.bool:
        m = mask
    elif mask.is_cpu and mask.dtype in _NUMPY_OK:  # numpy compares small integer tensors several times faster
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
    # sample (arange(b) repeated per times) and dtypes (b times the tensor's code) are built lazily: _TensorField.
    # Built straight into __dict__ (what the dataclass __init__, the lazy setters and _set_layout would store).
    code = _TORCH_DTYPE_CODE.get(x.dtype)
    field = _TensorField.__new__(_TensorField)
    d = field.__dict__
    d["values"], d["_sample"], d["num_samples"], d["_dtypes"], d["valid"], d["present"] = (
        values, None, b, None, valid, None)
    d["_dtype_code"] = code if code is not None else dtype_code(x.dtype)
    d["_layout"] = _Layout(_LAZY, b, "dense", per, None)
    if len(shape) == 2 and x.is_cpu and x.is_contiguous():
        d["_rows"] = (values, x)  # dense_rows: x itself is the [B, per] matrix (no second view per batch)
    return field


# ---------------------------------------------------------------------------------------------------------
# Token fields
# ---------------------------------------------------------------------------------------------------------

def tokens_from_tensor(ids: torch.Tensor, mask: torch.Tensor | None = None) -> TokenFields:
    """TokenFields of a padded batch: ids [B, T] and attention mask [B, T]. ids.valid = mask != 0. A mask whose
    shape does not fit the ids (e.g. longer) is kept as is, leaving ids.valid unset; mask_mismatch flags it."""
    if mask is None:
        return TokenFields(ids=from_tensor(ids))
    fits = mask.dim() <= ids.dim() and tuple(mask.shape) == tuple(ids.shape[:mask.dim()])
    return TokenFields(ids=from_tensor(ids, mask if fits else None), mask=from_tensor(mask))


def tokens_from_arrow(ids, mask=None, device=None) -> TokenFields:
    """TokenFields of Arrow list columns (ragged). When a mask column is given, ids.valid = mask != 0 on the
    samples whose mask has as many elements as their ids (others: every id valid; mask_mismatch flags them)."""
    idf = from_arrow(ids, device=device)
    if mask is None:
        return TokenFields(ids=idf)
    mf = from_arrow(mask, device=device)
    if mf.num_samples != idf.num_samples:
        raise ValueError(f"mask has {mf.num_samples} samples, ids {idf.num_samples}")
    idf.valid = valid_from_mask(idf, mf)
    return TokenFields(ids=idf, mask=mf)


def valid_from_mask(ids: NumericField, mask: NumericField) -> torch.Tensor | None:
    """Per id element: mask != 0 at the same position, on samples whose mask has as many elements as their ids;
    True elsewhere (a length mismatch is mask_mismatch's to report). None when either side has no elements.
    Needs the grouped layout (every constructor here gives it)."""
    if ids.values.shape[0] == 0 or mask.values.shape[0] == 0:
        return None
    idx, same = aligned_index(mask, ids)
    mv = mask.values.index_select(0, idx)
    return torch.where(same, mv != 0, torch.ones_like(same))


# ---------------------------------------------------------------------------------------------------------
# Segment reductions. All take the field and optional per-element `values` (default field.values) and `where`
# (bool per element); elements with valid == False or where == False do not take part. An empty sample gets the
# reduction's neutral value: 0 for sum/count, +inf / -inf (integer: int64 max / min) for min / max, unless
# `empty` is given. Excluded elements are replaced by the neutral value with torch.where (never dropped by
# indexing), and nothing reads back to the host: safe inside a CUDA training step.
#
# Three execution paths, chosen per field from its layout (cached on the instance, keyed by its `sample`
# tensor) and giving the same result:
#   dense   every sample has the same number of elements (from_tensor, fixed-size Arrow lists): reshape to
#           [B, per] and reduce along dim 1.
#   grouped elements grouped by sample in order (from_arrow; verified once on CPU for hand-built fields):
#           counts from a cumsum, float sums with segment_reduce.
#   scatter anything else: index_add_ / scatter_reduce_(include_self=True) into a tensor pre-filled with the
#           neutral value.
# Float sums on CPU always go through segment_reduce (one sequential pass per sample, masked elements adding
# +0.0), so the same sample gives bit-identical sums whether it came ragged from Arrow or padded from a tensor.
# Counts, min and max are exact in every path.
# ---------------------------------------------------------------------------------------------------------

@dataclass
class _Layout:
    sample: torch.Tensor           # the field.sample this describes (identity-checked)
    num_samples: int
    kind: str                      # "dense" | "grouped" | "scatter"
    per: int = 0                   # dense: elements per sample
    offsets: torch.Tensor | None = None  # grouped (and dense, lazily, on CPU): [B + 1] segment starts


def _set_layout(field: NumericField, kind: str, per: int = 0, offsets: torch.Tensor | None = None) -> None:
    field.__dict__["_layout"] = _Layout(_sample_ref(field), field.num_samples, kind, per, offsets)


def _layout(field: NumericField) -> _Layout:
    lay = field.__dict__.get("_layout")
    n = field.values.shape[0]  # == len(sample) by contract; read without building a lazy sample index
    if (lay is not None and lay.sample is _sample_ref(field) and lay.num_samples == field.num_samples
            and (lay.kind != "dense" or lay.per * lay.num_samples == n)):
        return lay
    kind, offsets = "scatter", None
    s = field.sample
    if s.device.type == "cpu":  # verifying the order is a host read: only where that costs no sync
        if n == 0 or bool((s[1:] >= s[:-1]).all()):
            kind = "grouped"
            offsets = torch.searchsorted(s, torch.arange(field.num_samples + 1, dtype=s.dtype))
    _set_layout(field, kind, 0, offsets)
    return field.__dict__["_layout"]


def with_valid(field: NumericField, valid: torch.Tensor | None) -> NumericField:
    """The same field with `valid` replaced (None: every element counts); keeps the cached layout."""
    out = _replace(field, valid=valid)
    lay = field.__dict__.get("_layout")
    if lay is not None:  # a copy: building one field's lazy sample index must not touch the other's layout
        out.__dict__["_layout"] = _Layout(lay.sample, lay.num_samples, lay.kind, lay.per, lay.offsets)
    return out


def _dense_offsets(lay: _Layout, device) -> torch.Tensor:
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
    lay = _layout(field)
    if lay.kind == "dense":
        return torch.full((field.num_samples,), lay.per, dtype=torch.int64, device=field.device)
    if lay.kind == "grouped":
        return lay.offsets.diff()
    out = torch.zeros(field.num_samples, dtype=torch.int64, device=field.device)
    return out.index_add_(0, field.sample, torch.ones_like(field.sample))


def _count_mask(field: NumericField, m: torch.Tensor) -> torch.Tensor:
    lay = _layout(field)
    b = field.num_samples
    if lay.kind == "dense":
        if m.is_cpu and b and lay.per:  # torch's CPU sum over bool is slow; numpy counts at memory speed
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
    lay = _layout(field)
    b = field.num_samples
    if v.is_floating_point() and v.device.type == "cpu" and lay.kind != "scatter":
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
    lay = _layout(field)
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
    lay = _layout(field)
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
    lay = _layout(field)
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
    if _layout(field).kind == "scatter" and field.device.type == "cpu":  # verified out of order (unknowable on GPU)
        raise ValueError("this operation needs the elements grouped by sample in ascending order")


def element_position(field: NumericField) -> torch.Tensor:
    """int64 per element: its position within its sample (needs the grouped layout, see top of section)."""
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


# ---------------------------------------------------------------------------------------------------------
# Reduce once, read by many checks.
#
# `memo(field, key, fn)` caches a per-sample reduction on the field (keyed by the identity of its values and
# valid tensors, so replacing either drops the cache), so checks that need the same statistic share one pass:
# on a dense float field nonfinite, extreme_span and out_of_range together read the data twice (row min and
# row max) instead of once or more per check. It works on every device (it only keeps tensors).
#
# `dense_rows(field)` is the CPU fast path's entry: the [B, per] matrix of a dense CPU field. On the CPU a
# check may read small per-sample results back (there is no device to stall) and branch on them, e.g. redo
# the exact, generic computation only for the few rows a cheap row reduction marks as suspect. On any other
# device it returns None and the checks keep the generic sync-free path above.
# ---------------------------------------------------------------------------------------------------------

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
    v = field.values
    if not v.is_cpu or field.num_samples == 0 or (field.valid is not None and not allow_valid):
        return None
    lay = _layout(field)
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


def host_np(t: torch.Tensor) -> np.ndarray:
    """Numpy view of a small CPU tensor (float16 / bfloat16 widened to float32, exactly)."""
    if t.dtype in (torch.float16, torch.bfloat16):
        t = t.float()
    return t.numpy()


def same_dense_layout(a: NumericField, b: NumericField) -> bool:
    """Both fields dense with the same number of samples and elements per sample (element i of one is element
    i of the other): a padded ids tensor and its attention mask. Known from construction, on every device."""
    la, lb = _layout(a), _layout(b)
    return (la.kind == "dense" and lb.kind == "dense" and la.per == lb.per
            and a.num_samples == b.num_samples)


def uniform_dtype_code(field: NumericField) -> int | None:
    """The storage dtype code every sample shares when that is known without reading `dtypes` (a from_tensor
    field whose per-sample codes were never replaced), else None."""
    d = field.__dict__
    if "_dtype_code" in d and d.get("_dtypes") is None:
        return d["_dtype_code"]
    return None
