"""Real hostile and real clean files from Pillow's own test suite (../shared/data/images)."""
from __future__ import annotations

import pytest

from tests.images.image_shards import cli_audit, write_parquet
from tests.paths import SHARED_DATA, needs_shared

pytestmark = needs_shared      # skips, naming the folder, where ../shared/data is absent
IMAGES = SHARED_DATA / "images"


def test_hostile_files_are_flagged_and_real_photos_pass(tmp_path):
    names = ["hopper.jpg", "hopper.png", "hopper.webp", "hopper.gif", "sugarshack_bad_mpo_header.jpg",
             "crash-4f085cc12ece8cde18758d42608bed6a2a2cfb1c.tif", "cross_scan_line_truncated.tga"]
    shard = write_parquet(tmp_path / "real.parquet", {
        "image": [{"bytes": (IMAGES / n).read_bytes(), "path": n} for n in names],
        "text": [f"file {n}" for n in names]})
    res, report, flags = cli_audit([shard], tmp_path / "out")
    assert res.exit_code == 1, res.output
    assert flags == [("real.parquet", "5", "image", "image_corrupt"), ("real.parquet", "6", "image", "image_corrupt")]
    details = [e["detail"] for e in report["examples"]["image_corrupt"]]
    assert details == ["OSError: decoder error -2", "OSError: image file is truncated (1 bytes not processed)"]
    stats = report["images"]["image"]
    assert stats["decoded"] == 5
    # the MPO-headered JPEG decodes as a base JPEG; the two hostile files' headers read before the decode fails
    assert stats["formats"] == {"JPEG": 2, "GIF": 1, "PNG": 1, "TGA": 1, "TIFF": 1, "WEBP": 1}
    assert stats["modes"] == {"RGB": 5, "P": 2}


@pytest.mark.parametrize("name", ["hopper.jpg", "hopper.png", "hopper.webp"])
def test_the_same_photo_in_three_formats_probes_alike(name):
    from dataaudit.images.probe import probe

    p = probe((IMAGES / name).read_bytes())
    assert (p.status, p.width, p.height, p.mode) == (0, 128, 128, "RGB")
    assert 60 < p.grey_std < 70
