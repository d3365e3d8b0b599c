"""`dataaudit dedup-images`: exact copies (same bytes) and near copies (re-encodes, resizes) across shards, as
clusters with a keep-list in text dedup's form; the same outputs from the local and the Ray engine."""
from __future__ import annotations

import io
import json

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from dataaudit.cli import main
from tests.builders import make_tar
from tests.images.image_shards import picture, write_parquet


def _variant(data: bytes, size=None, quality=70) -> bytes:
    from PIL import Image

    with Image.open(io.BytesIO(data)) as im:
        im = im.convert("RGB")
        if size:
            im = im.resize(size)
        buf = io.BytesIO()
        im.save(buf, "JPEG", quality=quality)
        return buf.getvalue()


@pytest.fixture
def shards(tmp_path):
    a, e = picture(160, 120, seed=1), picture(160, 120, seed=2)
    tar = make_tar(tmp_path / "s.tar", [
        ("a.jpg", a), ("a.txt", b"original"),
        ("b.jpg", a), ("b.txt", b"the same bytes"),
        ("c.jpg", _variant(a, quality=40)), ("c.txt", b"re-encoded"),
        ("d.jpg", _variant(a, size=(120, 90))), ("d.txt", b"resized"),
        ("e.jpg", e), ("e.txt", b"another picture"),
        ("f.txt", b"no image"),
        ("h.jpg", b"not an image"), ("h.txt", b"undecodable"),
        ("y.jpg", b""), ("y.txt", b"zero bytes"), ("z.jpg", b""), ("z.txt", b"zero bytes too: no copy of y"),
    ])
    pq_shard = write_parquet(tmp_path / "p.parquet", {"image": [{"bytes": e, "path": "e.jpg"},
                                                                {"bytes": picture(64, 64, seed=9), "path": "x.jpg"}],
                                                      "text": ["a copy of e", "unique"]})
    return [tar, pq_shard]


def _run(shards, out, *extra):
    res = CliRunner().invoke(main, ["dedup-images", *map(str, shards), "--out", str(out), *extra])
    return res, json.loads((out / "dedup.json").read_text()) if (out / "dedup.json").exists() else None


def test_exact_and_near_copies_across_shards(shards, tmp_path):
    res, report = _run(shards, tmp_path / "out", "--engine", "local")
    assert res.exit_code == 0, res.output
    clusters = pq.read_table(tmp_path / "out" / "clusters.parquet").to_pylist()
    got = [(c["shard"].rsplit("/", 1)[-1], c["key"], c["cluster_id"], c["is_representative"], c["kind"])
           for c in clusters]
    assert got == [("s.tar", "a", 0, True, "exact"), ("s.tar", "b", 0, False, "exact"),
                   ("s.tar", "c", 0, False, "near"), ("s.tar", "d", 0, False, "near"),
                   ("s.tar", "e", 1, True, "exact"), ("p.parquet", "0", 1, False, "exact")]
    keep = pq.read_table(tmp_path / "out" / "keep.parquet").to_pylist()
    assert [(k["shard"].rsplit("/", 1)[-1], k["key"]) for k in keep] == [
        ("s.tar", "a"), ("s.tar", "e"), ("s.tar", "f"), ("s.tar", "h"), ("s.tar", "y"), ("s.tar", "z"),
        ("p.parquet", "1")]
    assert (report["documents"], report["images"], report["hashed"]) == (11, 8, 7)
    assert (report["no_image"], report["undecodable"], report["duplicates"], report["kept"]) == (3, 1, 4, 7)
    assert report["exact"] == {"groups": 2, "documents": 4, "duplicates": 2}
    assert report["near"]["documents"] == 2 and report["near"]["duplicates"] == 2
    assert "fields: image = jpg [" not in res.output and "fields: image = jpg (1 shard), image (1 shard)" in res.output


def test_max_distance_zero_keeps_only_identical_hashes(shards, tmp_path):
    res, report = _run(shards, tmp_path / "out", "--engine", "local", "--max-distance", "0")
    assert res.exit_code == 0, res.output
    assert report["near"]["documents"] <= 2 and report["exact"]["duplicates"] == 2


def test_ray_gives_the_same_outputs(shards, tmp_path, ray_session):
    _run(shards, tmp_path / "local", "--engine", "local")
    res, _ = _run(shards, tmp_path / "ray", "--engine", "ray")
    assert res.exit_code == 0, res.output
    for name in ("clusters.parquet", "keep.parquet"):
        assert pq.read_table(tmp_path / "local" / name).equals(pq.read_table(tmp_path / "ray" / name))


def test_a_configured_image_field_that_does_not_exist_is_a_usage_error(shards, tmp_path):
    res, report = _run(shards, tmp_path / "out", "--image-field", "photo")
    assert res.exit_code == 2 and report is None
    assert "--image-field: image 'photo' found in none of the 2 shards" in res.output


def test_one_shard_is_one_shard_in_the_summary(tmp_path):
    shard = write_parquet(tmp_path / "one.parquet", {"image": [{"bytes": picture(seed=3), "path": "a.jpg"}],
                                                     "text": ["one"]})
    res = CliRunner().invoke(main, ["dedup-images", str(shard), "--out", str(tmp_path / "out"), "--engine", "local"])
    assert res.exit_code == 0, res.output
    # the table's title is wrapped to the table's width: compared with whitespace folded
    assert "dataaudit dedup-images: 1 record, 1 image in 1 shard (pHash within 6 bits)" in " ".join(res.output.split())


def test_a_rerun_says_it_reused_the_finished_shards(shards, tmp_path):
    out = tmp_path / "out"
    first, _ = _run(shards, out, "--engine", "local")
    assert "reused 2" not in first.output and "finished shard" not in first.output
    again, _ = _run(shards, out, "--engine", "local")
    assert again.exit_code == 0, again.output
    assert f"reused 2 finished shards of an earlier run ({out / 'parts'}); the others were read now" in again.output
