"""Image benchmarks (issue 33, item 5): real photos as the benchmark (a folder, a WebDataset tar, a Parquet file);
training JSONL with `images: [...]` paths and OpenAI-style content parts holding re-encoded, resized, border-cropped,
mirrored and byte-identical copies beside unrelated photos. Exact leaked ids, their training records and field paths,
the clean subset and clean_ids.json are asserted; a text benchmark in the same run is read as before."""
from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from dataaudit.cli import main
from dataaudit.images.overlap import image_matches, image_pairs
from tests.paths import shared_file


def _mpl(name: str) -> Path:
    import matplotlib

    path = Path(matplotlib.get_data_path()) / "sample_data" / name
    if not path.is_file():
        pytest.skip(f"matplotlib's sample photo missing: {path}")
    return path


def _photos() -> dict[str, bytes]:
    demo = "posttrain/mllm_demo_data"
    return {"hopper.jpg": shared_file("images/hopper.jpg").read_bytes(),
            "1.jpg": shared_file(f"{demo}/1.jpg").read_bytes(), "2.jpg": shared_file(f"{demo}/2.jpg").read_bytes(),
            "3.jpg": shared_file(f"{demo}/3.jpg").read_bytes(),
            "pack.png": _mpl("Minduka_Present_Blue_Pack.png").read_bytes(),
            "sugar.jpg": shared_file("images/sugarshack_bad_mpo_header.jpg").read_bytes()}


def _edit(data: bytes, *, quality=None, scale=None, border=None, mirror=False, box=None, fmt="JPEG") -> bytes:
    import warnings

    from PIL import Image, ImageOps

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with Image.open(io.BytesIO(data)) as im:
            im = im.convert("RGB")
    w, h = im.size
    if box:           # a region, as shares of the sides
        im = im.crop((int(w * box[0]), int(h * box[1]), int(w * box[2]), int(h * box[3])))
    if border:
        im = im.crop((int(w * border), int(h * border), w - int(w * border), h - int(h * border)))
    if scale:
        im = im.resize((int(im.width * scale), int(im.height * scale)), Image.LANCZOS)
    if mirror:
        im = ImageOps.mirror(im)
    buf = io.BytesIO()
    im.save(buf, fmt, **({"quality": quality or 90} if fmt == "JPEG" else {}))
    return buf.getvalue()


def _benchmark(p: dict[str, bytes]) -> dict[str, bytes]:
    """Five photos and two regions of a sixth (the clean ones)."""
    return {"hopper": p["hopper.jpg"], "demo1": p["1.jpg"], "demo2": p["2.jpg"], "demo3": p["3.jpg"],
            "pack": p["pack.png"], "cabin_left": _edit(p["sugar.jpg"], box=(0, 0, 0.5, 1)),
            "cabin_roof": _edit(p["sugar.jpg"], box=(0.5, 0, 1, 0.5))}


def _training(folder: Path, p: dict[str, bytes]) -> list[Path]:
    files = {"q40.jpg": _edit(p["1.jpg"], quality=40), "small.jpg": _edit(p["2.jpg"], scale=0.6),
             "border.jpg": _edit(p["3.jpg"], border=0.04), "mirror.jpg": _edit(p["hopper.jpg"], mirror=True),
             "pack_copy.png": p["pack.png"], "cabin_low.jpg": _edit(p["sugar.jpg"], box=(0.5, 0.55, 1, 1)),
             "logo.png": _mpl("logo2.png").read_bytes()}
    for name, data in files.items():
        (folder / name).write_bytes(data)
    a = folder / "paths.jsonl"
    a.write_text("".join(json.dumps(r) + "\n" for r in [
        {"images": ["cabin_low.jpg", "q40.jpg"], "text": "two photos"},
        {"images": ["small.jpg"], "text": "a resized copy"},
        {"images": ["logo.png"], "text": "unrelated"},
        {"images": ["logo.png", "logo.png", "pack_copy.png"], "text": "the same bytes, third in the list"}]))
    b = folder / "parts.jsonl"

    def turn(role, *parts):
        return {"role": role, "content": list(parts)}
    text = {"type": "text", "text": "what is in the picture?"}
    b.write_text("".join(json.dumps(r) + "\n" for r in [
        {"messages": [turn("user", text, {"type": "image", "image": "mirror.jpg"}),
                      turn("assistant", {"type": "text", "text": "a portrait"})]},
        {"messages": [turn("user", text), turn("assistant", {"type": "text", "text": "which one?"}),
                      turn("user", {"type": "text", "text": "this"}, {"type": "image", "image": "border.jpg"})]},
        {"messages": [turn("user", text, {"type": "image", "image": "cabin_low.jpg"})]}]))
    return [a, b]


