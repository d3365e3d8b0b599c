"""The guard checks image tensors (`pixel_values` & co., [B, C, H, W]): image_constant, image_value_range and
image_channels run by default beside nonfinite (which catches NaN / Inf on the same field), with exact flagged
positions under every policy; ragged samples in the collate guard are judged one by one; the dense fast path,
the masked device path and the generic segment path agree; nothing reads back to the host on a device."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from torch.utils.data import DataLoader

from dataaudit.checks import REGISTRY
from dataaudit.config import ConfigError, build_config
from dataaudit.guard import BadBatchError, CollateGuard, DeviceGuard, GuardPlan, load_snapshot
from dataaudit.guard.data import PadCollate
from dataaudit.tensors import from_arrow, from_tensor, with_shapes

IMAGE_CHECKS = ("image_constant", "image_value_range", "image_channels")
MEAN = np.array([0.485, 0.456, 0.406], np.float32).reshape(3, 1, 1)
STD = np.array([0.229, 0.224, 0.225], np.float32).reshape(3, 1, 1)
NAN_AT, CONSTANT_AT, UINT8_AT, INF_AT = 1, 2, 3, 5


def normalized(rng, shape=(3, 8, 8)) -> np.ndarray:
    """Pixels in [0, 1) normalized with ImageNet's statistics (a 0.45 / 0.225 average for other channel counts)."""
    mean, std = (MEAN, STD) if shape[0] == 3 and len(shape) == 3 else (0.45, 0.225)
    return ((rng.random(shape, dtype=np.float32) - mean) / std).astype(np.float32)


def planted_samples() -> list[dict]:
    """8 ImageNet-normalized samples: a NaN at 1, a blank (gray) image at 2, 0..255 pixels at 3, an Inf at 5."""
    rng = np.random.default_rng(7)
    out = []
    for i in range(8):
        x = normalized(rng)
        if i == NAN_AT:
            x[1, 2, 3] = np.nan
        if i == CONSTANT_AT:  # one gray, normalized per channel: a different value in each channel
            x = np.broadcast_to((0.5 - MEAN) / STD, (3, 8, 8)).astype(np.float32).copy()
        if i == UINT8_AT:     # forgot / 255 and the normalization
            x = rng.integers(0, 256, (3, 8, 8)).astype(np.float32)
            x[0, 0, 0] = 255.0
        if i == INF_AT:
            x[0, 4, 4] = np.inf
        out.append({"pixel_values": x, "__key__": f"k{i}", "__shard__": "s.tar"})
    return out


def loader(samples, batch_size=8):
    return DataLoader(samples, batch_size=batch_size, collate_fn=CollateGuard(PadCollate(0), checks=()))


def flags(res) -> dict:
    d = res.to_dict()
    return {label: [i for i, f in enumerate(r["flagged"]) if f] for label, r in d.items()}


def test_default_checks_on_a_pixel_values_batch():
    batch = next(iter(loader(planted_samples())))
    plan = GuardPlan(None)
    res = plan.run({k: v for k, v in batch.items() if not k.startswith("__")})
    assert [c.label for c in res.calls] == ["image_constant:pixel_values", "image_value_range:pixel_values",
                                           "image_channels:pixel_values", "nonfinite:pixel_values"]
    # NaN / Inf: nonfinite on the same field; the image checks look at the finite values only
    assert flags(res) == {"image_constant:pixel_values": [CONSTANT_AT], "image_value_range:pixel_values": [UINT8_AT],
                          "image_channels:pixel_values": [], "nonfinite:pixel_values": [NAN_AT, INF_AT]}
    d = res.to_dict()
    assert d["image_value_range:pixel_values"]["value"][UINT8_AT] == 255.0
    assert d["image_constant:pixel_values"]["value"][CONSTANT_AT] == 0.0
    assert d["image_channels:pixel_values"]["value"] == [3.0] * 8
    assert max(d["image_value_range:pixel_values"]["value"][i] for i in (0, 4, 6, 7)) < 2.7  # ImageNet range
    assert {c.check: dict(c.params) for c in res.calls if c.check in IMAGE_CHECKS} == {
        "image_constant": {"max_span": 1e-6, "layout": "chw"},
        "image_value_range": {"expected": "normalized", "min": None, "max": None, "layout": "chw"},
        "image_channels": {"channels": [1, 3], "layout": "chw"}}
    # the image checks computed each channel's min and max; nonfinite read its row min / max from them
    f = from_tensor(batch["pixel_values"])
    for name in ("image_constant", "image_value_range", "nonfinite"):
        REGISTRY[name].fn(f)
    assert "row_sum" not in f.__dict__["_memo"] and "row_amin" in f.__dict__["_memo"]


