"""Numeric, label and token checks: the NumericField constructors, the segment reductions, exact per-check
results on hand-made data, and the core promise: the same data given as ragged Arrow or as a padded tensor +
mask gives identical flags and values."""
from __future__ import annotations

import contextlib
import math

import numpy as np
import pyarrow as pa
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dataaudit.checks import REGISTRY
from dataaudit.tensors import (
    DTYPE_CODE,
    DTYPE_NAMES,
    NumericField,
    TokenFields,
    dtype_name,
    element_position,
    from_arrow,
    from_tensor,
    seg_all,
    seg_any,
    seg_count,
    seg_lengths,
    seg_max,
    seg_min,
    seg_std,
    seg_sum,
    tokens_from_arrow,
    tokens_from_tensor,
)

NAN, INF = math.nan, math.inf
NUMERIC = ("nonfinite", "extreme_span", "constant", "out_of_range", "dtype_mismatch")
TOKENS = ("token_id_out_of_range", "too_long", "all_padding", "mask_mismatch")

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


@pytest.fixture(params=DEVICES)
def device(request):
    """Padded-tensor tests also run on CUDA when there is one (see `strict`)."""
    return request.param


@contextlib.contextmanager
def strict(dev):
    """On CUDA, any host sync inside the block is an error (the guard runs inside the training step)."""
    if torch.device(dev).type != "cuda":
        yield
        return
    torch.cuda.set_sync_debug_mode("error")
    try:
        yield
    finally:
        torch.cuda.set_sync_debug_mode(0)


def tensor_field(x, mask=None, device="cpu"):
    x = x.to(device)
    mask = None if mask is None else mask.to(device)
    with strict(device):
        return from_tensor(x, mask)


def tensor_tokens(ids, mask=None, device="cpu"):
    ids = ids.to(device)
    mask = None if mask is None else mask.to(device)
    with strict(device):
        return tokens_from_tensor(ids, mask)


def run(name, field, **params):
    spec = REGISTRY[name]
    p = {**spec.params, **params}
    ref = field.ids if isinstance(field, TokenFields) else field
    with strict(ref.device):
        out = spec.fn(field, **p)
    assert out.flagged.dtype == torch.bool and out.value.dtype == torch.float64
    assert out.flagged.shape == (ref.num_samples,) and out.value.shape == (ref.num_samples,)
    assert out.flagged.device == ref.device and out.value.device == ref.device
    return out


def host(out):
    return out.flagged.cpu().numpy(), out.value.cpu().numpy()


def check(name, field, flags, values, **params):
    f, v = host(run(name, field, **params))
    np.testing.assert_array_equal(f, np.array(flags, dtype=bool), err_msg=f"{name} flags")
    np.testing.assert_array_equal(v, np.array(values, dtype=np.float64), err_msg=f"{name} values")


def pad(rows, fill, dtype, width=None):
    """Ragged python rows -> padded tensor [B, T] filled with `fill`, and its mask."""
    width = max([len(r) for r in rows] + [0]) if width is None else width
    x = torch.full((len(rows), width), fill, dtype=dtype)
    m = torch.zeros((len(rows), width), dtype=torch.int64)
    for i, r in enumerate(rows):
        if r:
            x[i, :len(r)] = torch.tensor(r, dtype=dtype)
            m[i, :len(r)] = 1
    return x, m


# ------------------------------------------------------------------------------------------------ registry

def test_registrations():
    expect = {
        "nonfinite": ("numeric", "error", ()),
        "extreme_span": ("numeric", "warning", ()),
        "constant": ("numeric", "warning", ()),
        "out_of_range": ("numeric", "warning", (("min", "max"),)),
        "dtype_mismatch": ("numeric", "error", ("expected",)),
        "label_out_of_range": ("label", "error", ("num_classes",)),
        "token_id_out_of_range": ("tokens", "error", ("vocab_size",)),
        "too_long": ("tokens", "warning", ("context_length",)),
        "all_padding": ("tokens", "warning", ()),
        "mask_mismatch": ("tokens", "warning", ()),
    }
    for name, (target, severity, required) in expect.items():
        spec = REGISTRY[name]
        assert (spec.target, spec.severity, spec.required) == (target, severity, required), name
    assert [(t.kind, t.params) for t in REGISTRY["dtype_mismatch"].targets] == [
        ("numeric", {}), ("label", {"expected": "int"}), ("token_ids", {"expected": "int"})]
    assert REGISTRY["extreme_span"].params == {"threshold": 1e4}
    assert REGISTRY["constant"].params == {"std_threshold": 1e-6, "min_elements": 2}
    assert REGISTRY["label_out_of_range"].params["ignore_index"] == -100


# ------------------------------------------------------------------------------------------------ from_arrow

def _np(t):
    return t.cpu().numpy()


def test_from_arrow_scalar_column_with_nulls():
    f = from_arrow(pa.array([1.5, None, -2.0], pa.float64()))
    assert f.num_samples == 3 and f.values.dtype == torch.float64
    assert _np(f.values).tolist() == [1.5, -2.0]
    assert _np(f.sample).tolist() == [0, 2]
    assert _np(f.present).tolist() == [True, False, True]
    assert _np(f.dtypes).tolist() == [DTYPE_CODE["float64"]] * 3 and f.dtypes.dtype == torch.int8
    assert f.valid is None


