"""Storage dtypes as small integer codes, so a per-sample dtype (WebDataset .npy members may differ from sample
to sample) lives in a tensor like everything else; names and codes for torch, numpy and Arrow types."""
from __future__ import annotations

import sys
from functools import cache

import numpy as np
import pyarrow as pa

DTYPE_NAMES: tuple[str, ...] = (
    "bool", "uint8", "int8", "int16", "int32", "int64", "uint16", "uint32", "uint64",
    "float16", "bfloat16", "float32", "float64", "other",
)
DTYPE_CODE = {name: i for i, name in enumerate(DTYPE_NAMES)}
INTEGER_DTYPES = frozenset({"uint8", "int8", "int16", "int32", "int64", "uint16", "uint32", "uint64"})
FLOAT_DTYPES = frozenset({"float16", "bfloat16", "float32", "float64"})

# torch dtype -> name and code, filled when torch is first used (importing it costs ~1 s: text audits never do)
_TORCH_DTYPE_NAME: dict = {}
TORCH_DTYPE_CODE: dict = {}   # from_tensor's lookup


def _torch_names() -> dict:
    if not _TORCH_DTYPE_NAME:
        import torch

        names = {torch.bool: "bool", torch.uint8: "uint8", torch.int8: "int8", torch.int16: "int16",
                 torch.int32: "int32", torch.int64: "int64", torch.float16: "float16", torch.bfloat16: "bfloat16",
                 torch.float32: "float32", torch.float64: "float64"}
        names.update({getattr(torch, n): n for n in ("uint16", "uint32", "uint64") if hasattr(torch, n)})
        TORCH_DTYPE_CODE.update({t: DTYPE_CODE[n] for t, n in names.items()})
        _TORCH_DTYPE_NAME.update(names)
    return _TORCH_DTYPE_NAME


@cache
def numpy_convertible():
    """torch dtypes whose CPU tensors convert to numpy without a copy (CPU fast paths use numpy for small
    kernels)."""
    import torch

    return frozenset({torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.float16,
                      torch.float32, torch.float64})

_ARROW_DTYPE_NAME = {
    pa.bool_(): "bool", pa.uint8(): "uint8", pa.int8(): "int8", pa.int16(): "int16", pa.int32(): "int32",
    pa.int64(): "int64", pa.uint16(): "uint16", pa.uint32(): "uint32", pa.uint64(): "uint64",
    pa.float16(): "float16", pa.float32(): "float32", pa.float64(): "float64",
}


def dtype_name(code) -> str:
    """Name of a dtype code (an int, or a 0-d tensor / numpy scalar); "other" for anything unknown."""
    code = int(code)
    return DTYPE_NAMES[code] if 0 <= code < len(DTYPE_NAMES) else "other"


def dtype_code(name) -> int:
    """Code of a dtype given by name ("float32", "<f4", "float", "bfloat16"), torch dtype, numpy dtype or Arrow
    type. Unknown or unparseable -> the code of "other"."""
    torch = sys.modules.get("torch")   # a torch dtype exists only once torch is loaded
    if torch is not None and isinstance(name, torch.dtype):
        return DTYPE_CODE[_torch_names().get(name, "other")]
    if isinstance(name, pa.DataType):
        return DTYPE_CODE[_ARROW_DTYPE_NAME.get(name, "other")]
    if isinstance(name, str) and name in DTYPE_CODE:
        return DTYPE_CODE[name]
    try:
        return DTYPE_CODE.get(np.dtype(name).name, DTYPE_CODE["other"])
    except (TypeError, ValueError):
        return DTYPE_CODE["other"]
