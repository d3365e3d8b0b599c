"""The image-text generator (fixtures/image_data.py): deterministic output, the truth table names every planted
record with the checks it should trip, each plant really is what its kind says (checked with Pillow on the bytes as
written), clean images decode without a warning, and fixtures/images is what the generator writes.

Generating needs the real photos in ../shared/data/images (or $DATAAUDIT_SHARED_DATA/images): those tests skip with
a reason naming that folder when it is missing. The PNG bomb writer and the one-line stop need nothing."""
from __future__ import annotations

import io
import json
import os
import struct
import subprocess
import sys
import tarfile
import warnings
import zlib
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from PIL import Image, UnidentifiedImageError

from fixtures import image_data
from tests.paths import REPO, SHARED_DATA, SHARED_DATA_ENV

IMAGES = SHARED_DATA / "images"
needs_images = pytest.mark.skipif(
    not IMAGES.is_dir(), reason=f"real images folder missing: {IMAGES} (put ../shared/data beside the checkout "
                                f"or set {SHARED_DATA_ENV})")
FIXTURES = REPO / "fixtures" / "images"
MISSING = object()          # a caption that is not there at all (no .txt member, no key)


# ------------------------------------------------------------------------------------------------ reading back

def _png_chunks(data: bytes):
    assert data[:8] == image_data.PNG_SIGNATURE
    i = 8
    while i < len(data):
        (n,) = struct.unpack(">I", data[i:i + 4])
        tag, body = data[i + 4:i + 8], data[i + 8:i + 8 + n]
        (crc,) = struct.unpack(">I", data[i + 8 + n:i + 12 + n])
        assert crc == zlib.crc32(tag + body) & 0xFFFFFFFF, tag
        yield tag, body
        i += 12 + n


def _inside(folder: Path, rel: str) -> bool:
    return not os.path.isabs(rel) and os.path.realpath(folder / rel).startswith(os.path.realpath(folder) + os.sep)