def test_from_arrow_ragged_list_empty_null_and_slice():
    arr = pa.array([[9.0], [1.0, 2.0], None, [], [3.0, 4.0, 5.0], [6.0]], pa.list_(pa.float32()))
    f = from_arrow(arr)
    assert f.values.dtype == torch.float32
    assert _np(f.values).tolist() == [9, 1, 2, 3, 4, 5, 6]
    assert _np(f.sample).tolist() == [0, 1, 1, 4, 4, 4, 5]
    assert _np(f.present).tolist() == [True, True, False, True, True, True]
    assert _np(seg_lengths(f)).tolist() == [1, 2, 0, 0, 3, 1]
    s = from_arrow(arr.slice(1, 4))  # [1, 2], None, [], [3, 4, 5]
    assert s.num_samples == 4
    assert _np(s.values).tolist() == [1, 2, 3, 4, 5]
    assert _np(s.sample).tolist() == [0, 0, 3, 3, 3]
    assert _np(s.present).tolist() == [True, False, True, True]


def test_from_arrow_zero_copy_for_null_free_floats():
    base = pa.array([[0.0, 1.0], [2.0, 3.0, 4.0], [5.0]], pa.list_(pa.float32()))
    f = from_arrow(base.slice(1))
    leaf = base.values
    assert f.values.data_ptr() == leaf.buffers()[1].address + 2 * 4  # the child buffer itself, past [0, 1]
    assert _np(f.values).tolist() == [2, 3, 4, 5]


def test_from_arrow_nested_and_large_and_fixed_size():
    nested = pa.array([[[1, 2], [3]], [None, [4]], None, [[]], [[5], [6, 7]]], pa.list_(pa.list_(pa.int32())))
    f = from_arrow(nested)
    assert f.values.dtype == torch.int64  # integers stay integer (widened to int64)
    assert _np(f.values).tolist() == [1, 2, 3, 4, 5, 6, 7]
    assert _np(f.sample).tolist() == [0, 0, 0, 1, 4, 4, 4]
    assert _np(f.present).tolist() == [True, True, False, True, True]
    assert _np(f.dtypes).tolist() == [DTYPE_CODE["int32"]] * 5
    s = from_arrow(nested.slice(1, 3))
    assert _np(s.values).tolist() == [4] and _np(s.sample).tolist() == [0]

    large = pa.array([[1.0], None, [2.0, 3.0]], pa.large_list(pa.float64()))
    f = from_arrow(large)
    assert _np(f.values).tolist() == [1, 2, 3] and _np(f.sample).tolist() == [0, 2, 2]

    fsl = pa.array([[1, 2], None, [3, 4], [5, 6]], pa.list_(pa.float16(), 2))
    f = from_arrow(fsl)
    assert f.values.dtype == torch.float16
    assert _np(f.values).tolist() == [1, 2, 3, 4, 5, 6]
    assert _np(f.sample).tolist() == [0, 0, 2, 2, 3, 3]
    s = from_arrow(fsl.slice(2))
    assert _np(s.values).tolist() == [3, 4, 5, 6] and _np(s.sample).tolist() == [0, 0, 1, 1]
    # list of fixed-size vectors (e.g. per-token embeddings)
    lof = pa.array([[[1, 2], [3, 4]], [], [[5, 6]]], pa.list_(pa.list_(pa.float32(), 2)))
    f = from_arrow(lof)
    assert _np(f.values).tolist() == [1, 2, 3, 4, 5, 6] and _np(f.sample).tolist() == [0, 0, 0, 0, 2, 2]


def test_from_arrow_dtypes_and_conversions():
    assert from_arrow(pa.array([1.0], pa.float16())).values.dtype == torch.float16
    assert from_arrow(pa.array([1.0], pa.float32())).values.dtype == torch.float32
    assert from_arrow(pa.array([1.0], pa.float64())).values.dtype == torch.float64
    for t in (pa.int8(), pa.uint8(), pa.int16(), pa.int32(), pa.uint32(), pa.int64(), pa.uint64()):
        f = from_arrow(pa.array([1, 2], t))
        assert f.values.dtype == torch.int64, t
        assert dtype_name(f.dtypes[0]) == str(t)
    big = from_arrow(pa.array([2 ** 64 - 1], pa.uint64()))  # beyond int64: kept as float64, still uint64
    assert big.values.dtype == torch.float64 and dtype_name(big.dtypes[0]) == "uint64"
    b = from_arrow(pa.array([True, None, False]))
    assert b.values.dtype == torch.bool and _np(b.sample).tolist() == [0, 2]
    assert dtype_name(b.dtypes[0]) == "bool"
    ch = from_arrow(pa.chunked_array([pa.array([[1.0]]), pa.array([[2.0, 3.0], None])]))
    assert _np(ch.values).tolist() == [1, 2, 3] and _np(ch.sample).tolist() == [0, 1, 1] and ch.num_samples == 3
    empty = from_arrow(pa.array([], pa.list_(pa.float32())))
    assert empty.num_samples == 0 and empty.values.numel() == 0
    allnull = from_arrow(pa.array([None, None]))
    assert allnull.num_samples == 2 and _np(allnull.present).tolist() == [False, False]
    with pytest.raises(TypeError):
        from_arrow(pa.array(["a"]))


