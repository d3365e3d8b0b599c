"""The shared checks' CPU fast path (row reductions computed once, generic recount of suspect rows only) gives
the generic path's flags and values bit for bit; lazy fields; reduce-once sharing; no data-dependent op in the
guard's hot path (meta device)."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dataaudit.checks import REGISTRY
from dataaudit.checks.tokens import _class_range, _class_range_dense, _real_ids
from dataaudit.tensors import (
    DTYPE_CODE,
    NumericField,
    TokenFields,
    dense_rows,
    dense_view,
    from_tensor,
    has_memo,
    tokens_from_tensor,
    with_valid,
)

NAN, INF = math.nan, math.inf


def generic(x: torch.Tensor, mask: torch.Tensor | None = None) -> NumericField:
    """The same rows as a hand-built field with an explicit sample index: grouped layout -> generic path."""
    b = x.shape[0]
    per = x[0].numel() if b else 0
    f = NumericField(values=x.reshape(-1).clone(), sample=torch.arange(b).repeat_interleave(per), num_samples=b,
                     dtypes=torch.full((b,), DTYPE_CODE.get(str(x.dtype).replace("torch.", ""), 13),
                                       dtype=torch.int8),
                     valid=None if mask is None else (mask != 0).reshape(-1).clone())
    assert dense_rows(f) is None
    return f


def same(a, b, name):
    np.testing.assert_array_equal(a.flagged.numpy(), b.flagged.numpy(), err_msg=f"{name} flags")
    np.testing.assert_array_equal(a.value.numpy(), b.value.numpy(), err_msg=f"{name} values")


NUMERIC = {
    "nonfinite": [{}],
    "extreme_span": [{"threshold": 1e4}, {"threshold": 0.5}],
    "constant": [{"std_threshold": 1e-6, "min_elements": 2}],
    "out_of_range": [{"min": -100.0, "max": 100.0}, {"min": 0.25}, {"max": -0.5}, {"min": None, "max": None}],
    "dtype_mismatch": [{"expected": "float32"}, {"expected": "int"}],
}

_vals = st.one_of(st.floats(-1e3, 1e3, width=32), st.sampled_from([NAN, INF, -INF, 0.0, 3e38, -3e38, 1e5]))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.integers(1, 6), cols=st.integers(1, 9), data=st.data(),
       dtype=st.sampled_from([torch.float32, torch.float64, torch.float16, torch.int64, torch.int16]))
def test_numeric_fast_path_equals_generic(rows, cols, data, dtype):
    vals = data.draw(st.lists(_vals, min_size=rows * cols, max_size=rows * cols))
    x = torch.tensor(vals, dtype=torch.float64).reshape(rows, cols)
    if dtype.is_floating_point:
        x = x.to(dtype)
    else:
        x = torch.nan_to_num(x, nan=0.0, posinf=1e9, neginf=-1e9).clamp(-3e4, 3e4).to(dtype)
    for name, variants in NUMERIC.items():
        for params in variants:
            fast = from_tensor(x)
            assert dense_rows(fast) is not None
            same(REGISTRY[name].fn(fast, **params), REGISTRY[name].fn(generic(x), **params), f"{name} {params}")


def test_shared_reductions_in_any_order():
    x = torch.randn(8, 64)
    x[2, 5], x[5, 0], x[6, 1] = NAN, INF, 500.0
    ref = {n: REGISTRY[n].fn(generic(x), **NUMERIC[n][0]) for n in ("out_of_range", "nonfinite", "extreme_span",
                                                                    "constant")}
    f = from_tensor(x)
    for name in ("out_of_range", "nonfinite", "extreme_span", "constant"):  # min/max first, then reused
        same(REGISTRY[name].fn(f, **NUMERIC[name][0]), ref[name], name)
    assert has_memo(f, "row_amin") and has_memo(f, "row_amax") and not has_memo(f, "row_sum")
    g = from_tensor(x)
    for name in ("nonfinite", "constant", "extreme_span", "out_of_range"):  # sum first
        same(REGISTRY[name].fn(g, **NUMERIC[name][0]), ref[name], name)
    assert has_memo(g, "row_sum")
    assert REGISTRY["nonfinite"].fn(f).flagged.tolist() == [False, False, True, False, False, True, False, False]
    assert REGISTRY["out_of_range"].fn(f, min=-100.0, max=100.0).value.tolist() == [0, 0, 0, 0, 0, 1, 1, 0]


def test_row_sum_overflow_is_not_a_nonfinite_flag():
    x = torch.full((3, 4), 3e38)  # every row sum overflows to inf: suspects, cleared by the exact recount
    x[1, 2] = NAN
    out = REGISTRY["nonfinite"].fn(from_tensor(x))
    assert out.flagged.tolist() == [False, True, False] and out.value.tolist() == [0.0, 1.0, 0.0]


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), rows=st.integers(1, 6), width=st.integers(1, 8), dtype=st.sampled_from(
    [torch.int64, torch.int32, torch.int8]), pad=st.sampled_from([0, 3]), ignore=st.sampled_from([-100, None, 2.5]))
def test_label_and_token_fast_paths_equal_generic(data, rows, width, dtype, pad, ignore):
    lo, hi = (-128, 127) if dtype == torch.int8 else (-200, 1200)
    ids = torch.tensor(data.draw(st.lists(st.integers(lo, hi), min_size=rows * width, max_size=rows * width)),
                       dtype=dtype).reshape(rows, width)
    mask = torch.tensor(data.draw(st.lists(st.sampled_from([0, 1, 1, 1, 2]), min_size=rows * width,
                                           max_size=rows * width))).reshape(rows, width)
    if ignore == -100 and dtype != torch.int8:
        ids[0, 0] = -100
    kw = {"num_classes": 10, "ignore_index": ignore}
    same(REGISTRY["label_out_of_range"].fn(from_tensor(ids), **kw),
         REGISTRY["label_out_of_range"].fn(generic(ids), **kw), "label")
    same(REGISTRY["label_out_of_range"].fn(from_tensor(ids, mask), **kw),
         REGISTRY["label_out_of_range"].fn(generic(ids, mask), **kw), "label masked")
    # the torch dense path (what a GPU batch takes), run here on the CPU
    for f, g, what in ((from_tensor(ids), generic(ids), "label dense"),
                       (from_tensor(ids, mask), generic(ids, mask), "label dense masked")):
        same(_class_range_dense(f, dense_view(f, allow_valid=True), 10, ignore), _class_range(g, 10, ignore), what)
    fast = tokens_from_tensor(ids, mask)
    real = _real_ids(fast)
    same(_class_range_dense(real, dense_view(real, allow_valid=True), 1000, None),
         REGISTRY["token_id_out_of_range"].fn(TokenFields(ids=generic(ids), mask=generic(mask)), vocab_size=1000),
         "token dense")
    slow = TokenFields(ids=generic(ids), mask=generic(mask))  # ids.valid derived from the mask (generic path)
    params = {"token_id_out_of_range": {"vocab_size": 1000}, "too_long": {"context_length": 3},
              "all_padding": {"pad_id": pad}, "mask_mismatch": {"pad_id": pad, "pad_in_content_ok": False}}
    for name, p in params.items():
        same(REGISTRY[name].fn(fast, **p), REGISTRY[name].fn(slow, **p), name)
    same(REGISTRY["mask_mismatch"].fn(fast, pad_id=pad, pad_in_content_ok=True),
         REGISTRY["mask_mismatch"].fn(slow, pad_id=pad, pad_in_content_ok=True), "mask_mismatch ok")


def test_from_tensor_is_lazy_and_exact_on_demand():
    x = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    f = from_tensor(x)
    assert "_sample" in f.__dict__ and f.__dict__["_sample"] is None and f.__dict__.get("_dtypes") is None
    REGISTRY["nonfinite"].fn(f)
    REGISTRY["extreme_span"].fn(f)
    assert f.__dict__["_sample"] is None  # the dense path never built the index
    g = with_valid(f, None)
    assert g.__dict__["_sample"] is None and type(g) is type(f)
    assert f.sample.tolist() == [0] * 4 + [1] * 4 + [2] * 4 and f.dtypes.tolist() == [DTYPE_CODE["float32"]] * 3
    assert g.sample.tolist() == f.sample.tolist()
    out = REGISTRY["dtype_mismatch"].fn(from_tensor(x.double()), expected="float32")
    assert out.flagged.tolist() == [True] * 3 and out.detail[2] == "stored as float64, expected float32"


def test_guard_hot_path_has_no_data_dependent_op_on_meta():
    """mask / warn (and late raise) on a non-CPU device: checks, policy and staging read nothing back (meta
    raises on any data-dependent op: .item(), bool(), nonzero)."""
    from dataaudit.guard import DeviceGuard
    from dataaudit.config import build_config

    cfg = build_config({"data": {"num_classes": 10, "vocab_size": 100, "pad_id": 0, "context_length": 8},
                        "checks": {"out_of_range": {"min": -1.0, "max": 1.0}}})
    meta = torch.device("meta")
    batch = {"pixels": torch.empty(4, 3, 8, 8), "label": torch.zeros(4, dtype=torch.int64),
             "input_ids": torch.zeros(4, 8, dtype=torch.int64),
             "attention_mask": torch.ones(4, 8, dtype=torch.int64)}
    for policy in ("mask", "warn", "raise"):
        g = DeviceGuard([batch], cfg, device=meta, policy=policy, checks="all", profile=False)
        out, entry = g.process(dict(batch))
        # pixels [4, 3, 8, 8] is an image tensor too: 3 image checks (test_image_guard.py) besides the 9, and
        # missing_value on pixels, label and input_ids
        assert out["pixels"].device.type == "meta" and len(g.plan.calls) == 15
        assert g.plan.skipped == {"dtype_mismatch": "not configured: expected",
                                  "null_sample": "runs in the collate guard only",
                                  **dict.fromkeys(("no_trainable_tokens", "labels_misaligned", "label_id_out_of_range",
                                                   "eos_never_trained"), "no trained field in the batch")}
        if policy == "mask":
            assert out["loss_weight"].shape == (4,)
    with pytest.raises(Exception):  # the proxy does catch a host read
        bool(torch.empty(1, device=meta).any())


def test_acting_rows_take_no_host_built_index():
    """BatchChecks.rows picks the acting calls by views. Indexing with a Python list (aten.index) builds its index
    tensor on the host and copies it to the device: a host sync per batch on CUDA (the meta device hides the
    copy, so the op itself is what is refused here)."""
    from torch.utils._python_dispatch import TorchDispatchMode

    from dataaudit.guard.plan import BatchChecks, CheckCall

    class NoAdvancedIndexing(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            assert func is not torch.ops.aten.index.Tensor, "advanced indexing with a host-built index"
            return func(*args, **(kwargs or {}))

    calls = tuple(CheckCall(f"c{i}", "x", "error", ()) for i in range(3))
    checks = BatchChecks(calls, torch.zeros(3, 8, dtype=torch.bool, device="meta"),
                         torch.zeros(3, 8, dtype=torch.float64, device="meta"))
    with NoAdvancedIndexing():
        for acting in ([True, False, True], [False, True, False], [True] * 3, [False] * 3):
            out = checks.rows(acting)
            assert out.shape == (8,) and out.device.type == "meta"
    with pytest.raises(AssertionError, match="host-built index"), NoAdvancedIndexing():
        checks.flagged[[0, 2]].any(0)   # what rows() did before