def read_shard(out: Path, layout: str, rel: str) -> dict[str, dict]:
    """{record key: {images: [{bytes, name, path, outside, exists}], caption, placeholders}} as written."""
    path = out / rel
    folder = path.parent
    recs: dict[str, dict] = {}
    if layout == "webdataset":
        with tarfile.open(path) as tf:
            names = tf.getnames()
            assert names == sorted(names)
            for m in tf.getmembers():
                assert (m.mtime, m.uid, m.gid, m.uname, m.gname) == (0, 0, 0, "", "")
                key, ext = m.name.split(".", 1)
                r = recs.setdefault(key, {"images": [], "caption": MISSING})
                data = tf.extractfile(m).read()
                if ext == "txt":
                    r["caption"] = data.decode("utf-8")
                else:
                    r["images"].append({"bytes": data, "name": m.name})
        for r in recs.values():
            r["images"] = r["images"] or [{"bytes": None, "name": None}]
        return recs
    if layout in ("parquet_hf", "parquet_bytes"):
        t = pq.read_table(path)
        for row, r in enumerate(t.to_pylist()):
            if layout == "parquet_hf":
                img = r["image"]
                image = {"bytes": None, "name": None} if img is None else {"bytes": img["bytes"], "name": img["path"]}
                recs[str(row)] = {"images": [image], "caption": r["text"]}
            else:
                image = {"bytes": r["jpg"], "name": None if r["jpg"] is None else "column jpg"}
                recs[str(row)] = {"images": [image], "caption": r["caption"]}
        return recs
    for row, line in enumerate(path.read_text("utf-8").splitlines()):
        r = json.loads(line)
        paths = [r["image"]] if layout == "jsonl_paths" else r["images"]
        images = []
        for p in paths:
            if p is None:
                images.append({"bytes": None, "name": None})
                continue
            inside = _inside(folder, p)
            exists = inside and (folder / p).is_file()
            images.append({"bytes": (folder / p).read_bytes() if exists else None, "name": p, "path": p,
                           "outside": not inside, "exists": exists})
        if layout == "jsonl_paths":
            recs[str(row)] = {"images": images, "caption": r.get("text", MISSING)}
        else:
            text = "".join(m["content"] for m in r["messages"] if m["role"] == "user")
            assert [m["role"] for m in r["messages"]][::2] == ["user"] * (len(r["messages"]) // 2)
            recs[str(row)] = {"images": images, "caption": r["messages"][1]["content"],
                              "placeholders": text.count("<image>")}
    return recs


# ------------------------------------------------------------------------------------------------ the verdicts

def decode(data: bytes):
    """(format, size, mode, grey std, n_frames) of an image that decodes in full with no warning."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with Image.open(io.BytesIO(data)) as im:
            im.load()
            grey = np.asarray(im.convert("L"), dtype=np.float64)
            return im.format, im.size, im.mode, float(grey.std()), getattr(im, "n_frames", 1), dict(im.info)


def declared_ext(image: dict) -> str:
    return image["name"].rsplit(".", 1)[-1] if image["name"] != "column jpg" else "jpg"


EXT_OF = {"JPEG": "jpg", "PNG": "png", "WEBP": "webp", "GIF": "gif"}


def assert_clean_image(image: dict, what: str) -> None:
    assert image["bytes"], what
    fmt, (w, h), mode, std, frames, _ = decode(image["bytes"])
    assert EXT_OF[fmt] == declared_ext(image), (what, fmt, image["name"])
    assert mode == "RGB" and frames == 1, (what, mode, frames)
    assert min(w, h) >= 64 and max(w, h) / min(w, h) <= 3.0 + 1e-9, (what, w, h)
    assert std >= 10, (what, std)


def assert_planted(kind: str, image: dict, rec: dict, d: dict, what: str) -> None:
    b = image.get("bytes")
    if kind == "image_empty":
        assert b == b"", what
    elif kind == "not_an_image":
        assert b
        with pytest.raises(UnidentifiedImageError):
            with Image.open(io.BytesIO(b)):
                pass
    elif kind == "image_corrupt":
        with Image.open(io.BytesIO(b)) as im:           # the header is fine ...
            assert im.format in ("JPEG", "PNG") and EXT_OF[im.format] == declared_ext(image)
        with pytest.raises(Exception):                  # ... a full decode is not
            with Image.open(io.BytesIO(b)) as im:
                im.load()
    elif kind == "image_bomb":
        chunks = list(_png_chunks(b))
        assert chunks[0][0] == b"IHDR" and chunks[-1] == (b"IEND", b"")
        w, h, bits, colour = struct.unpack(">IIBB", chunks[0][1][:10])
        assert (w, h, colour) == (20000, 20000, 0) and bits in (1, 8), what
        with pytest.raises(Image.DecompressionBombError):
            Image.open(io.BytesIO(b))
    elif kind == "image_format_mismatch":
        assert b[:8] == image_data.PNG_SIGNATURE and declared_ext(image) == "jpg", what
        fmt, *_ = decode(b)
        assert fmt == "PNG"
    elif kind == "image_too_small":
        _, (w, h), _, _, _, _ = decode(b)
        assert min(w, h) < 32 and max(w, h) / min(w, h) <= 8, (what, w, h)
    elif kind == "image_aspect_ratio":
        _, (w, h), _, _, _, _ = decode(b)
        assert max(w, h) / min(w, h) > 8, (what, w, h)
        assert (min(w, h) < 32) == ("image_too_small" in d["checks"]), (what, w, h)
    elif kind == "image_blank":
        fmt, _, _, std, _, _ = decode(b)
        assert fmt == "JPEG" and std < 2, (what, std)
    elif kind == "image_mode":
        fmt, _, mode, _, _, info = decode(b)
        assert (fmt, mode) in (("JPEG", "CMYK"), ("PNG", "I;16")) or (fmt, mode) == ("PNG", "P") and \
            "transparency" in info, (what, fmt, mode)
    elif kind == "image_animated":
        fmt, _, _, _, frames, _ = decode(b)
        assert fmt == "GIF" and 2 <= frames <= 4, (what, frames)
    elif kind == "missing_image":
        assert b is None and image["name"] is None and isinstance(rec["caption"], str) and rec["caption"].strip()
    elif kind == "image_missing_file":
        assert not image["outside"] and not image["exists"], what
    elif kind == "image_path_outside":
        assert image["outside"], what
    else:
        raise AssertionError(f"{what}: {kind} is not an image kind")
    if kind in image_data.IMAGE_KINDS and kind != "image_format_mismatch" and b and image["name"] != "column jpg":
        fmt = decode(b)[0] if kind not in ("image_corrupt", "image_bomb", "not_an_image") else None
        if fmt:
            assert EXT_OF[fmt] == declared_ext(image), (what, fmt, image["name"])


def verify(out: Path, truth: dict) -> dict[str, set]:
    """Every record of every shard against the truth; returns {layout: planted kinds}."""
    kinds_seen = {}
    for layout, lt in truth["layouts"].items():
        kinds_seen[layout] = set()
        for rel, n in lt["shards"].items():
            recs = read_shard(out, layout, rel)
            assert len(recs) == n, rel
            planted, clean = lt["planted"][rel], lt["clean"][rel]
            assert sorted([*planted, *clean]) == sorted(set(planted) | set(clean)) == sorted(recs), rel
            for key, rec in recs.items():
                what = f"{rel} {key}"
                if key in clean:
                    assert isinstance(rec["caption"], str) and rec["caption"].strip(), what
                    for image in rec["images"]:
                        assert_clean_image(image, what)
                        assert image.get("outside") is not True
                    if layout == "multimodal":
                        assert rec["placeholders"] == len(rec["images"]) >= 1, what
                    continue
                d = lt["details"][rel][key]
                kind = d["kind"]
                kinds_seen[layout].add(kind)
                assert planted[key] == d["checks"] and planted[key][0] == kind, what
                assert set(planted[key]) <= set(image_data.KINDS), what
                if kind == "missing_caption":
                    assert rec["caption"] is None or rec["caption"] is MISSING, what
                elif kind == "empty_caption":
                    assert isinstance(rec["caption"], str) and not rec["caption"].strip(), what
                elif kind == "image_placeholders":
                    assert rec["placeholders"] != len(rec["images"]), what
                    assert (d["placeholders"], d["images"]) == (rec["placeholders"], len(rec["images"])), what
                else:
                    j = d.get("image", 0)
                    assert_planted(kind, rec["images"][j], rec, d, what)
                    others = [im for i, im in enumerate(rec["images"]) if i != j]
                    for image in others:
                        assert_clean_image(image, what + " (another image)")
                    assert isinstance(rec["caption"], str) and rec["caption"].strip(), what
                    if layout == "multimodal":
                        assert rec["placeholders"] == len(rec["images"]), what
                if kind in ("missing_caption", "empty_caption", "image_placeholders"):
                    for image in rec["images"]:
                        assert_clean_image(image, what)
                extra = set(planted[key]) - {kind}
                if layout == "parquet_bytes" and d.get("format") not in (None, "jpeg"):
                    assert "image_format_mismatch" in planted[key], what
                    extra.discard("image_format_mismatch")
                if d.get("variant") == "sliver":
                    extra.discard("image_too_small")
                assert not extra, (what, planted[key])
    return kinds_seen


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


# ------------------------------------------------------------------------------------------------ tests

def test_png_bomb_writer(tmp_path):
    """A small one decodes to zeros; the 20000x20000 one declares its size, has valid chunks and a zlib stream of
    exactly its rows, and Pillow refuses to open it."""
    for bits, mode in ((8, "L"), (1, "1")):
        p = tmp_path / f"small-{bits}.png"
        image_data.write_png_bomb(p, 300, 200, bit_depth=bits)
        with Image.open(p) as im:
            im.load()
            assert (im.size, im.mode) == ((300, 200), mode)
            assert not np.asarray(im).any()
    p = tmp_path / "bomb.png"
    n = image_data.write_png_bomb(p, 20000, 20000, bit_depth=1)
    data = p.read_bytes()
    assert n == len(data) < 100_000
    assert data == image_data.png_bomb_bytes(20000, 20000, 1)
    chunks = list(_png_chunks(data))
    assert [t for t, _ in chunks][:2] == [b"IHDR", b"IDAT"] and chunks[-1][0] == b"IEND"
    assert struct.unpack(">IIBBBBB", chunks[0][1]) == (20000, 20000, 1, 0, 0, 0, 0)
    d, total = zlib.decompressobj(), 0
    for tag, body in chunks:
        if tag == b"IDAT":
            buf = d.decompress(body, 1 << 22)
            while buf:
                assert not any(buf)
                total += len(buf)
                buf = d.decompress(d.unconsumed_tail, 1 << 22)
    assert d.eof and total == 20000 * (1 + 2500)
    with pytest.raises(Image.DecompressionBombError):
        Image.open(p)


def test_missing_photos_stop_with_one_line(tmp_path):
    with pytest.raises(FileNotFoundError, match="images: missing"):
        image_data.image_sources(tmp_path)
    env = {**os.environ, SHARED_DATA_ENV: str(tmp_path / "nowhere"), "PYTHONPATH": str(REPO)}
    r = subprocess.run([sys.executable, "-m", "fixtures.image_data", "--out", str(tmp_path / "o")],
                       capture_output=True, text=True, env=env, timeout=60, cwd=REPO)
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr.strip().count("\n") == 0 and str(tmp_path / "nowhere" / "images") in r.stderr, r.stderr
    assert not (tmp_path / "o").exists()


@pytest.fixture(scope="module")
def fixture_run(tmp_path_factory):
    if not IMAGES.is_dir():
        pytest.skip(f"real images folder missing: {IMAGES} (put ../shared/data beside the checkout or set "
                    f"{SHARED_DATA_ENV})")
    out = tmp_path_factory.mktemp("images-fixtures")
    return out, image_data.write_fixtures(out)


@needs_images
def test_deterministic(fixture_run, tmp_path):
    out, truth = fixture_run
    again = image_data.write_fixtures(tmp_path / "again")
    assert again == truth
    a, b = _files(out), _files(tmp_path / "again")
    assert list(a) == list(b)
    assert [k for k in a if a[k] != b[k]] == []


@needs_images
def test_every_kind_planted_and_real(fixture_run):
    out, truth = fixture_run
    seen = verify(out, truth)
    for layout in image_data.LAYOUTS:
        assert seen[layout] == set(image_data.LAYOUT_KINDS[layout]), layout
        lt = truth["layouts"][layout]
        assert sum(len(c) for c in lt["clean"].values()) >= 6, layout
        bombs = [k for p in lt["planted"].values() for k, c in p.items() if c[0] == "image_bomb"]
        assert len(bombs) == 1, layout
    # the variants take turns across layouts: in the fixtures every variant is planted somewhere
    variants = {(d["kind"], d["variant"]) for lt in truth["layouts"].values() for ds in lt["details"].values()
                for d in ds.values()}
    missing = {(k, v) for k, vs in image_data.VARIANTS.items() for v in vs} - variants
    assert not missing, missing


@needs_images
def test_default_profile(tmp_path):
    """Full-size pictures and the 8-bit bomb: still every plant real, every clean image clean."""
    truth = image_data.generate(tmp_path, records=21, rate=0.01, seed=11, layouts=("webdataset", "multimodal"),
                                shards=3, log=lambda s: None)
    seen = verify(tmp_path, truth)
    assert seen == {x: set(image_data.LAYOUT_KINDS[x]) for x in ("webdataset", "multimodal")}
    assert truth["layouts"]["webdataset"]["shards"] == {f"webdataset/shard-0000{i}.tar": 7 for i in range(3)}
    bomb = next(p for p in (tmp_path / "multimodal" / "images").iterdir() if p.stat().st_size > 300_000)
    assert struct.unpack(">IIB", bomb.read_bytes()[16:25]) == (20000, 20000, 8)
    # a rerun replaces the layout folders it writes (a stale image file would turn a missing-file plant into a
    # file that exists), and leaves a folder it did not write alone
    image_data._clear(tmp_path, ["multimodal"])
    assert not (tmp_path / "multimodal").exists() and (tmp_path / "webdataset").is_dir()
    (tmp_path / "other" / "multimodal").mkdir(parents=True)
    with pytest.raises(SystemExit, match="not a folder this generator wrote"):
        image_data._clear(tmp_path / "other", ["multimodal"])


@needs_images
def test_committed_fixtures_are_what_the_generator_writes(fixture_run):
    out, truth = fixture_run
    committed = json.loads((FIXTURES / "truth.json").read_text("utf-8"))

    def structure(t: dict) -> dict:
        # what does not depend on the codecs' bytes: shards, planted and clean keys, kinds, variants, checks
        return {layout: {"shards": lt["shards"], "planted": lt["planted"], "clean": lt["clean"],
                         "kinds": {s: {k: (d["kind"], d["variant"]) for k, d in ds.items()}
                                   for s, ds in lt["details"].items()}}
                for layout, lt in t["layouts"].items()} | {"params": t["params"]}

    assert structure(committed) == structure(truth)
    a, b = _files(FIXTURES), _files(out)
    assert list(a) == list(b)
    assert sum(len(v) for v in a.values()) < 1_500_000
    if committed["made_with"] != truth["made_with"]:
        pytest.skip(f"fixtures/images made with {committed['made_with']}, this run {truth['made_with']}: "
                    "the truth matches; the image bytes may differ")
    assert [k for k in a if a[k] != b[k]] == []