LEAKED = {   # benchmark image -> (kind, [(shard, row, field path)])
    "demo1": ("near", [("paths.jsonl", 0, "images[1]")]),
    "demo2": ("near", [("paths.jsonl", 1, "images[0]")]),
    "demo3": ("near", [("parts.jsonl", 1, "messages[2].content[1]")]),
    "hopper": ("flipped", [("parts.jsonl", 0, "messages[0].content[1]")]),
    "pack": ("exact", [("paths.jsonl", 3, "images[2]")]),
}
CLEAN = ["cabin_left", "cabin_roof"]


def _run(tmp: Path, *benchmarks: str, extra=()) -> tuple[int, str, dict]:
    train = _training(tmp, _photos())
    out = tmp / "out"
    args = ["contamination", "--train", *map(str, train), *[a for b in benchmarks for a in ("--benchmark", b)],
            "--out", str(out), "--engine", "local", *extra]
    res = CliRunner().invoke(main, args)
    assert res.exception is None or isinstance(res.exception, SystemExit), res.output
    return res.exit_code, res.output, json.loads((out / "contamination.json").read_text())


def _leaks(report: dict, name: str) -> dict:   # the training thumbnails aside
    return {w["id"]: (w["match"], [(Path(m["shard"]).name, m["row"], m["field"]) for m in w["matches"]])
            for w in report["image_benchmarks"][name]["leaked"]}


def test_a_folder_of_real_photos_against_paths_and_content_parts(tmp_path):
    bench = tmp_path / "bench"
    bench.mkdir()
    for name, data in _benchmark(_photos()).items():
        (bench / (name + (".png" if name == "pack" else ".jpg"))).write_bytes(data)
    code, output, report = _run(tmp_path, f"vis={bench}", extra=["--decontaminate-train"])
    assert code == 1
    b = report["image_benchmarks"]["vis"]
    assert _leaks(report, "vis") == LEAKED
    assert (b["items"], b["contaminated"], b["exact"], b["near"], b["flipped"], b["not_checked"]) == (7, 5, 1, 3, 1, 0)
    assert all(w["thumbnail"].startswith("data:image/png;base64,") for w in b["leaked"])
    assert all(m["thumbnail"].startswith("data:image/png;base64,") for w in b["leaked"] for m in w["matches"])
    assert b["files"] == ["vis/items.parquet", "vis/clean/"]
    assert sorted(f.name for f in (tmp_path / "out" / "vis" / "clean").iterdir()) == ["cabin_left.jpg", "cabin_roof.jpg"]
    assert (tmp_path / "out" / "vis" / "clean" / "cabin_left.jpg").read_bytes() == (bench / "cabin_left.jpg").read_bytes()
    ids = json.loads((tmp_path / "out" / "clean_ids.json").read_text())["benchmarks"]["vis"]
    assert (ids["ids"], ids["rows"], ids["id_is"]) == (CLEAN, [0, 1], "file name")    # sorted files: cabin_* first
    items = pq.read_table(tmp_path / "out" / "vis" / "items.parquet").to_pylist()
    assert [(r["id"], r["contaminated"], r["match"], r["train_records"]) for r in items] == [
        ("cabin_left", False, None, 0), ("cabin_roof", False, None, 0), ("demo1", True, "near", 1),
        ("demo2", True, "near", 1), ("demo3", True, "near", 1), ("hopper", True, "flipped", 1),
        ("pack", True, "exact", 1)]
    drop = pq.read_table(tmp_path / "out" / "decontaminate.parquet").to_pylist()
    assert [(Path(r["shard"]).name, r["row"], r["items"]) for r in drop] == [
        ("paths.jsonl", 0, ["vis/demo1"]), ("paths.jsonl", 1, ["vis/demo2"]), ("paths.jsonl", 3, ["vis/pack"]),
        ("parts.jsonl", 0, ["vis/hopper"]), ("parts.jsonl", 1, ["vis/demo3"])]
    assert "leaked benchmark images" in output and "demo3" in output and "flipped" in output
    page = (tmp_path / "out" / "contamination.html").read_text()
    assert "Image benchmarks" in page and "data:image/png;base64," in page