def test_from_arrow_null_leaf_element_is_nan():
    f = from_arrow(pa.array([[1, None, 3], [4]], pa.list_(pa.int64())))
    assert f.values.dtype == torch.float64 and np.isnan(_np(f.values)[1])
    check("nonfinite", f, [True, False], [1, 0])


def test_from_arrow_per_sample_dtypes():
    arr = pa.array([[1.0], [2.0], [3.0], [4.0], [5.0], None], pa.list_(pa.float32()))
    names = pa.array(["float32", "<i8", None, "float16", "not-a-dtype", "int64"])
    f = from_arrow(arr, dtypes=names)
    codes = [DTYPE_CODE[n] for n in ("float32", "int64", "float32", "float16", "other", "int64")]
    assert _np(f.dtypes).tolist() == codes
    with pytest.raises(ValueError):
        from_arrow(arr, dtypes=pa.array(["float32"]))
    assert _np(from_arrow(arr, dtypes=["bfloat16"] * 6).dtypes).tolist() == [DTYPE_CODE["bfloat16"]] * 6


def test_from_arrow_device_and_from_tensor_layout():
    x = torch.arange(24, dtype=torch.float32).reshape(2, 3, 4)
    m = torch.tensor([[1, 1, 0], [1, 0, 0]])
    f = from_tensor(x, m)
    assert f.num_samples == 2 and f.values.data_ptr() == x.data_ptr()  # a view, no copy
    assert _np(f.sample).tolist() == [0] * 12 + [1] * 12
    assert _np(f.valid).tolist() == [True] * 8 + [False] * 4 + [True] * 4 + [False] * 8
    assert _np(f.dtypes).tolist() == [DTYPE_CODE["float32"]] * 2 and f.present is None
    assert _np(seg_count(f)).tolist() == [8, 4]
    assert _np(seg_lengths(f)).tolist() == [12, 12]
    v = from_tensor(torch.tensor([1, 2, 3], dtype=torch.int32))  # [B]: one element per sample
    assert _np(v.sample).tolist() == [0, 1, 2] and dtype_name(v.dtypes[0]) == "int32"
    with pytest.raises(ValueError):
        from_tensor(torch.tensor(1.0))


# ------------------------------------------------------------------------------------------------ reductions

def test_reductions_small_with_empty_samples():
    f = from_arrow(pa.array([[1.0, 5.0, -2.0], [], None, [7.0]], pa.list_(pa.float64())))
    assert _np(seg_sum(f)).tolist() == [4, 0, 0, 7]
    assert _np(seg_count(f)).tolist() == [3, 0, 0, 1]
    assert _np(seg_min(f)).tolist() == [-2, INF, INF, 7]
    assert _np(seg_max(f)).tolist() == [5, -INF, -INF, 7]
    assert _np(seg_min(f, empty=0.0)).tolist() == [-2, 0, 0, 7]
    assert _np(seg_any(f, f.values > 4)).tolist() == [True, False, False, True]
    assert _np(seg_all(f, f.values > 0)).tolist() == [False, True, True, True]
    g = from_arrow(pa.array([[3, 1], []], pa.list_(pa.int16())))
    assert _np(seg_min(g)).tolist() == [1, 2 ** 63 - 1] and _np(seg_max(g)).tolist() == [3, -(2 ** 63)]
    assert seg_sum(g).dtype == torch.int64 and _np(seg_sum(g)).tolist() == [4, 0]
    std, mean, n = seg_std(f)
    np.testing.assert_allclose(_np(std), [np.std([1, 5, -2]), 0, 0, 0])
    np.testing.assert_allclose(_np(mean), [4 / 3, 0, 0, 7])


def _scatter_field(f: NumericField, perm: np.ndarray) -> NumericField:
    """The same elements in a shuffled order: exercises the generic scatter path."""
    p = torch.from_numpy(perm)
    return NumericField(values=f.values[p], sample=f.sample[p], num_samples=f.num_samples, dtypes=f.dtypes,
                        valid=None if f.valid is None else f.valid[p], present=f.present)


def test_hand_built_fields_grouped_and_scatter_paths():
    vals = torch.tensor([1.0, 2.0, 3.0, 4.0, NAN])
    codes = torch.zeros(3, dtype=torch.int8)
    grouped = NumericField(values=vals, sample=torch.tensor([0, 0, 2, 2, 2]), num_samples=3, dtypes=codes)
    shuffled = NumericField(values=vals[[2, 0, 4, 1, 3]], sample=torch.tensor([2, 0, 2, 0, 2]), num_samples=3,
                            dtypes=codes)
    for f in (grouped, shuffled):
        assert _np(seg_count(f)).tolist() == [2, 0, 3]
        assert _np(seg_sum(f, where=torch.isfinite(f.values))).tolist() == [3, 0, 7]
        assert _np(seg_max(f, where=torch.isfinite(f.values))).tolist() == [2, -INF, 4]
        check("nonfinite", f, [0, 0, 1], [0, 0, 1])
        check("constant", f, [0, 0, 0], [0.5, 0, 0.5])
    assert _np(element_position(grouped)).tolist() == [0, 1, 0, 1, 2]
    with pytest.raises(ValueError):
        element_position(shuffled)