@pytest.mark.parametrize("policy", ["warn", "mask", "skip"])
def test_policies_act_on_exactly_the_bad_samples(policy):
    g = DeviceGuard(loader(planted_samples(), batch_size=4), None, policy=policy, profile=False)
    out = list(g)
    found = sorted((f.step * 4 + f.position, f.check, f.key, f.action) for f in g.findings)
    act = {"warn": "warned", "mask": "masked", "skip": "skipped"}[policy]
    assert found == [(NAN_AT, "nonfinite", "k1", act), (CONSTANT_AT, "image_constant", "k2", "warned"),
                     (UINT8_AT, "image_value_range", "k3", act), (INF_AT, "nonfinite", "k5", act)]
    if policy == "skip":  # the device guard drops whole batches: both hold an error
        assert out == [] and len(g.bad_batches) == 2
        return
    assert len(out) == 2
    x = torch.cat([b["pixel_values"] for b in out])
    plain = torch.from_numpy(np.stack([s["pixel_values"] for s in planted_samples()]))
    bad = [NAN_AT, UINT8_AT, INF_AT]
    keep = [i for i in range(8) if i not in bad]
    assert torch.equal(x[keep], plain[keep])  # the warned constant image (warning) goes through untouched
    if policy == "mask":
        assert (x[bad] == 0).all()
        assert torch.cat([b["loss_weight"] for b in out]).tolist() == [1, 0, 1, 0, 1, 0, 1, 1]
    else:
        assert torch.equal(torch.nan_to_num(x), torch.nan_to_num(plain))


def test_collate_drop_removes_exactly_the_flagged_samples():
    cg = CollateGuard(PadCollate(0), drop=True, act_on=("error", "warning"))
    batch = cg(planted_samples())
    assert [(d["key"], d["checks"]) for d in batch["__guard__"]["dropped"]] == [
        ("k1", ["nonfinite:pixel_values"]), ("k2", ["image_constant:pixel_values"]),
        ("k3", ["image_value_range:pixel_values"]), ("k5", ["nonfinite:pixel_values"])]
    assert batch["__key__"] == ["k0", "k4", "k6", "k7"] and batch["pixel_values"].shape == (4, 3, 8, 8)


def test_raise_names_the_samples_and_the_snapshot_reproduces(tmp_path):
    g = DeviceGuard(loader(planted_samples()), None, policy="raise", profile=False, snapshot_dir=tmp_path)
    with pytest.raises(BadBatchError) as ei:
        list(g)
    msg = str(ei.value)
    assert "image_value_range:pixel_values at [3=s.tar:k3] (values outside the normalized range (largest " \
           "|value| 255))" in msg
    assert "nonfinite:pixel_values at [1=s.tar:k1, 5=s.tar:k5]" in msg
    assert "image_constant" not in msg  # the message names the acting (error) checks; the warning is a finding
    assert {(f.key, f.check, f.severity, f.action) for f in ei.value.findings} == {
        ("k1", "nonfinite", "error", "raised"), ("k2", "image_constant", "warning", "warned"),
        ("k3", "image_value_range", "error", "raised"), ("k5", "nonfinite", "error", "raised")}
    snap = load_snapshot(ei.value.snapshot)
    assert {(f["key"], f["check"]) for f in snap.findings()} == {
        ("k1", "nonfinite"), ("k2", "image_constant"), ("k3", "image_value_range"), ("k5", "nonfinite")}
    assert snap.verify()


def test_channel_count_per_batch_and_per_sample():
    rng = np.random.default_rng(1)
    # a stacked batch has one channel count: RGBA flags every sample, grayscale none
    res = GuardPlan(None).run({"pixel_values": torch.from_numpy(np.stack([normalized(rng, (4, 8, 8))] * 3))})
    assert flags(res)["image_channels:pixel_values"] == [0, 1, 2]
    assert res.to_dict()["image_channels:pixel_values"]["value"] == [4.0] * 3
    res = GuardPlan(None).run({"images": torch.zeros(2, 1, 4, 4) + torch.arange(16.0).view(1, 1, 4, 4) / 16})
    assert flags(res)["image_channels:images"] == []
    # a list of samples (collate guard): each its own shape; a 2-dim sample is not an image tensor (-1)
    samples = [{"pixel_values": normalized(rng, (3, 8, 8))}, {"pixel_values": normalized(rng, (4, 6, 6))},
               {"pixel_values": normalized(rng, (3, 5, 7))}, {"pixel_values": normalized(rng, (3, 8, 8))[0]},
               {"pixel_values": normalized(rng, (1, 8, 8))}]
    res, *_ = CollateGuard(lambda s: s).check(samples)
    assert flags(res)["image_channels:pixel_values"] == [1, 3]
    assert res.to_dict()["image_channels:pixel_values"]["value"] == [3.0, 4.0, 3.0, -1.0, 1.0]
    assert flags(res)["image_value_range:pixel_values"] == [] and flags(res)["image_constant:pixel_values"] == []