def test_a_tar_and_a_parquet_benchmark_beside_a_text_one(tmp_path):
    photos = _benchmark(_photos())
    tar = tmp_path / "bench.tar"
    with tarfile.open(tar, "w") as tf:
        for key, data in photos.items():
            for suffix, blob in (("jpg", data), ("txt", key.encode())):
                info = tarfile.TarInfo(f"{key}.{suffix}")
                info.size = len(blob)
                tf.addfile(info, io.BytesIO(blob))
    parquet = tmp_path / "bench.parquet"
    pq.write_table(pa.table({"id": [f"q{i}" for i in range(len(photos))], "question": ["?"] * len(photos),
                             "image": pa.array(list(photos.values()), pa.binary())}), parquet)
    text = tmp_path / "qa.jsonl"
    text.write_text(json.dumps({"id": "t0", "text": "an item no training record holds, long enough to count"}) + "\n")
    code, _, report = _run(tmp_path, f"tarred={tar}", f"table={parquet}", f"qa={text}")
    assert code == 1
    assert _leaks(report, "tarred") == LEAKED
    names = list(photos)
    assert {k: v[0] for k, v in _leaks(report, "table").items()} == {
        f"q{names.index(k)}": kind for k, (kind, _) in LEAKED.items()}
    assert report["image_benchmarks"]["table"]["id_field"] == "id"
    assert report["benchmarks"]["qa"]["items"] == 1 and report["benchmarks"]["qa"]["contaminated"] == 0
    with tarfile.open(tmp_path / "out" / "tarred" / "clean.tar") as tf:
        assert sorted(tf.getnames()) == ["cabin_left.jpg", "cabin_left.txt", "cabin_roof.jpg", "cabin_roof.txt"]
    assert pq.read_table(tmp_path / "out" / "table" / "clean.parquet").column("id").to_pylist() == ["q5", "q6"]
    ids = json.loads((tmp_path / "out" / "clean_ids.json").read_text())["benchmarks"]
    assert (ids["tarred"]["ids"], ids["table"]["ids"], ids["qa"]["ids"]) == (CLEAN, ["q5", "q6"], ["t0"])


def test_every_benchmark_copy_of_a_leaked_picture_is_listed():
    """Two benchmark images with the same bytes, and two with the same hash: a training copy leaks all of them;
    `image_matches` (dedup-images --against) keeps one validation image per training image, the first."""
    u = np.uint64
    b = {"digest": np.array([5, 5, 7, 8], u), "phash": np.array([0, 0, 0xFF, 0xFF], u),
         "flipped": np.array([1, 1, 2, 2], u), "decoded": np.array([True, True, True, True])}
    a = {"digest": np.array([5, 9, 10], u), "phash": np.array([0, 0xFE, 0xFFFF0000], u),
         "flipped": np.zeros(3, u), "decoded": np.array([True, True, True])}
    ai, bj, kind = image_pairs(a, b, 2, every_b=True)
    assert list(zip(ai.tolist(), bj.tolist(), kind.tolist())) == [(0, 0, 0), (0, 1, 0), (0, 2, 2), (0, 3, 2),
                                                                   (1, 2, 1), (1, 3, 1)]
    kind, other = image_matches(a, b, 2)
    assert (kind.tolist(), other.tolist()) == ([0, 1, 3], [0, 2, -1])


