"""WebDataset member types beyond text and .npy: tenbin (.ten), msgpack (.mp), CBOR (.cbor) and .npz are decoded
without pickle and their arrays reach the numeric checks; a hostile header is refused before anything is allocated;
any other member type is kept as bytes and named unchecked (--strict fails), never dropped without a word."""
from __future__ import annotations

import io
import json
import math
import struct
import zipfile

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from dataaudit.cli import main
from dataaudit.sources import ERROR
from dataaudit.sources.tar_arrays import MemberError, decode_npz, decode_tenbin
from dataaudit.sources.webdataset_tar import iter_webdataset
from tests.builders import make_tar, npy_bytes


def _read(path) -> pa.Table:
    return pa.Table.from_batches(list(iter_webdataset(str(path))))


def _tenbin(*arrays: np.ndarray) -> bytes:
    from webdataset import tenbin    # the writer webdataset's TarWriter uses for .ten

    return bytes(tenbin.encode_buffer(list(arrays)))


def _npz(**arrays) -> bytes:
    buf = io.BytesIO()
    np.savez_compressed(buf, **arrays)
    return buf.getvalue()


def test_tenbin_msgpack_cbor_and_npz_members_are_decoded(tmp_path):
    msgpack, cbor2 = pytest.importorskip("msgpack"), pytest.importorskip("cbor2")
    pytest.importorskip("webdataset")
    bad = np.full((2, 3), 1.5, np.float32)
    bad[1, 2] = np.nan
    shard = make_tar(tmp_path / "s.tar", [
        ("a.ten", _tenbin(np.arange(6, dtype=np.float32).reshape(2, 3))),
        ("a.mp", msgpack.packb({"caption": "a red kite", "score": 0.5})),
        ("a.meta.cbor", cbor2.dumps({"source": "crawl", "tags": ["x", "y"]})),
        ("a.npz", _npz(emb=np.array([0.25, 0.5]))),
        ("b.ten", _tenbin(bad)),
        ("b.mp", msgpack.packb({"caption": "a blue kite", "score": float("inf")})),
        ("b.meta.cbor", cbor2.dumps({"source": "crawl", "tags": []})),
        ("b.npz", _npz(emb=np.array([1.0, 2.0]))),
    ])
    t = _read(shard)
    ten = t.column("ten").to_pylist()
    assert ten[0] == [0, 1, 2, 3, 4, 5] and ten[1][:5] == [1.5] * 5 and math.isnan(ten[1][5])
    assert t.column("ten.shape").to_pylist() == [[2, 3], [2, 3]]
    assert t.column("ten.dtype").to_pylist() == ["float32", "float32"]
    assert t.column("caption").to_pylist() == ["a red kite", "a blue kite"]
    assert t.column("meta.source").to_pylist() == ["crawl", "crawl"]
    assert t.column("npz.emb").to_pylist() == [[0.25, 0.5], [1.0, 2.0]]
    assert t.column(ERROR).to_pylist() == [None, None]
    out = tmp_path / "out"
    res = CliRunner().invoke(main, ["audit", str(shard), "--out", str(out), "--engine", "local"])
    assert res.exit_code == 1, res.output
    flags = sorted((f["key"], f["field"], f["check"]) for f in pq.read_table(out / "flags.parquet").to_pylist()
                   if f["severity"] == "error")
    assert flags == [("b", "score", "nonfinite"), ("b", "ten", "nonfinite")]


def test_tenbin_headers_that_ask_for_more_than_the_member_holds_are_refused():
    magic = b"~TenBin~"
    looping = magic + struct.pack("<q", -80) + b"\0" * 64      # webdataset's parser walks backwards on this
    with pytest.raises(MemberError, match="chunk length -80 at byte 0 passes the member's end"):
        decode_tenbin(looping, "ten")
    header = struct.pack("<5q", int.from_bytes(b"f4".ljust(8, b"\0"), "little"), 0, 2, 100000, 100000)
    huge = magic + struct.pack("<q", len(header)) + header.ljust(64, b"\0") + magic + struct.pack("<q", 16) + \
        b"\0" * 64
    with pytest.raises(MemberError, match=r"array data is 16 bytes, header \(100000, 100000\) float32 needs "
                                          "40000000000"):
        decode_tenbin(huge, "ten")


def test_an_npz_bomb_and_an_object_array_are_refused_before_inflating():
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("z.npy", b"\0" * 200_000_000)             # 200 MB deflated to ~200 KB
    with pytest.raises(MemberError, match=r"\.npz declares 200000000 bytes once inflated, more than the 100000000 "
                                          r"its sample may decode \(not inflated\)"):
        decode_npz(buf.getvalue(), "npz", "npz", 100_000_000)
    ok = decode_npz(_npz(z=np.zeros(1000, np.uint8)), "npz", "npz", 100_000)[0]
    assert ok["npz.z.shape"][1] == [1000]
    obj = io.BytesIO()
    with zipfile.ZipFile(obj, "w") as zf:
        zf.writestr("o.npy", npy_bytes(np.array([{"a": 1}], dtype=object)))
    with pytest.raises(MemberError, match=r"object array in \.npy \(would need unpickling; not loaded\)"):
        decode_npz(obj.getvalue(), "npz", "npz", 100_000)


def test_an_undecoded_member_type_is_named_unchecked_and_strict_fails(tmp_path):
    shard = make_tar(tmp_path / "s.tar", [("a.txt", b"a caption"), ("a.xml", b"<a/>"),
                                          ("b.txt", b"another"), ("b.xml", b"<b/>")])
    out = tmp_path / "out"
    res = CliRunner().invoke(main, ["audit", str(shard), "--out", str(out)])
    assert res.exit_code == 0, res.output
    report = json.loads((out / "report.json").read_text())
    assert report["notes"] == [f"{shard}: warning: not checked by any check: xml (binary)"]
    res = CliRunner().invoke(main, ["audit", str(shard), "--out", str(tmp_path / "o2"), "--strict"])
    assert res.exit_code == 1, res.output