_floats = st.one_of(st.floats(-1e6, 1e6, width=32), st.sampled_from([NAN, INF, -INF, 0.0, -0.0]))
_rows = st.lists(st.one_of(st.none(), st.lists(_floats, max_size=7)), min_size=0, max_size=9)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=_rows, seed=st.integers(0, 2 ** 31 - 1))
def test_reductions_match_numpy_loop(rows, seed):
    rng = np.random.default_rng(seed)
    arr = pa.array(rows, pa.list_(pa.float32()))
    flat = [(i, v) for i, r in enumerate(rows) if r for v in r]
    n_el = len(flat)
    valid = rng.random(n_el) < 0.8
    where = rng.random(n_el) < 0.7
    b = len(rows)

    base = from_arrow(arr)
    base.valid = torch.from_numpy(valid)
    width = max([len(r) for r in rows if r] + [0])
    # padded version: same valid elements at the same positions, padding garbage
    x = torch.full((b, width), NAN)
    vm = torch.zeros((b, width), dtype=torch.bool)
    wm = torch.zeros((b, width), dtype=torch.bool)
    k = 0
    for i, r in enumerate(rows):
        for j, v in enumerate(r or []):
            x[i, j], vm[i, j], wm[i, j] = v, bool(valid[k]), bool(where[k])
            k += 1
    dense = from_tensor(x, vm)
    fields = [(base, torch.from_numpy(where)), (dense, wm.reshape(-1))]
    perm = rng.permutation(n_el)
    fields.append((_scatter_field(base, perm), torch.from_numpy(where[perm])))

    for f, w in fields:
        vals = f.values
        fin = torch.isfinite(vals)
        ref_el = [[] for _ in range(b)]
        for i, v, ok, ww in zip(_np(f.sample), _np(vals), _np(f.valid), _np(w)):
            if ok and ww:
                ref_el[i].append(float(v))
        np.testing.assert_array_equal(_np(seg_count(f, w)), [len(e) for e in ref_el])
        np.testing.assert_array_equal(_np(seg_any(f, w)), [len(e) > 0 for e in ref_el])
        np.testing.assert_array_equal(_np(seg_all(f, ~w)), [len(e) == 0 for e in ref_el])
        ref_fin = [[v for v in e if math.isfinite(v)] for e in ref_el]
        wf = w & fin
        np.testing.assert_array_equal(_np(seg_min(f, where=wf)), [min(e, default=INF) for e in ref_fin])
        np.testing.assert_array_equal(_np(seg_max(f, where=wf)), [max(e, default=-INF) for e in ref_fin])
        np.testing.assert_allclose(_np(seg_sum(f, where=wf)), [math.fsum(e) for e in ref_fin], rtol=1e-12,
                                   atol=1e-6)
        std, _, n = seg_std(f, where=wf)
        np.testing.assert_array_equal(_np(n), [len(e) for e in ref_fin])
        np.testing.assert_allclose(_np(std), [np.std(e) if e else 0.0 for e in ref_fin], rtol=1e-9, atol=1e-9)
        # NaN-aware sum over all where-elements: inf - inf = nan, like numpy
        with np.errstate(invalid="ignore"):
            ref_sum = [np.sum(e) if e else 0.0 for e in ref_el]
        np.testing.assert_allclose(_np(seg_sum(f, where=w)), ref_sum, rtol=1e-12, atol=1e-6, equal_nan=True)


# ------------------------------------------------------------------------------------------------ numeric checks

def test_nonfinite():
    f = from_arrow(pa.array([[1.0, NAN], [INF], [-INF, 2.0], [], None, [1.0, 2.0], [NAN, INF, -INF]],
                            pa.list_(pa.float32())))
    check("nonfinite", f, [1, 1, 1, 0, 0, 0, 1], [1, 1, 1, 0, 0, 0, 3])
    g = from_arrow(pa.array([[1, 2], [2 ** 40]], pa.list_(pa.int64())))
    check("nonfinite", g, [0, 0], [0, 0])
    h = from_arrow(pa.array([[NAN]], pa.list_(pa.float16())))
    check("nonfinite", h, [1], [1])


def test_extreme_span():
    f = from_arrow(pa.array([[0.0, 1e4], [0.0, 10001.0], [INF, 0.0, 1.0], [], None, [NAN], [-5000.0, 5001.0],
                             [3.0]], pa.list_(pa.float64())))
    check("extreme_span", f, [0, 1, 0, 0, 0, 0, 1, 0], [1e4, 10001, 1, 0, 0, 0, 10001, 0])
    check("extreme_span", f, [0, 0, 0, 0, 0, 0, 0, 0], [1e4, 10001, 1, 0, 0, 0, 10001, 0], threshold=2e4)
    g = from_arrow(pa.array([[-(2 ** 62), 2 ** 62], [1, 10002]], pa.list_(pa.int64())))  # no int overflow
    check("extreme_span", g, [1, 1], [2.0 ** 63, 10001])


