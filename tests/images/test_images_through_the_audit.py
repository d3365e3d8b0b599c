"""Images through the audit CLI, one layout at a time: WebDataset members, Hugging Face struct columns, binary
columns, path columns and multimodal conversations; exact flags, paths that name the image, the report's Images
section and thumbnails."""
from __future__ import annotations

import base64
import io
import os

from tests.builders import make_tar
from tests.images.image_shards import blank, cli_audit, picture, write_jsonl, write_parquet


def test_webdataset_images_and_captions(tmp_path):
    good, png = picture(seed=1), picture(seed=2, fmt="PNG")
    shard = make_tar(tmp_path / "s.tar", [
        ("a.jpg", good), ("a.txt", b"a gradient"),
        ("b.jpg", b""), ("b.txt", b"zero bytes"),
        ("c.jpg", good[: len(good) // 2]), ("c.txt", b"truncated"),
        ("d.jpg", png), ("d.txt", b"png bytes under .jpg"),
        ("e.jpg", blank()), ("e.txt", b"   "),
        ("f.jpg", good),
        ("g.txt", b"caption without image"),
        ("h.jpg", b"<html>404 not found</html>"), ("h.txt", b"an error page"),
        ("i.png", picture(20, 400, seed=3, fmt="PNG")), ("i.txt", b"a strip"),
    ])
    res, report, flags = cli_audit([shard], tmp_path / "out")
    assert res.exit_code == 1, res.output
    assert flags == [
        ("s.tar", "b", "jpg", "image_empty"), ("s.tar", "c", "jpg", "image_corrupt"),
        ("s.tar", "d", "jpg", "image_format_mismatch"), ("s.tar", "e", "jpg", "image_blank"),
        ("s.tar", "e", "txt", "empty_caption"), ("s.tar", "f", "txt", "missing_caption"),
        ("s.tar", "g", "jpg, png", "missing_image"), ("s.tar", "h", "jpg", "not_an_image"),
        ("s.tar", "i", "png", "image_aspect_ratio"), ("s.tar", "i", "png", "image_too_small")]
    [shard_report] = report["shards"]
    assert shard_report["fields"] == {"text": ["txt"], "image": ["jpg", "png"]}
    assert shard_report["formats"] == {"txt": "text", "jpg": "image bytes (.jpg)", "png": "image bytes (.png)"}
    jpg = report["images"]["jpg"]
    assert (jpg["images"], jpg["decoded"]) == (7, 4)
    assert jpg["formats"] == {"JPEG": 4, "PNG": 1, "(empty)": 1, "(not an image)": 1}   # a truncated JPEG is a JPEG
    assert jpg["width"]["count"] == 5 and jpg["width"]["min"] == 80 and jpg["width"]["max"] == 96
    details = {e["key"]: e["detail"] for e in report["examples"]["image_corrupt"]}
    assert details == {"c": details["c"]} and details["c"].startswith("OSError: image file is truncated")
    assert report["examples"]["image_format_mismatch"][0]["detail"] == "PNG data under a .jpg name"
    # empty text is not reported twice: a blank caption is the pairing check's finding
    assert "empty_text" not in {f[3] for f in flags}


def test_thumbnails_and_images_section_in_the_html(tmp_path):
    shard = make_tar(tmp_path / "s.tar", [("a.jpg", blank(300, 200)), ("a.txt", b"<script>alert(1)</script>")])
    res, report, flags = cli_audit([shard], tmp_path / "out")
    assert res.exit_code == 0, res.output           # image_blank is a warning
    [example] = report["examples"]["image_blank"]
    uri = example["thumbnail"]
    assert uri.startswith("data:image/png;base64,")
    from PIL import Image

    with Image.open(io.BytesIO(base64.b64decode(uri.split(",", 1)[1]))) as im:
        assert im.format == "PNG" and im.size == (64, 43)      # re-encoded, at most 64 px
    html = (tmp_path / "out" / "report.html").read_text()
    assert f'<img class="thumb" src="{uri}"' in html
    assert '<h2 id="images">Images</h2>' in html
    assert "<script>alert(1)</script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_hugging_face_struct_and_binary_columns(tmp_path):
    good = picture(seed=4)
    hf = write_parquet(tmp_path / "hf.parquet", {
        "image": [{"bytes": good, "path": "0.jpg"}, {"bytes": picture(seed=5, fmt="PNG"), "path": "1.jpg"},
                  None, {"bytes": None, "path": "pics/2.jpg"}],
        "text": ["a", "b", "no image", "a file next to the shard"]})
    (tmp_path / "pics").mkdir()
    (tmp_path / "pics" / "2.jpg").write_bytes(good)
    raw = write_parquet(tmp_path / "raw.parquet", {"jpg": [good, picture(seed=6, mode="CMYK")],
                                                   "caption": ["x", None]})
    res, report, flags = cli_audit([hf, raw], tmp_path / "out")
    assert res.exit_code == 1, res.output
    assert flags == [
        ("hf.parquet", "1", "image", "image_format_mismatch"), ("hf.parquet", "2", "image", "missing_image"),
        ("raw.parquet", "1", "caption", "missing_caption"), ("raw.parquet", "1", "jpg", "image_mode")]
    hf_report, raw_report = report["shards"]
    assert hf_report["formats"]["image"] == "image {bytes, path}"
    assert raw_report["formats"]["jpg"] == "image bytes (.jpg)"
    assert report["images"]["image"]["decoded"] == 3


def test_paths_are_resolved_inside_the_shard_folder_and_never_opened_outside(tmp_path):
    data = tmp_path / "data"
    (data / "images").mkdir(parents=True)
    good = picture(seed=7)
    (data / "images" / "ok.jpg").write_bytes(good)
    (tmp_path / "secret.jpg").write_bytes(good)                      # a real image, outside the folder
    os.symlink(tmp_path / "secret.jpg", data / "images" / "link.jpg")  # a symlink leading out
    shard = write_jsonl(data / "pairs.jsonl", [
        {"image": "images/ok.jpg", "text": "fine"},
        {"image": "../secret.jpg", "text": "dot-dot"},
        {"image": str(tmp_path / "secret.jpg"), "text": "absolute"},
        {"image": "images/link.jpg", "text": "symlink out"},
        {"image": "images/gone.jpg", "text": "missing"},
        {"image": "https://example.com/x.jpg", "text": "a URL"},
    ])
    res, report, flags = cli_audit([shard], tmp_path / "out")
    assert res.exit_code == 1, res.output
    assert flags == [("pairs.jsonl", str(k), "image", check) for k, check in (
        (1, "image_path_outside"), (2, "image_path_outside"), (3, "image_path_outside"),
        (4, "image_missing_file"))]
    details = [e["detail"] for e in report["examples"]["image_path_outside"]]
    root = "the media root (the shard's folder, or --media-root)"
    assert details == [f"path '../secret.jpg' resolves outside {root}",
                       f"absolute path {str(tmp_path / 'secret.jpg')!r} (outside the media root: the shard's folder, "
                       "or --media-root)",
                       f"path 'images/link.jpg' resolves outside {root}"]
    # a URL is never fetched nor flagged: counted as not checked in the notes (--strict fails on it)
    assert [e["detail"] for e in report["examples"]["image_missing_file"]] == ["no such file: 'images/gone.jpg'"]
    assert report["images"]["image"]["formats"]["(not fetched)"] == 1
    assert f"{shard}: warning: 1 image reference(s) in image are URLs: not fetched, not checked" in report["notes"]


def test_multimodal_conversations_count_image_placeholders(tmp_path):
    (tmp_path / "img").mkdir()
    for i in range(3):
        (tmp_path / "img" / f"{i}.jpg").write_bytes(picture(seed=10 + i))

    def rec(user: str, images: list[str]) -> dict:
        return {"messages": [{"role": "user", "content": user}, {"role": "assistant", "content": "Sure."}],
                "images": images}

    shard = write_jsonl(tmp_path / "mm.jsonl", [
        rec("<image>Describe.", ["img/0.jpg"]),
        rec("<image><image>Compare.", ["img/0.jpg", "img/1.jpg"]),
        rec("<image>Compare both.", ["img/0.jpg", "img/1.jpg"]),       # one placeholder, two images
        rec("No picture here.", []),                                  # a text-only record: fine
        rec("<image>What is it?", []),                                 # a placeholder without its image
        rec("<image>Look.", ["img/2.jpg", "img/missing.jpg"]),         # 1 vs 2, and a missing file
    ])
    res, report, flags = cli_audit([shard], tmp_path / "out")
    assert res.exit_code == 1, res.output
    assert flags == [("mm.jsonl", "2", "messages", "image_placeholders"),
                     ("mm.jsonl", "4", "messages", "image_placeholders"),
                     ("mm.jsonl", "5", "images[1]", "image_missing_file"),
                     ("mm.jsonl", "5", "messages", "image_placeholders")]
    assert [e["detail"] for e in report["examples"]["image_placeholders"]] == [
        "1 <image> placeholders, 2 images", "1 <image> placeholders, 0 images", "1 <image> placeholders, 2 images"]
    assert report["shards"][0]["fields"] == {"text": ["messages"], "image": ["images"]}
    assert report["shards"][0]["formats"]["images"] == "list of image paths"


def test_the_pixel_limit_is_configurable_and_checked_before_decoding(tmp_path):
    shard = make_tar(tmp_path / "s.tar", [("a.jpg", picture(96, 72, seed=1)), ("a.txt", b"6912 pixels"),
                                          ("b.jpg", picture(40, 40, seed=2)), ("b.txt", b"1600 pixels")])
    res, report, flags = cli_audit([shard], tmp_path / "out", "[data]\nmax_image_pixels = 5000\n")
    assert res.exit_code == 1, res.output
    assert flags == [("s.tar", "a", "jpg", "image_bomb")]
    [example] = report["examples"]["image_bomb"]
    assert (example["value"], example["detail"]) == (6912.0, "96x72 = 6912 pixels > max_pixels 5000 (not decoded)")
    res, _, _ = cli_audit([shard], tmp_path / "out2", "[data]\nmax_image_pixels = -1\n")
    assert res.exit_code == 2 and "max_image_pixels must be a positive integer" in res.output


def test_image_paths_by_value_by_config_and_a_binary_column_that_holds_no_images(tmp_path):
    (tmp_path / "a.jpg").write_bytes(picture(seed=3))
    (tmp_path / "a").write_bytes(picture(seed=3))
    by_value = write_parquet(tmp_path / "v.parquet", {"photo_file": ["a.jpg", "b.jpg"], "text": ["x", "y"],
                                                      "blob": [b"\x00\x01\x02", b"\x03"]})
    res, report, flags = cli_audit([by_value], tmp_path / "out")
    assert res.exit_code == 1, res.output        # every value ends in an image extension: image paths
    assert flags == [("v.parquet", "1", "photo_file", "image_missing_file")]
    assert report["shards"][0]["fields"] == {"text": ["text"], "image": ["photo_file"]}
    assert report["shards"][0]["unchecked"] == {"blob": "binary"}     # no image magic in its values
    no_suffix = write_parquet(tmp_path / "n.parquet", {"photo_file": ["a", "b"], "text": ["x", "y"]})
    res, report, flags = cli_audit([no_suffix], tmp_path / "out2")
    assert res.exit_code == 0, res.output
    assert report["shards"][0]["fields"] == {"text": ["text", "photo_file"]}
    res, report, flags = cli_audit([no_suffix], tmp_path / "out3", '[fields]\nimage = "photo_file"\n')
    assert res.exit_code == 1, res.output
    assert flags == [("n.parquet", "1", "photo_file", "image_missing_file")]
    assert report["shards"][0]["fields"] == {"text": ["text"], "image": ["photo_file"]}


def test_a_list_of_image_structs_names_the_image_by_its_position(tmp_path):
    shard = write_parquet(tmp_path / "l.parquet", {
        "images": [[{"bytes": picture(seed=1), "path": "a.jpg"}, {"bytes": b"", "path": "b.jpg"}], []],
        "text": ["two images", "none"]})
    res, report, flags = cli_audit([shard], tmp_path / "out")
    assert res.exit_code == 1, res.output
    assert flags == [("l.parquet", "0", "images[1]", "image_empty"), ("l.parquet", "1", "images", "missing_image")]
    assert report["shards"][0]["formats"]["images"] == "list of images {bytes, path}"


def test_a_png_signature_with_a_broken_stream_is_corrupt_not_a_non_image(tmp_path):
    """Issue 36: the PNG signature, then a header no decoder reads (a bad IHDR checksum, or nothing after the
    signature), is a broken image (image_corrupt), not other data (not_an_image); a truncated stream after a good
    header stays image_corrupt, and bytes with no image signature stay not_an_image."""
    png = picture(seed=2, fmt="PNG")
    shard = make_tar(tmp_path / "s.tar", [
        ("a.png", png[:29] + b"\0\0\0\0" + png[33:]), ("a.txt", b"IHDR checksum zeroed"),
        ("b.png", png[:8]), ("b.txt", b"the signature alone"),
        ("c.png", png[: len(png) // 2]), ("c.txt", b"truncated stream"),
        ("d.png", b"<html>404 not found</html>"), ("d.txt", b"an error page"),
    ])
    res, report, flags = cli_audit([shard], tmp_path / "out")
    assert res.exit_code == 1, res.output
    assert flags == [("s.tar", "a", "png", "image_corrupt"), ("s.tar", "b", "png", "image_corrupt"),
                     ("s.tar", "c", "png", "image_corrupt"), ("s.tar", "d", "png", "not_an_image")]
    details = [e["detail"] for e in report["examples"]["image_corrupt"]]
    assert details[:2] == [
        "PNG signature, but the image does not read (starts b'\\x89PNG\\r\\n\\x1a\\n\\x00\\x00\\x00\\rIHDR')",
        "PNG signature, but the image does not read (starts b'\\x89PNG\\r\\n\\x1a\\n')"]
