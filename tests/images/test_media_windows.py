"""Images of a batch read in windows bounded by bytes (dataaudit.images.media), and Pillow's format allow-list
(dataaudit.images.probe.DECODE_FORMATS): the findings never depend on the window, EPS is named, never opened."""
from __future__ import annotations

import io
import json
import os

import numpy as np
import pyarrow as pa

from dataaudit.fields import Column
from dataaudit.images.batch import ImageBatch, Limits
from dataaudit.images.media import Media
from dataaudit.images.probe import CORRUPT, MISSING, OK, UNSUPPORTED, decode_formats, probe

EPS = b"%!PS-Adobe-3.0 EPSF-3.0\n%%BoundingBox: 0 0 10 10\nshowpage\n"


def _png(seed: int) -> bytes:
    from PIL import Image

    rng = np.random.default_rng(seed)
    buf = io.BytesIO()
    Image.fromarray(rng.integers(0, 255, (40, 48, 3), dtype=np.uint8)).save(buf, "PNG")
    return buf.getvalue()


def test_windows_hold_at_most_the_budget_and_a_larger_image_alone(tmp_path):
    for name, size in (("a", 40), ("b", 70), ("c", 100), ("d", 10), ("e", 5)):
        (tmp_path / name).write_bytes(b"x" * size)
    m = Media(str(tmp_path), limit=1000)
    for name in "abcde":
        m.add_path(name)
    m.add_path("a")                  # named twice: read once
    m.add_path("missing")
    assert list(m.windows(100)) == [[0], [1], [2], [3, 4]]
    assert m.same == {5: 0} and m.pre[6].status == MISSING


def test_findings_are_the_same_for_any_window(tmp_path):
    blobs = [_png(i) for i in range(6)] + [b"not an image", _png(9)[:200], EPS]
    for i, b in enumerate(blobs):
        (tmp_path / f"f{i}.png").write_bytes(b)
    paths = [f"f{i}.png" for i in range(len(blobs))] + ["f0.png", "nothing.png"]
    batch = pa.record_batch({"image": pa.array(paths), "raw": pa.array(blobs + [None, None], pa.binary())})
    fields = (Column("image", "string", "string", image="path"), Column("raw", "binary", "binary", image="bytes"))
    whole = ImageBatch.of(batch, fields, str(tmp_path))
    tiny = ImageBatch.of(batch, fields, str(tmp_path), Limits(in_flight=1, threads=1))
    for name in ("status", "width", "height", "nbytes", "digest", "grey_std", "grey32"):
        np.testing.assert_array_equal(getattr(whole, name), getattr(tiny, name), err_msg=name)
    assert whole.errors == tiny.errors and whole.formats == tiny.formats
    assert whole.status[:9].tolist() == [OK] * 6 + [2, CORRUPT, UNSUPPORTED]
    assert whole.status[9] == OK and whole.digest[9] == whole.digest[0]      # f0.png again: the same findings
    assert whole.status[10] == MISSING
    assert whole.thumbnails([0, 8])[0].startswith("data:image/png;base64,") and whole.thumbnails([8]) == [None]


def test_eps_is_named_from_its_signature_and_never_opened(monkeypatch):
    from PIL import EpsImagePlugin

    def refuse(*a, **k):
        raise AssertionError("the EPS plugin was asked to open the file")

    monkeypatch.setattr(EpsImagePlugin.EpsImageFile, "_open", refuse)
    got = probe(EPS)
    assert (got.status, got.format, got.error) == (UNSUPPORTED, "EPS", "EPS data: a format not decoded here (not opened)")
    assert "EPS" not in decode_formats() and {"JPEG", "PNG", "WEBP", "GIF", "TIFF"} <= set(decode_formats())


def test_a_fifo_among_referenced_images_is_a_flag(tmp_path):
    os.mkfifo(tmp_path / "pipe.png")
    (tmp_path / "ok.png").write_bytes(_png(1))
    batch = pa.record_batch({"image": pa.array(["pipe.png", "ok.png"])})
    ib = ImageBatch.of(batch, (Column("image", "string", "string", image="path"),), str(tmp_path))
    assert ib.status.tolist() == [MISSING, OK]
    assert ib.errors[0] == "cannot read 'pipe.png': not a regular file (a named pipe (FIFO))"
    assert json.dumps(ib.errors)    # plain strings