def test_channels_last_layout_from_data_and_uint8_images():
    rng = np.random.default_rng(2)
    x = rng.integers(0, 256, (4, 8, 8, 3)).astype(np.uint8)
    x[1] = 17                        # blank
    x[2, :, :, 0], x[2, :, :, 1], x[2, :, :, 2] = 10, 20, 30  # solid color: each channel one value
    x[3, :, :, 0] = 10               # one constant channel only: not blank
    cfg = build_config({"data": {"image_layout": "hwc"}, "checks": {"image_value_range": {"expected": "uint8"}}})
    plan = GuardPlan(cfg)
    res = plan.run({"img": torch.from_numpy(x)})
    # uint8 is an image tensor (not numeric: nonfinite has nothing to do)
    assert [c.label for c in res.calls] == ["image_constant:img", "image_value_range:img", "image_channels:img"]
    assert flags(res) == {"image_constant:img": [1, 2], "image_value_range:img": [], "image_channels:img": []}
    # the same uint8 pixels where normalized floats are expected (the default): every non-dark image is out
    res = GuardPlan(build_config({"data": {"image_layout": "hwc"}})).run({"img": torch.from_numpy(x)})
    assert flags(res)["image_value_range:img"] == [0, 1, 2, 3]
    # read as channels first, [8, 8, 3] has 8 channels
    res = GuardPlan(None).run({"img": torch.from_numpy(x)})
    assert flags(res)["image_channels:img"] == [0, 1, 2, 3]
    assert res.to_dict()["image_channels:img"]["value"] == [8.0] * 4
    with pytest.raises(ConfigError, match="image_layout must be one of chw, hwc"):
        build_config({"data": {"image_layout": "nhwc"}})
    with pytest.raises(ValueError, match="unknown expected 'imagenet'"):
        GuardPlan(build_config({"checks": {"image_value_range": {"expected": "imagenet"}}})).run(
            {"img": torch.from_numpy(x)})


def test_value_range_per_expected_normalization():
    x = torch.zeros(5, 3, 4, 4)
    x[0] += torch.linspace(-2, 2.6, 48).view(3, 4, 4)   # normalized
    x[1] += torch.linspace(0, 1, 48).view(3, 4, 4)      # unit
    x[2] += torch.linspace(0, 255, 48).view(3, 4, 4)    # uint8 range
    x[3] += torch.linspace(-1.05, 1.05, 48).view(3, 4, 4)
    x[4] += torch.linspace(-0.05, 1.05, 48).view(3, 4, 4)  # resize overshoot of unit floats
    fn = REGISTRY["image_value_range"].fn
    got = {e: fn(from_tensor(x), expected=e).flagged.tolist() for e in ("normalized", "unit", "uint8")}
    assert got == {"normalized": [False, False, True, False, False], "unit": [True, False, True, True, False],
                   "uint8": [True, False, False, True, True]}
    assert fn(from_tensor(x), expected="unit", max=300.0).flagged.tolist() == [True, False, False, True, False]
    assert fn(from_tensor(x)).value.tolist() == pytest.approx([2.6, 1.0, 255.0, 1.05, 1.05])


