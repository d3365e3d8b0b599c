"""`dedup-images` hashes every image of a record: a record's signature is the set of its images (issue 31, item 3);
`--against` finds the training images that appear in a validation set: exact, near (re-encoded, resized) and
horizontally flipped copies of real photos."""
from __future__ import annotations

import io
import json
import shutil

import pyarrow.parquet as pq
from click.testing import CliRunner

from dataaudit.cli import main
from tests.images.image_shards import picture, write_jsonl
from tests.paths import require_shared


def _variant(data: bytes, size=None, quality=None, mirror=False) -> bytes:
    from PIL import Image, ImageOps

    with Image.open(io.BytesIO(data)) as im:
        im = im.convert("RGB")
        if size:
            im = im.resize(size)
        if mirror:
            im = ImageOps.mirror(im)
        buf = io.BytesIO()
        im.save(buf, "JPEG", quality=quality or 90)
        return buf.getvalue()


def _run(*args) -> tuple[int, str, dict]:
    res = CliRunner().invoke(main, ["dedup-images", *map(str, args), "--engine", "local"])
    out = args[args.index("--out") + 1]
    return res.exit_code, res.output, json.loads((out / "dedup.json").read_text())


def _clusters(out) -> list[tuple]:
    return [(r["row"], r["cluster_id"], r["kind"]) for r in pq.read_table(out / "clusters.parquet").to_pylist()]


def _kept(out) -> list[int]:
    return pq.read_table(out / "keep.parquet").column("row").to_pylist()


def test_a_record_is_the_set_of_its_images(tmp_path):
    """[a, b] and [b, a] show the same pictures: duplicates (exact). [a] shows fewer: not a duplicate of [a, b].
    [a, c] and [a, c'] (c re-encoded): near. A record whose second image is missing is never clustered."""
    a, b, c = (picture(120, 90, seed=s) for s in (1, 2, 3))
    for name, data in {"a.jpg": a, "b.jpg": b, "c.jpg": c, "c2.jpg": _variant(c, quality=40)}.items():
        (tmp_path / name).write_bytes(data)
    shard = write_jsonl(tmp_path / "s.jsonl", [
        {"images": ["a.jpg", "b.jpg"], "text": "0"},
        {"images": ["b.jpg", "a.jpg"], "text": "1: same set, other order"},
        {"images": ["a.jpg"], "text": "2: a subset"},
        {"images": ["a.jpg", "c.jpg"], "text": "3"},
        {"images": ["a.jpg", "c2.jpg"], "text": "4: c re-encoded"},
        {"images": ["a.jpg", "nowhere.jpg"], "text": "5: an image missing"},
        {"images": ["b.jpg", "a.jpg", "b.jpg"], "text": "6: a repeat"},
    ])
    code, output, report = _run(shard, "--out", tmp_path / "out")
    assert code == 0, output
    assert _clusters(tmp_path / "out") == [(0, 0, "exact"), (1, 0, "exact"), (3, 1, "near"),
                                                              (4, 1, "near"), (6, 0, "exact")]
    assert _kept(tmp_path / "out") == [0, 2, 3, 5]
    assert (report["documents"], report["images"], report["no_image"], report["duplicates"]) == (7, 12, 1, 3)
    assert report["against"] is None


def test_each_text_with_other_images_is_no_duplicate(tmp_path):
    """Three records with the same text and three different images: nothing dropped (the images differ)."""
    pics = [picture(120, 90, seed=s) for s in (11, 12, 13)]
    for k, data in enumerate(pics):
        (tmp_path / f"{k}.jpg").write_bytes(data)
    shard = write_jsonl(tmp_path / "s.jsonl", [{"image": f"{k}.jpg", "text": "Describe the picture."}
                                               for k in range(3)])
    code, output, report = _run(shard, "--out", tmp_path / "out")
    assert code == 0, output
    assert (report["duplicates"], report["kept"]) == (0, 3)


def test_against_finds_exact_resized_reencoded_and_mirrored_copies_of_real_photos(tmp_path):
    shared = require_shared()           # skips, naming the folder, when it is absent
    photos = {"hopper.jpg": shared / "images" / "hopper.jpg",
              "sugarshack.jpg": shared / "images" / "sugarshack_bad_mpo_header.jpg",
              **{f"{k}.jpg": shared / "posttrain" / "mllm_demo_data" / f"{k}.jpg" for k in (1, 2, 3)}}
    raw = {name: path.read_bytes() for name, path in photos.items()}
    val, train = tmp_path / "val", tmp_path / "train"
    val.mkdir()
    train.mkdir()
    for name in ("hopper.jpg", "1.jpg", "2.jpg", "3.jpg"):      # the benchmark
        shutil.copy(photos[name], val / name)
    write_jsonl(val / "bench.jsonl", [{"image": n, "text": f"question {k}"}
                                      for k, n in enumerate(("hopper.jpg", "1.jpg", "2.jpg", "3.jpg"))])
    copies = {"exact.jpg": raw["hopper.jpg"],
              "resized.jpg": _variant(raw["1.jpg"], size=(200, 150)),
              "reencoded.jpg": _variant(raw["2.jpg"], quality=35),
              "mirrored.jpg": _variant(raw["3.jpg"], mirror=True),
              "other.jpg": raw["sugarshack.jpg"]}                   # in no benchmark: kept
    for name, data in copies.items():
        (train / name).write_bytes(data)
    shard = write_jsonl(train / "train.jsonl", [{"image": n, "text": f"record {k}"} for k, n in enumerate(copies)])
    code, output, report = _run(shard, "--out", tmp_path / "out", "--against", val / "bench.jsonl")
    assert code == 1, output                   # a leak, as in text dedup
    got = pq.read_table(tmp_path / "out" / "overlap.parquet").to_pylist()
    assert [(r["row"], r["match"], r["val_row"]) for r in got] == [(0, "exact", 0), (1, "near", 1), (2, "near", 2),
                                                                    (3, "flipped", 3)]
    assert _kept(tmp_path / "out") == [4]
    assert report["against"] == {"validation_records": 4, "validation_images": 4, "train_images_matched": 4,
                                 "train_records_matched": 4, "exact": 1, "near": 2, "flipped": 1}
    assert "training records with an image in the --against set: 4" in output