def test_constant_two_pass_std():
    rows = [
        [1e6] * 5,                              # constant at a large offset: flagged (std exactly 0)
        [1e6 + 1e-5 * k for k in range(5)],     # tiny real variation on the offset: not flagged
        [5.0],                                  # one element: never constant
        [],
        [NAN, 3.0, 3.0],                        # finite elements constant
        [0.0, 1.0],
        [7.0, INF],                             # one finite element
    ]
    f = from_arrow(pa.array(rows, pa.list_(pa.float64())))
    out = run("constant", f)
    flags, values = host(out)
    assert flags.tolist() == [True, False, False, False, True, False, False]
    assert values[0] == 0.0 and values[4] == 0.0 and values[5] == 0.5 and values[2] == 0.0
    assert values[1] == pytest.approx(np.std(np.array(rows[1]) - 1e6), rel=1e-6)
    naive = np.sqrt(abs(np.mean(np.square(rows[1])) - np.mean(rows[1]) ** 2))  # what a one-pass std gives
    assert abs(naive - np.std(np.array(rows[1]) - 1e6)) > 1e-6  # ... would be wrong by more than the threshold
    f32 = from_tensor(torch.full((2, 4096), 1e6, dtype=torch.float32).index_fill_(0, torch.tensor([1]), 3.0))
    check("constant", f32, [1, 1], [0, 0])
    check("constant", f, [True, False, False, False, False, False, False], values, min_elements=3)


def test_out_of_range():
    f = from_arrow(pa.array([[0.0, 1.0, 0.5], [-0.1, 1.1, NAN, INF], [], None, [-INF]], pa.list_(pa.float32())))
    check("out_of_range", f, [0, 1, 0, 0, 1], [0, 3, 0, 0, 1], min=0, max=1)
    check("out_of_range", f, [0, 1, 0, 0, 1], [0, 1, 0, 0, 1], min=0)
    check("out_of_range", f, [0, 1, 0, 0, 0], [0, 2, 0, 0, 0], max=1)
    check("out_of_range", f, [0, 0, 0, 0, 0], [0, 0, 0, 0, 0])
    g = from_arrow(pa.array([[0, 1], [2 ** 62]], pa.list_(pa.int64())))
    check("out_of_range", g, [1, 0], [1, 0], min=0.5)
    check("out_of_range", g, [0, 1], [0, 1], max=2 ** 61 + 0.5)
    check("out_of_range", g, [0, 0], [0, 0], max=2 ** 70)
    check("out_of_range", g, [1, 1], [2, 1], min=2 ** 70)


def test_out_of_range_narrow_int_tensor_no_wraparound(device):
    f = tensor_field(torch.tensor([[5, 100], [-3, 0]], dtype=torch.int8), device=device)
    check("out_of_range", f, [0, 0], [0, 0], min=-1000, max=1000)
    check("out_of_range", f, [1, 1], [1, 1], min=-2, max=99)


def test_dtype_mismatch():
    arr = pa.array([[1.0], [2.0], [3.0], [4.0], None], pa.list_(pa.float32()))
    f = from_arrow(arr, dtypes=pa.array(["float32", "int64", None, "float16", "int8"]))
    c = [DTYPE_CODE[n] for n in ("float32", "int64", "float32", "float16", "int8")]
    check("dtype_mismatch", f, [0, 1, 0, 0, 0], c, expected="float")  # the null sample is not judged
    check("dtype_mismatch", f, [0, 1, 0, 1, 0], c, expected="float32")
    check("dtype_mismatch", f, [1, 0, 1, 1, 0], c, expected="int")
    check("dtype_mismatch", f, [0, 0, 0, 1, 0], c, expected=["float32", "int"])
    out = run("dtype_mismatch", f, expected="float")
    assert out.detail[1] == "stored as int64, expected float"
    assert [dtype_name(v) for v in out.value.tolist()] == ["float32", "int64", "float32", "float16", "int8"]
    with pytest.raises(ValueError):
        run("dtype_mismatch", f, expected="complex")
    assert set(DTYPE_NAMES) >= {"float32", "int64", "bool"}


def test_dtype_mismatch_tensor(device):
    f = tensor_field(torch.zeros(3, 2, dtype=torch.bfloat16), device=device)
    check("dtype_mismatch", f, [0, 0, 0], [DTYPE_CODE["bfloat16"]] * 3, expected="float")
    check("dtype_mismatch", f, [1, 1, 1], [DTYPE_CODE["bfloat16"]] * 3, expected="bool")


# ------------------------------------------------------------------------------------------------ labels / tokens

def test_label_out_of_range_int():
    f = from_arrow(pa.array([[0, 9, -100], [-1], [10], [3, 11, -5], [], None, [-100]], pa.list_(pa.int64())))
    check("label_out_of_range", f, [0, 1, 1, 1, 0, 0, 0], [9, -1, 10, 11, 0, 0, 0], num_classes=10)
    check("label_out_of_range", f, [1, 1, 1, 1, 0, 0, 1], [-100, -1, 10, 11, 0, 0, -100], num_classes=10,
          ignore_index=None)
    s = from_arrow(pa.array([3, None, 10, -100, -1], pa.int32()))  # scalar label column
    check("label_out_of_range", s, [0, 0, 1, 0, 1], [3, 0, 10, 0, -1], num_classes=10)


