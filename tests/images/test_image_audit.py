"""The audit runs the image tensor checks on WebDataset `.npy` images (their [C, H, W] from the reader's
`<name>.shape` column), and the field rule that picks an image tensor is the guard's: names, 3 dims, float or
uint8; a nested Parquet list carries no shape and is never one."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from dataaudit.audit.shard import audit_shard
from dataaudit.config import build_config
from dataaudit.fields import FieldSpec, arrow_columns, resolve_schema
from tests.builders import make_tar, npy_bytes

IMAGE_CHECKS = ("image_constant", "image_value_range", "image_channels")


def _image(rng, shape=(3, 8, 8)) -> np.ndarray:
    return ((rng.random(shape) - 0.45) / 0.225).astype(np.float32)


def image_tar(path, members_of) -> str:
    rng = np.random.default_rng(3)
    members = []
    for i in range(8):
        x = members_of(i, rng)
        members += [(f"s{i:02d}.txt", f"caption {i}".encode()), (f"s{i:02d}.pixel_values.npy", npy_bytes(x))]
    return str(make_tar(path, members))


def planted(i: int, rng) -> np.ndarray:
    x = _image(rng)
    if i == 1:
        x[2, 0, 5] = np.nan                               # nonfinite only
    if i == 2:
        x[:] = np.array([0.1, -0.2, 0.3], np.float32).reshape(3, 1, 1)  # blank, normalized per channel
    if i == 3:
        x = rng.integers(0, 256, (3, 8, 8)).astype(np.uint8)  # stored raw: uint8 pixels
        x[1, 1, 1] = 250
        x[x > 250] = 0
    if i == 4:
        x = _image(rng, (4, 8, 8))                        # RGBA
    if i == 5:
        x = _image(rng, (8, 8))                           # not 3-dim
    if i == 6:
        x = _image(rng, (1, 6, 5))                        # grayscale, another size: fine
    return x


def flag_rows(flags: pa.Table) -> list[tuple]:
    return sorted((r["row"], r["field"], r["check"], r["value"], r["detail"])
                  for r in flags.to_pylist() if r["check"] in (*IMAGE_CHECKS, "nonfinite"))


def test_audit_flags_webdataset_image_tensors(tmp_path):
    path = image_tar(tmp_path / "images.tar", planted)
    result, flags = audit_shard(path, build_config({}))
    summary = result.summary()
    assert summary["fields"]["image_tensor"] == ["pixel_values"] and summary["fields"]["numeric"] == ["pixel_values"]
    assert not any(c in summary["skipped"] for c in IMAGE_CHECKS)
    assert flag_rows(flags) == [
        (1, "pixel_values", "nonfinite", 1.0, "pixel_values[133] = nan"),   # [2, 0, 5] of [3, 8, 8], flattened
        (2, "pixel_values", "image_constant", 0.0,
         "every channel holds one value (largest channel span 0 <= 1e-06)"),
        (3, "pixel_values", "image_value_range", 250.0,
         "values outside the normalized range (largest |value| 250)"),
        (4, "pixel_values", "image_channels", 4.0, "4 channel(s), expected one of [1, 3]"),
        (5, "pixel_values", "image_channels", -1.0, "not a 3-dim image tensor"),
    ]
    # the config drives it: raw uint8 pixels expected, layout, channels
    cfg = build_config({"checks": {"image_value_range": {"expected": "uint8"},
                                   "image_channels": {"channels": [1, 3, 4]}}})
    _, flags = audit_shard(path, cfg)
    got = {(r[0], r[2]) for r in flag_rows(flags)}
    assert got == {(1, "nonfinite"), (2, "image_constant"), (5, "image_channels"),
                   # normalized floats are negative: outside [0, 255] now
                   *((i, "image_value_range") for i in (0, 1, 2, 4, 5, 6, 7))}


def test_audit_uint8_only_tar_and_a_non_image_npy(tmp_path):
    def raw(i, rng):
        x = rng.integers(1, 256, (3, 4, 4)).astype(np.uint8)
        if i == 6:
            x[:] = 0
        return x

    cfg = build_config({"checks": {"image_value_range": {"expected": "uint8"}}})
    result, flags = audit_shard(image_tar(tmp_path / "raw.tar", raw), cfg)
    assert result.summary()["fields"].get("image_tensor") == ["pixel_values"]
    assert "numeric" not in result.summary()["fields"]  # uint8 pixels: no float column, no generic numeric checks
    assert flag_rows(flags) == [(6, "pixel_values", "image_constant", 0.0,
                                 "every channel holds one value (largest channel span 0 <= 1e-06)")]
    # int16 arrays named like images, and 2-dim ones, are no image tensors
    for name, make in (("int16", lambda i, rng: rng.integers(0, 9, (3, 4, 4)).astype(np.int16)),
                       ("flat", lambda i, rng: _image(rng, (4, 4)))):
        result, flags = audit_shard(image_tar(tmp_path / f"{name}.tar", make), build_config({}))
        assert "image_tensor" not in result.summary()["fields"], name
        assert not any(c in flags.column("check").to_pylist() for c in IMAGE_CHECKS)


def test_parquet_lists_have_no_shape_and_are_no_image_tensor(tmp_path):
    rng = np.random.default_rng(0)
    imgs = [_image(rng) for _ in range(3)]
    imgs[1][:] = 0.0
    nested = pa.array([x.tolist() for x in imgs], pa.list_(pa.list_(pa.list_(pa.float32()))))
    flat = pa.array([x.reshape(-1).tolist() for x in imgs], pa.list_(pa.float32()))
    pq.write_table(pa.table({"pixel_values": nested, "image": flat}), tmp_path / "p.parquet")
    result, flags = audit_shard(str(tmp_path / "p.parquet"), build_config({}))
    fields = result.summary()["fields"]
    assert "image_tensor" not in fields and fields["numeric"] == ["pixel_values", "image"]
    assert not any(c in flags.column("check").to_pylist() for c in IMAGE_CHECKS)


def test_the_rule_on_arrow_columns():
    schema = pa.schema([("pixel_values", pa.list_(pa.float64())), ("pixel_values.shape", pa.list_(pa.int64())),
                        ("pixel_values.dtype", pa.string()), ("image", pa.binary()), ("images", pa.list_(pa.string())),
                        ("img", pa.list_(pa.int64())), ("img.shape", pa.list_(pa.int64())),
                        ("img.dtype", pa.string())])

    def batch(px_shape, img_dtype):
        return pa.record_batch([pa.array([None, [0.5] * 12]), pa.array([None, px_shape], pa.list_(pa.int64())),
                                pa.array([None, "float32"]), pa.array([b"\x89PNG", b"\x89PNG"]),
                                pa.array([["a.jpg"], []]), pa.array([[1] * 12] * 2),
                                pa.array([[3, 2, 2]] * 2, pa.list_(pa.int64())), pa.array([img_dtype] * 2)],
                               schema=schema)

    # no sample batch (a Parquet footer): a column with its shapes stored beside it may be one
    f = resolve_schema(schema, FieldSpec())
    assert f.image_tensor == "pixel_values" and f.problems == ()
    assert {"pixel_values", "pixel_values.shape", "pixel_values.dtype"} <= set(f.columns())
    # with a sample batch: the first stored shape and dtype decide; `image` bytes / `images` paths are left alone
    assert resolve_schema(schema, FieldSpec(), batch([3, 2, 2], "uint8")).image_tensor == "pixel_values"
    assert resolve_schema(schema, FieldSpec(), batch([12], "uint8")).image_tensor == "img"
    assert resolve_schema(schema, FieldSpec(), batch([12], "int64")).image_tensor is None
    cols = {c.name: c for c in arrow_columns(schema, batch([3, 2, 2], "int16"))}
    assert (cols["pixel_values"].ndim, cols["pixel_values"].dtype) == (3, "float32")
    assert (cols["img"].ndim, cols["img"].dtype) == (3, "int16") and cols["image"].ndim is None
    f = resolve_schema(schema, FieldSpec(image_tensor="image"), batch([3, 2, 2], "uint8"))
    assert f.image_tensor is None and f.problems == (
        "column 'image' (image_tensor) is binary, expected an image tensor (float or uint8, [C, H, W] per "
        "sample): its checks are skipped",)
    assert f.roles()["image_tensor"] == []
    assert FieldSpec.from_config({"image_tensor": "img"}).configured() == {"image_tensor": ("img",)}
