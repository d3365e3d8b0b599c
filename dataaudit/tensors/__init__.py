"""The data model the checks run on: one representation of numeric data for Arrow columns and torch batches.

    field.py        NumericField / TokenFields / TrainedTokens and the cached element layout
    dtypes.py       storage dtype codes and names (torch, numpy, Arrow)
    arrow.py        from_arrow / tokens_from_arrow: the audit's Arrow columns
    torch_batch.py  from_tensor / tokens_from_tensor: the guard's batch tensors, on any device
    reductions.py   per-sample reductions (seg_count, seg_sum, seg_min, ...), sync-free on every device
    rows.py         reductions computed once and shared by checks; the CPU fast path
"""
from dataaudit.tensors.arrow import from_arrow, tokens_from_arrow, with_shapes
from dataaudit.tensors.dtypes import DTYPE_CODE, DTYPE_NAMES, FLOAT_DTYPES, INTEGER_DTYPES, dtype_code, dtype_name
from dataaudit.tensors.field import NumericField, TokenFields, TrainedTokens, with_valid
from dataaudit.tensors.reductions import (
    aligned_index,
    element_position,
    seg_all,
    seg_any,
    seg_broadcast,
    seg_count,
    seg_lengths,
    seg_max,
    seg_min,
    seg_std,
    seg_sum,
    valid_from_mask,
)
from dataaudit.tensors.rows import (
    dense_rows,
    dense_view,
    has_memo,
    host_np,
    host_path,
    memo,
    row_reduce,
    same_dense_layout,
    uniform_dtype_code,
    uniform_shape,
)
from dataaudit.tensors.torch_batch import from_tensor, tokens_from_tensor

__all__ = [
    "DTYPE_CODE", "DTYPE_NAMES", "FLOAT_DTYPES", "INTEGER_DTYPES", "NumericField", "TokenFields", "TrainedTokens",
    "aligned_index",
    "dense_rows", "dense_view", "dtype_code", "dtype_name", "element_position", "from_arrow", "from_tensor",
    "has_memo", "host_np", "host_path",
    "memo", "row_reduce", "same_dense_layout", "seg_all", "seg_any", "seg_broadcast", "seg_count", "seg_lengths",
    "seg_max", "seg_min", "seg_std", "seg_sum", "tokens_from_arrow", "tokens_from_tensor", "uniform_dtype_code",
    "uniform_shape", "valid_from_mask", "with_shapes", "with_valid",
]