def test_label_out_of_range_float():
    f = from_arrow(pa.array([[NAN], [2.0, NAN, 12.0], [-100.0], [-INF, 1.0], [1.0, NAN, -3.0], [9.0]],
                            pa.list_(pa.float32())))
    check("label_out_of_range", f, [1, 1, 0, 1, 1, 0], [NAN, 12, 0, -INF, -3, 9], num_classes=10)


def test_token_id_out_of_range_arrow():
    ids = pa.array([[0, 99], [100], [-1, 5], [5, 200, -3], [], None], pa.list_(pa.int32()))
    t = tokens_from_arrow(ids)
    check("token_id_out_of_range", t, [0, 1, 1, 1, 0, 0], [99, 100, -1, 200, 0, 0], vocab_size=100)


def test_token_checks_padded_tensor(device):
    ids = torch.tensor([[5, 6, 7, 0, 0],
                        [99, 0, 0, 0, 0],
                        [0, 0, 0, 0, 0],
                        [100, 1, 2, 3, 4],
                        [0, 0, 0, 0, 0]])
    mask = torch.tensor([[1, 1, 1, 0, 0],
                         [1, 0, 0, 0, 0],
                         [0, 0, 0, 0, 0],
                         [1, 1, 1, 1, 1],
                         [1, 1, 0, 0, 0]])
    ids[1, 3] = 123456  # garbage under the mask: ignored by the id check, a mask-0 non-pad for mask_mismatch
    t = tensor_tokens(ids, mask, device)
    check("token_id_out_of_range", t, [0, 0, 0, 1, 0], [7, 99, 0, 100, 0], vocab_size=100)
    check("too_long", t, [0, 0, 0, 1, 0], [3, 1, 0, 5, 2], context_length=4)
    check("all_padding", t, [0, 0, 1, 0, 1], [3, 1, 0, 5, 2], pad_id=0)
    check("all_padding", t, [0, 0, 1, 0, 0], [3, 1, 0, 5, 2])
    check("mask_mismatch", t, [0, 1, 0, 0, 1], [0, 1, 0, 0, 2], pad_id=0)
    check("mask_mismatch", t, [0, 1, 0, 0, 0], [0, 1, 0, 0, 0], pad_id=0, pad_in_content_ok=True)
    check("mask_mismatch", t, [0, 0, 0, 0, 0], [0, 0, 0, 0, 0])
    nomask = tensor_tokens(ids, None, device)
    check("too_long", nomask, [1] * 5, [5] * 5, context_length=4)
    check("all_padding", nomask, [0, 0, 1, 0, 1], [5] * 5, pad_id=0)
    check("mask_mismatch", nomask, [0] * 5, [0] * 5, pad_id=0)


def test_mask_longer_than_ids_tensor(device):
    t = tensor_tokens(torch.tensor([[5, 6], [7, 0]]), torch.ones((2, 3), dtype=torch.int64), device)
    check("mask_mismatch", t, [1, 1], [-1, -1], pad_id=0)
    check("too_long", t, [1, 1], [3, 3], context_length=2)
    check("token_id_out_of_range", t, [0, 0], [6, 7], vocab_size=8)


def test_mask_mismatch_ragged_arrow():
    ids = pa.array([[5, 6, 0], [5, 6], [5, 0], [7, 8], [1, 2], [], None, [3]], pa.list_(pa.int64()))
    mask = pa.array([[1, 1, 0], [1, 1, 1], [1, 1], [1, 0], [1, 2], [], None, []], pa.list_(pa.int8()))
    t = tokens_from_arrow(ids, mask)
    check("mask_mismatch", t, [0, 1, 1, 1, 1, 0, 0, 1], [0, -1, 1, 1, 1, 0, 0, -1], pad_id=0)
    check("mask_mismatch", t, [0, 1, 0, 1, 1, 0, 0, 1], [0, -1, 0, 1, 1, 0, 0, -1], pad_id=0,
          pad_in_content_ok=True)
    check("mask_mismatch", t, [0, 1, 0, 0, 1, 0, 0, 1], [0, -1, 0, 0, 1, 0, 0, -1])
    # valid ids follow the mask where the lengths agree
    assert _np(t.ids.valid).tolist() == [1, 1, 0, 1, 1, 1, 1, 1, 0, 1, 1, 1]
    check("all_padding", t, [0, 0, 0, 0, 0, 1, 0, 1], [2, 2, 2, 1, 2, 0, 0, 1], pad_id=0)
    check("too_long", t, [0, 1, 0, 0, 0, 0, 0, 0], [2, 3, 2, 1, 2, 0, 0, 0], context_length=2)
    allpad = tokens_from_arrow(pa.array([[0, 0], [0, 4]], pa.list_(pa.int64())))
    check("all_padding", allpad, [1, 0], [2, 2], pad_id=0)
    assert tokens_from_arrow(pa.array([[1]], pa.list_(pa.int64()))).mask is None


# ------------------------------------------------------------------------------------------------ same data, both ways

