"""NumericField / TokenFields from Arrow columns (the audit's side): ragged or fixed-size lists, nested to any
depth, with per-sample storage dtypes; no per-sample Python loop."""
from __future__ import annotations

import warnings

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dataaudit.extras import LazyModule
from dataaudit.tensors.dtypes import DTYPE_CODE, dtype_code
from dataaudit.tensors.field import NumericField, TokenFields, set_layout
from dataaudit.tensors.reductions import valid_from_mask

torch = LazyModule("torch", globals())   # imported on first use: the audit of text never loads it


_INT64_MAX = 2 ** 63 - 1


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
        set_layout(field, "dense", int(lengths[0]))
    else:
        set_layout(field, "grouped", 0, torch.from_numpy(offsets).to(field.device))
    return field


def _to_device(field: NumericField, device) -> NumericField:
    if device is None:
        return field
    mv = lambda t: None if t is None else t.to(device)  # noqa: E731
    return NumericField(values=mv(field.values), sample=mv(field.sample), num_samples=field.num_samples,
                        dtypes=mv(field.dtypes), valid=mv(field.valid), present=mv(field.present),
                        shape=mv(field.shape))


def with_shapes(field: NumericField, shapes, ndim: int) -> NumericField:
    """`field` with its per-sample dims set from `shapes`, an Arrow list<int> column (one shape per sample, null
    for none: WebDataset `<name>.shape`): int64 [num_samples, ndim], -1 rows for samples without a value or with
    another number of dims. In place; returns the field. No per-sample Python loop."""
    if isinstance(shapes, pa.ChunkedArray):
        shapes = shapes.combine_chunks()
    if not isinstance(shapes, pa.Array):
        shapes = pa.array(shapes, pa.list_(pa.int64()))
    n = field.num_samples
    if len(shapes) != n:
        raise ValueError(f"shapes has {len(shapes)} entries for {n} samples")
    lens = pc.fill_null(pc.list_value_length(shapes), -1).to_numpy(zero_copy_only=False).astype(np.int64)
    flat = pc.list_flatten(shapes).to_numpy(zero_copy_only=False).astype(np.int64)
    starts = np.cumsum(np.maximum(lens, 0)) - np.maximum(lens, 0)
    ok = lens == ndim
    if field.present is not None:
        ok &= field.present.cpu().numpy()
    out = np.full((n, ndim), -1, dtype=np.int64)
    out[ok] = flat[starts[ok][:, None] + np.arange(ndim)]
    field.shape = torch.from_numpy(out).to(field.device)
    return field


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