def test_a_batch_without_images_and_configured_names():
    plan = GuardPlan(None)
    plan.run({"features": torch.randn(2, 16), "pixels": torch.randn(2, 8, 8)})  # [H, W]: no image tensor
    assert [c.check for c in plan.calls] == ["nonfinite", "nonfinite"]
    assert plan.skipped["image_channels"] == "no image_tensor field in the batch"
    plan = GuardPlan(None, fields={"image_tensor": "frames"})
    plan.run({"frames": torch.rand(2, 3, 4, 4), "pixel_values": torch.rand(2, 3, 4, 4)})
    assert {(p.target, p.name) for p in plan.fields} == {
        ("image_tensor", "frames"), ("numeric", "frames"), ("numeric", "pixel_values")}
    plan = GuardPlan(None, fields={"image_tensor": "frames"})
    plan.run({"frames": torch.rand(2, 4, 4)})
    assert plan.problems == ("column 'frames' (image_tensor) is tensor float32, expected an image tensor (float "
                             "or uint8, [C, H, W] per sample): its checks are skipped",)
    cfg = build_config({"fields": {"image_tensor": "frames"}})
    assert cfg.fields["image_tensor"] == "frames"
    with pytest.raises(ConfigError, match="image_tensor must be one column name"):
        build_config({"fields": {"image_tensor": ["a", "b"]}})
    # an int64 [B, 3, H, W] (e.g. a segmentation map) is no image tensor
    plan = GuardPlan(None)
    plan.run({"pixel_values": torch.zeros(2, 3, 4, 4, dtype=torch.int64)})
    assert plan.fields == ()


# ------------------------------------------------------------------------------------------------ paths agree

_px = st.one_of(st.floats(-300, 300, width=32), st.sampled_from([math.nan, math.inf, -math.inf, 0.0, 0.5]))


def _ragged(x: torch.Tensor) -> object:
    """The same samples as the collate guard's / the audit's ragged field: from_arrow + with_shapes."""
    import pyarrow as pa

    arr = pa.array([s.reshape(-1).tolist() for s in x.double().numpy()], pa.list_(pa.float64()))
    return with_shapes(from_arrow(arr), [list(x.shape[1:])] * x.shape[0], 3)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), b=st.integers(1, 4), c=st.integers(1, 4), h=st.integers(1, 3), w=st.integers(1, 3),
       layout=st.sampled_from(["chw", "hwc"]), constant=st.booleans())
def test_dense_masked_and_generic_paths_agree(data, b, c, h, w, layout, constant):
    vals = data.draw(st.lists(_px, min_size=b * c * h * w, max_size=b * c * h * w))
    x = torch.tensor(vals, dtype=torch.float32).reshape(b, c, h, w)
    if constant:
        x[0] = 0.25
    if layout == "hwc":
        x = x.permute(0, 2, 3, 1).contiguous()
    for name in IMAGE_CHECKS:
        params = {"layout": layout}
        fast = REGISTRY[name].fn(from_tensor(x), **params)
        slow = REGISTRY[name].fn(_ragged(x), **params)
        for a, other in ((fast, slow), (fast, _device_path(name, x, params))):
            np.testing.assert_array_equal(a.flagged.numpy(), other.flagged.numpy(), err_msg=name)
            np.testing.assert_array_equal(a.value.numpy(), other.value.numpy(), err_msg=name)
    if constant:
        assert REGISTRY["image_constant"].fn(from_tensor(x), layout=layout).flagged[0]


def _device_path(name: str, x: torch.Tensor, params: dict):
    """The checks' device path (masked per-channel reductions for every row at once, torch arithmetic), run on
    CPU tensors by turning the CPU fast path off."""
    from dataaudit.checks import image_tensor as it

    real = it._on_host
    it._on_host = lambda field: False
    try:
        out = REGISTRY[name].fn(from_tensor(x), **params)
    finally:
        it._on_host = real
    assert isinstance(out.flagged, torch.Tensor) and out.value.dtype == torch.float64
    return out


def test_no_host_read_on_a_device():
    """mask / warn / late raise with the image checks on the meta device (any data-dependent read raises)."""
    meta = torch.device("meta")
    batch = {"pixel_values": torch.empty(4, 3, 8, 8), "img": torch.empty(4, 8, 8, 3, dtype=torch.uint8)}
    for policy in ("mask", "warn", "raise"):
        g = DeviceGuard([batch], None, device=meta, policy=policy, checks="all", profile=False)
        out, _ = g.process(dict(batch))
        assert out["pixel_values"].device.type == "meta"
        assert [c.check for c in g.plan.calls][:3] == list(IMAGE_CHECKS)
        cfg = build_config({"fields": {"image_tensor": "img"}, "data": {"image_layout": "hwc"}})
        g = DeviceGuard([batch], cfg, device=meta, policy=policy, profile=False)
        out, _ = g.process(dict(batch))
        assert [c.label for c in g.plan.calls][:3] == ["image_constant:img", "image_value_range:img",
                                                      "image_channels:img"]