NUMERIC_PARAMS = {
    "nonfinite": {},
    "extreme_span": {},
    "constant": {},
    "out_of_range": {"min": -1.0, "max": 1.0},
    "dtype_mismatch": {"expected": "float"},
}

HAND_ROWS = [
    [0.5, NAN, 0.25],
    [INF],
    [-INF, 2.0],
    [],
    [0.0, 1e4],
    [0.0, 10001.0],
    [1e6, 1e6, 1e6],
    [1e6, 1e6 + 0.0625, 1e6, 1e6 - 0.0625],
    [3.0],
    [-1.5, 1.5, 0.1, 0.2, 0.3],
]


def _assert_same(a, b, name, exact=True):
    """Identical flags; identical values (CPU), or equal to rounding where CUDA reduces in another order."""
    fa, va = host(a)
    fb, vb = host(b)
    np.testing.assert_array_equal(fa, fb, err_msg=f"{name}: flags differ")
    if exact:
        np.testing.assert_array_equal(va, vb, err_msg=f"{name}: values differ")
    else:
        np.testing.assert_allclose(va, vb, rtol=1e-9, atol=1e-12, equal_nan=True, err_msg=f"{name}: values")


def _numeric_both_ways(rows, dtype_pa, dtype_t, device, garbage=NAN, exact=True):
    ragged = from_arrow(pa.array(rows, pa.list_(dtype_pa)))
    x, m = pad(rows, garbage, dtype_t)
    padded = tensor_field(x, m, device)
    for name, params in NUMERIC_PARAMS.items():
        a = run(name, ragged, **params)
        b = run(name, padded, **params)
        _assert_same(a, b, name, exact)


@pytest.mark.parametrize("dtype", [(pa.float32(), torch.float32), (pa.float64(), torch.float64),
                                   (pa.float16(), torch.float16)], ids=["f32", "f64", "f16"])
@pytest.mark.parametrize("garbage", [NAN, 1e30, -INF], ids=["nan", "big", "-inf"])
def test_numeric_same_both_ways_hand(dtype, garbage, device):
    if dtype[1] == torch.float16 and garbage == 1e30:
        garbage = 60000.0
    _numeric_both_ways(HAND_ROWS, dtype[0], dtype[1], device, garbage, exact=device == "cpu")


def test_numeric_same_both_ways_int(device):
    rows = [[1, 2, 3], [], [7, 7], [0, 20000], [-(2 ** 40)]]
    _numeric_both_ways(rows, pa.int64(), torch.int64, device, garbage=2 ** 50, exact=device == "cpu")


def test_numeric_same_both_ways_3d(device):
    # per-token vectors: Arrow list<fixed_size_list<3>> vs [B, T, 3] + mask [B, T]
    rows = [[[1.0, 2.0, NAN], [4.0, 5.0, 6.0]], [], [[1e6, 1e6, 1e6]]]
    ragged = from_arrow(pa.array(rows, pa.list_(pa.list_(pa.float32(), 3))))
    x = torch.full((3, 2, 3), 1e30)
    x[0] = torch.tensor(rows[0])
    x[2, 0] = torch.tensor(rows[2][0])
    m = torch.tensor([[1, 1], [0, 0], [1, 0]])
    padded = tensor_field(x, m, device)
    for name, params in NUMERIC_PARAMS.items():
        _assert_same(run(name, ragged, **params), run(name, padded, **params), name, exact=device == "cpu")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(st.lists(_floats, max_size=9), min_size=1, max_size=8))
def test_numeric_same_both_ways_random(rows):
    _numeric_both_ways(rows, pa.float32(), torch.float32, "cpu")
    # and a fixed-size Arrow column (dense layout) against the ragged one
    width = max(len(r) for r in rows)
    full = [r + [0.0] * (width - len(r)) for r in rows]
    a = from_arrow(pa.array(full, pa.list_(pa.float32(), width))) if width else None
    b = from_arrow(pa.array(full, pa.list_(pa.float32())))
    if a is not None:
        for name, params in NUMERIC_PARAMS.items():
            _assert_same(run(name, a, **params), run(name, b, **params), name)


def test_labels_same_both_ways(device):
    rows = [[0, 9, -100], [-1], [10], [3, 11, -5], [], [-100, -100]]
    ragged = from_arrow(pa.array(rows, pa.list_(pa.int64())))
    x, m = pad(rows, 777, torch.int64)
    masked = tensor_field(x, m, device)
    x2, _ = pad(rows, -100, torch.int64)  # padded with ignore_index, no mask
    ignored = tensor_field(x2, None, device)
    for f in (masked, ignored):
        _assert_same(run("label_out_of_range", ragged, num_classes=10),
                     run("label_out_of_range", f, num_classes=10), "label_out_of_range")
    frows = [[NAN], [2.0, NAN, 12.0], [-100.0], [1.0, NAN, -3.0]]
    xf, mf = pad(frows, NAN, torch.float32)
    _assert_same(run("label_out_of_range", from_arrow(pa.array(frows, pa.list_(pa.float32()))), num_classes=10),
                 run("label_out_of_range", tensor_field(xf, mf, device), num_classes=10),
                 "label_out_of_range float")