def test_what_is_not_checked_is_said(tmp_path):
    """An empty benchmark file is not checked (left out of the clean subset, noted); a training shard with no image
    field is named in a note; a JSONL of image paths, or a Parquet named with a field spec, stays a text benchmark;
    a text setting for an image benchmark is one error line."""
    from dataaudit.contamination.image_bench import image_format

    photos = _photos()
    bench = tmp_path / "bench"
    bench.mkdir()
    (bench / "a.jpg").write_bytes(photos["1.jpg"])
    (bench / "b.jpg").write_bytes(b"")
    (bench / "notes.txt").write_text("not an image")
    # a nearly flat picture (a faint gradient): its bytes are matched, its re-encoded copy is not (generic pHash)
    from PIL import Image
    flat = io.BytesIO()
    Image.fromarray(np.tile(np.linspace(100, 130, 96).astype(np.uint8), (64, 1))).save(flat, "PNG")
    (bench / "flat.png").write_bytes(flat.getvalue())
    (tmp_path / "flat_copy.png").write_bytes(flat.getvalue())
    (tmp_path / "flat_q50.jpg").write_bytes(_edit(flat.getvalue(), quality=50))
    text_only = tmp_path / "text.jsonl"
    text_only.write_text(json.dumps({"text": "no picture here"}) + "\n")
    pictures = tmp_path / "pictures.jsonl"
    pictures.write_text(json.dumps({"images": ["flat_q50.jpg"]}) + "\n" + json.dumps({"images": ["flat_copy.png"]})
                        + "\n")
    out = tmp_path / "out"
    res = CliRunner().invoke(main, ["contamination", "--train", str(text_only), str(pictures), "--benchmark",
                                    f"v={bench}", "--out", str(out), "--engine", "local"])
    report = json.loads((out / "contamination.json").read_text())
    b = report["image_benchmarks"]["v"]
    assert (res.exit_code, b["items"], b["contaminated"], b["not_checked"], b["bytes_only"]) == (1, 3, 1, 1, 1)
    assert _leaks(report, "v") == {"flat": ("exact", [("pictures.jsonl", 1, "images[0]")])}
    assert b["warnings"][-1].startswith("1 image(s) of low detail (grey std under 14 of 255 at 32x32): matched by "
                                        "their bytes only")
    assert sorted(f.name for f in (out / "v" / "clean").iterdir()) == ["a.jpg"]
    assert report["notes"] == [
        f"1 training shard(s) hold no image field (first: {text_only}): image benchmarks not checked against them",
        "v: 1 benchmark image(s) without bytes: not checked (left out of the clean subset and clean ids)"]
    listing = tmp_path / "qa.jsonl"
    listing.write_text(json.dumps({"image": "a.jpg", "text": "a question about a picture"}) + "\n")
    parquet = tmp_path / "t.parquet"
    pq.write_table(pa.table({"question": ["q"], "image": pa.array([photos["1.jpg"]], pa.binary())}), parquet)
    assert (image_format(str(listing), None), image_format(str(parquet), ("question",)),
            image_format(str(parquet), None)) == (None, None, "parquet")
    config = tmp_path / "c.toml"
    config.write_text('[benchmarks.v]\nfields = ["text"]\n')
    res = CliRunner().invoke(main, ["contamination", "--train", str(text_only), "--benchmark", f"v={bench}",
                                    "--out", str(tmp_path / "o2"), "--config", str(config), "--engine", "local"])
    assert res.exit_code == 2
    assert f"[benchmarks.v] fields does not apply to an image benchmark ({bench}); only id_field does" in res.output
