"""image_dark, image_bright and image_blurry (cleanvision's dark, light and blurry issues), off by default: on a
real photo and its darkened, brightened and blurred copies, each flags its own copy only."""
from __future__ import annotations

import io

import pytest

from tests.images.image_shards import cli_audit, write_jsonl
from tests.paths import shared_file

ON = "\n".join(f"[checks.{name}]\nenabled = true" for name in ("image_dark", "image_bright", "image_blurry")) + "\n"


def _save(im, path) -> None:
    buf = io.BytesIO()
    im.save(buf, "JPEG", quality=92)
    path.write_bytes(buf.getvalue())


def test_dark_bright_and_blurry_copies_of_a_real_photo(tmp_path):
    Image = pytest.importorskip("PIL.Image")
    from PIL import ImageEnhance, ImageFilter

    photo = Image.open(shared_file("images/hopper.jpg")).convert("RGB")
    (tmp_path / "img").mkdir()
    _save(photo, tmp_path / "img" / "orig.jpg")
    _save(ImageEnhance.Brightness(photo).enhance(0.3), tmp_path / "img" / "dark.jpg")
    _save(Image.blend(photo, Image.new("RGB", photo.size, "white"), 0.95), tmp_path / "img" / "bright.jpg")
    _save(photo.filter(ImageFilter.GaussianBlur(4)), tmp_path / "img" / "blurred.jpg")
    shard = write_jsonl(tmp_path / "p.jsonl", [{"image": f"img/{n}.jpg", "text": n}
                                               for n in ("orig", "dark", "bright", "blurred")])
    res, report, flags = cli_audit([shard], tmp_path / "off")
    assert flags == [] and report["checks"]["image_blurry"]["skipped"] == \
        "off by default; [checks.NAME] enabled = true turns it on"
    res, report, flags = cli_audit([shard], tmp_path / "on", ON)
    assert res.exit_code == 0, res.output      # warnings only
    # the washed-out copy has lost its contrast, and the Laplacian's variance with it: it reads blurry too
    assert flags == [("p.jsonl", "1", "image", "image_dark"), ("p.jsonl", "2", "image", "image_blurry"),
                     ("p.jsonl", "2", "image", "image_bright"), ("p.jsonl", "3", "image", "image_blurry")]
    value = {name: report["examples"][name][0]["value"] for name in ("image_dark", "image_bright", "image_blurry")}
    assert value["image_dark"] == pytest.approx(0.0975, abs=0.005)
    assert value["image_bright"] == pytest.approx(0.966, abs=0.005)
    assert value["image_blurry"] < 400