TOKEN_ROWS = [[5, 6, 7], [99], [], [100, 1, 2, 3, 4], [0, 0], [-1, 5], [0, 8, 0], [1, 2, 3, 4, 5, 6]]
TOKEN_PARAMS = {
    "token_id_out_of_range": {"vocab_size": 100},
    "too_long": {"context_length": 4},
    "all_padding": {"pad_id": 0},
    "mask_mismatch": {"pad_id": 0},
}


@pytest.mark.parametrize("with_mask_column", [False, True])
def test_tokens_same_both_ways(with_mask_column, device):
    ids_col = pa.array(TOKEN_ROWS, pa.list_(pa.int32()))
    mask_col = pa.array([[1] * len(r) for r in TOKEN_ROWS], pa.list_(pa.int8())) if with_mask_column else None
    ragged = tokens_from_arrow(ids_col, mask_col)
    ids, mask = pad(TOKEN_ROWS, 0, torch.int64, width=7)
    padded = tensor_tokens(ids, mask, device)
    for name, params in TOKEN_PARAMS.items():
        if name == "mask_mismatch" and not with_mask_column:
            # without a mask column the ragged data cannot show pad-in-content; with it the padded one can
            params = {**params, "pad_in_content_ok": True}
        _assert_same(run(name, ragged, **params), run(name, padded, **params), name)
    # all_padding / too_long without pad_id
    for name, params in (("all_padding", {}), ("too_long", {"context_length": 2})):
        _assert_same(run(name, ragged, **params), run(name, padded, **params), name)


def test_tokens_padded_arrow_with_mask_same_as_tensor(device):
    # Arrow data that is itself padded (ids and mask columns of equal length) vs the same as a tensor
    ids, mask = pad(TOKEN_ROWS, 0, torch.int64, width=7)
    ids_col = pa.array(ids.tolist(), pa.list_(pa.int64()))
    mask_col = pa.array(mask.tolist(), pa.list_(pa.int64()))
    ragged = tokens_from_arrow(ids_col, mask_col)
    by_hand = TokenFields(from_arrow(ids_col), from_arrow(mask_col))  # ids.valid unset: derived from the mask
    padded = tensor_tokens(ids, mask, device)
    for name, params in {**TOKEN_PARAMS, "mask_mismatch": {"pad_id": 0}}.items():
        _assert_same(run(name, ragged, **params), run(name, padded, **params), name)
        _assert_same(run(name, by_hand, **params), run(name, padded, **params), name)
    assert by_hand.ids.valid is None  # not mutated


# ------------------------------------------------------------------------------------------------ no host sync

ALL_PARAMS = {**NUMERIC_PARAMS, **TOKEN_PARAMS, "label_out_of_range": {"num_classes": 10}}


def _all_checks_on(field_num, field_lab, tokens):
    for name, params in ALL_PARAMS.items():
        spec = REGISTRY[name]
        arg = {"numeric": field_num, "label": field_lab, "tokens": tokens}[spec.target]
        out = spec.fn(arg, **{**spec.params, **params})
        assert out.flagged.shape == (4,) and out.value.dtype == torch.float64, name


def test_no_data_dependent_ops_meta_device():
    """Proxy for 'no host sync' that runs without a GPU: on the meta device every data-dependent op (.item(),
    bool(), nonzero, boolean-mask indexing, repeat_interleave by a tensor) raises, so the guard path must not
    use any. Covers the dense layout (from_tensor), the generic scatter layout (a hand-built field) and a mask
    longer than the ids."""
    meta = torch.device("meta")
    x = torch.empty(4, 8, device=meta)
    m = torch.empty(4, 8, dtype=torch.int64, device=meta)
    ids = torch.empty(4, 8, dtype=torch.int64, device=meta)
    for lab_dtype in (torch.int64, torch.float32):
        _all_checks_on(from_tensor(x, m), from_tensor(torch.empty(4, 8, dtype=lab_dtype, device=meta), m),
                       tokens_from_tensor(ids, m))
    long_mask = torch.empty(4, 9, dtype=torch.int64, device=meta)
    _all_checks_on(from_tensor(x), from_tensor(ids), tokens_from_tensor(ids, long_mask))

    def hand_built(v):  # no cached layout: the scatter path
        return NumericField(values=v, sample=torch.empty(7, dtype=torch.int64, device=meta), num_samples=4,
                            dtypes=torch.empty(4, dtype=torch.int8, device=meta),
                            valid=torch.empty(7, dtype=torch.bool, device=meta))
    f = hand_built(torch.empty(7, device=meta))
    t = TokenFields(ids=hand_built(torch.empty(7, dtype=torch.int64, device=meta)),
                    mask=hand_built(torch.empty(7, dtype=torch.int64, device=meta)))
    _all_checks_on(f, hand_built(torch.empty(7, dtype=torch.int64, device=meta)), t)
    for fn in (seg_sum, seg_count, seg_min, seg_max, seg_lengths):
        assert fn(f).shape == (4,)
    assert seg_any(f, f.values > 0).shape == (4,) and seg_std(f)[0].shape == (4,)
    with pytest.raises(Exception):  # the proxy does catch a sync
        torch.empty(1, device=meta).item()
