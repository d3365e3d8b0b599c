#!/usr/bin/env python
"""Joint text+image duplicates (`dedup --with-images`) and train/benchmark image overlap (`dedup-images --against`).

1. Joint dedup. `--texts` distinct prompts (about 40 words each), each in 3 records with 3 different images (crops of
   the real photos fixtures/image_data.py uses, each a different picture), in one Parquet shard (`image` binary +
   `text`). A second shard plants true duplicates of `--planted` of those records: the same image bytes with the
   same text (exact) or with one word appended (near). `dedup --with-images` is scored: records of the first shard
   dropped (target 0: each text goes with other images) and planted copies clustered with their original (target:
   all). Text-only `dedup` on the same data is printed beside it: what it would drop.
2. --against. `--bench` benchmark images (val shard); the training shard holds, for `--rate` of them, an exact copy,
   a copy resized to 40-90%, one re-encoded (JPEG quality 30-60 or another format) and one mirrored (horizontal
   flip, re-encoded), plus `--bench` new crops in no benchmark (controls). `dedup-images --against` is scored:
   recall per kind = planted copies reported (target >= 0.95), and how many are reported beside the planted image
   itself (overlap.parquet names one benchmark record per training record: another crop of the same photo, or a
   near match that ranks before a flipped one, may be named instead); controls matched (crops of another photo
   than the benchmark image they match are false matches; two crops of one photo may overlap: counted apart).

    .venv/bin/python benchmarks/joint_dedup.py --texts 300 --bench 300
"""
from __future__ import annotations

import argparse
import io
import random
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402
sys.path.insert(0, str(_common.REPO))   # the data generators live in fixtures/ (not installed)
from fixtures import image_data  # noqa: E402

WORDS = ("river stone cloud garden lantern harbor meadow violin copper thunder orchard pebble canyon falcon "
         "marble glacier willow ember quartz prairie beacon cobalt dune fern grove haze island jasmine kettle "
         "lagoon mosaic nectar oasis prism quiver ripple saffron tundra umber velvet walnut yarrow zephyr").split()
AGAINST_KINDS = ("exact", "resized", "reencoded", "mirrored")


def _pictures(rng: random.Random, sources, n: int) -> list[tuple[bytes, str, str]]:
    """n different pictures: (bytes, format, source photo)."""
    prof = image_data.PROFILES["default"]
    out = []
    for _ in range(n):
        img, src = image_data.clean_picture(rng, sources, prof)
        out.append((img["bytes"], img["fmt"], src["name"].split(".")[0]))
    return out


def _sentence(rng: random.Random, k: int) -> str:
    return f"Prompt {k}: " + " ".join(rng.choice(WORDS) for _ in range(40)) + "."


def joint_data(folder: Path, texts: int, planted: int, rng: random.Random, sources) -> list[dict]:
    """base.parquet (each text with 3 images) and copies.parquet (planted duplicates); returns the truth."""
    pics = _pictures(rng, sources, 3 * texts)
    prompts = [_sentence(rng, k) for k in range(texts)]
    base = [(prompts[i // 3], pics[i][0]) for i in range(3 * texts)]
    truth, copies = [], []
    for i in rng.sample(range(len(base)), planted):
        kind = rng.choice(("exact", "near"))
        text, image = base[i]
        copies.append((text if kind == "exact" else text + " Thanks.", image))
        truth.append({"base": i, "row": len(copies) - 1, "kind": kind})
    folder.mkdir(parents=True, exist_ok=True)
    for name, rows in (("base", base), ("copies", copies)):
        pq.write_table(pa.table({"text": [t for t, _ in rows], "image": pa.array([b for _, b in rows], pa.binary())}),
                       folder / f"{name}.parquet")
    return truth


def _variant(rng: random.Random, kind: str, data: bytes, fmt: str) -> bytes:
    from PIL import Image, ImageOps

    if kind == "exact":
        return data
    with Image.open(io.BytesIO(data)) as im:
        im = im.convert("RGB")
    w, h = im.size
    if kind == "resized":
        s = rng.uniform(0.4, 0.9)
        return image_data.encode(im.resize((max(8, int(w * s)), max(8, int(h * s))), Image.LANCZOS), fmt, rng)
    if kind == "reencoded":
        other = rng.choice([f for f in ("jpeg", "png", "webp") if f != fmt])
        return image_data.encode(im, other, rng, quality=rng.randint(30, 60))
    if kind == "mirrored":
        return image_data.encode(ImageOps.mirror(im), fmt, rng)
    raise ValueError(kind)


def against_data(folder: Path, bench: int, rate: float, rng: random.Random, sources) -> dict:
    """val/bench.parquet and train/train.parquet; returns the truth."""
    val = _pictures(rng, sources, bench)
    planted = rng.sample(range(bench), max(1, int(bench * rate)))
    rows, truth = [], {"copies": [], "controls": [], "val_photo": [p for _, _, p in val]}
    for i in planted:
        for kind in AGAINST_KINDS:
            rows.append(_variant(rng, kind, val[i][0], val[i][1]))
            truth["copies"].append({"val": i, "kind": kind, "row": len(rows) - 1})
    for data, _, photo in _pictures(rng, sources, bench):
        rows.append(data)
        truth["controls"].append({"row": len(rows) - 1, "photo": photo})
    for sub, name, images in (("val", "bench", [b for b, _, _ in val]), ("train", "train", rows)):
        (folder / sub).mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.table({"text": [f"{name} {k}" for k in range(len(images))],
                                 "image": pa.array(images, pa.binary())}), folder / sub / f"{name}.parquet")
    return truth


def _cli(*args) -> tuple[int, float, str]:
    t0 = time.time()
    proc = subprocess.run([sys.executable, "-m", "dataaudit.cli", *map(str, args), "--engine", "local"],
                          capture_output=True, text=True)
    if proc.returncode not in (0, 1):
        raise RuntimeError(f"{args[0]} exited {proc.returncode}: {proc.stderr[-2000:]}")
    return proc.returncode, time.time() - t0, proc.stdout


def score_joint(out: Path, truth: list[dict], base_rows: int) -> dict:
    clusters = pq.read_table(out / "clusters.parquet").to_pylist()
    keep = pq.read_table(out / "keep.parquet").to_pylist()
    kept_base = sum(1 for k in keep if Path(k["shard"]).stem == "base")
    cluster_of = {(Path(c["shard"]).stem, c["row"]): c["cluster_id"] for c in clusters}
    found = {"exact": [0, 0], "near": [0, 0]}
    for t in truth:
        a, b = cluster_of.get(("base", t["base"])), cluster_of.get(("copies", t["row"]))
        found[t["kind"]][1] += 1
        found[t["kind"]][0] += int(a is not None and a == b)
    return {"base_dropped": base_rows - kept_base,
            "found": {k: {"found": f, "planted": p} for k, (f, p) in found.items()}}


def score_against(out: Path, truth: dict) -> dict:
    overlap = {r["row"]: r for r in pq.read_table(out / "overlap.parquet").to_pylist()}
    found = {k: [0, 0, 0] for k in AGAINST_KINDS}     # reported, reported beside the planted image, planted
    for c in truth["copies"]:
        found[c["kind"]][2] += 1
        found[c["kind"]][0] += int(c["row"] in overlap)
        found[c["kind"]][1] += int(c["row"] in overlap and overlap[c["row"]]["val_row"] == c["val"])
    false = same_photo = 0
    for c in truth["controls"]:
        if c["row"] in overlap:
            if truth["val_photo"][overlap[c["row"]]["val_row"]] == c["photo"]:
                same_photo += 1
            else:
                false += 1
    return {"recall": {k: {"found": f, "same_image": same, "planted": p, "recall": round(f / p, 4)}
                       for k, (f, same, p) in found.items()},
            "controls": len(truth["controls"]), "false_matches": false, "same_photo_matches": same_photo,
            "kinds_reported": {k: sum(1 for r in overlap.values() if r["match"] == k)
                               for k in ("exact", "near", "flipped")}}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--texts", type=int, default=300, help="distinct texts, each with 3 images (default 300)")
    ap.add_argument("--planted", type=int, default=100, help="planted text+image duplicates (default 100)")
    ap.add_argument("--bench", type=int, default=300, help="benchmark images for --against (default 300)")
    ap.add_argument("--rate", type=float, default=0.2, help="share of benchmark images copied (default 0.2)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--work", default="bench-data/joint-dedup", help="scratch folder")
    ap.add_argument("--json", default=None, help="also write the figures to this JSON file")
    ap.add_argument("--strict", action="store_true", help="exit 3 when a target is missed")
    args = ap.parse_args(argv)
    return _common.run_with_data("joint_dedup", image_data.image_sources, run, args)


def run(args) -> int:
    work = Path(args.work)
    subprocess.run(["rm", "-rf", str(work)], check=True)
    rng = random.Random(args.seed)
    sources = image_data.load_sources()
    print(_common.machine_line())
    truth = joint_data(work / "joint", args.texts, args.planted, rng, sources)
    _, secs, _ = _cli("dedup", work / "joint", "--out", work / "out-joint", "--with-images")
    joint = score_joint(work / "out-joint", truth, 3 * args.texts)
    _, text_secs, _ = _cli("dedup", work / "joint", "--out", work / "out-text")
    text = score_joint(work / "out-text", truth, 3 * args.texts)
    rows = [["dedup --with-images", f"{joint['base_dropped']} of {3 * args.texts}", "0",
             *(f"{joint['found'][k]['found']} / {joint['found'][k]['planted']}" for k in ("exact", "near")),
             f"{secs:.1f}"],
            ["dedup (text only)", f"{text['base_dropped']} of {3 * args.texts}", "(none)",
             *(f"{text['found'][k]['found']} / {text['found'][k]['planted']}" for k in ("exact", "near")),
             f"{text_secs:.1f}"]]
    print(_common.fmt_table(["command", "records dropped (each text x 3 images)", "target",
                             "planted exact found", "planted near found", "seconds"], rows,
                            f"joint dedup: {args.texts} texts x 3 images + {args.planted} planted duplicates"))

    atruth = against_data(work / "against", args.bench, args.rate, rng, sources)
    code, asecs, _ = _cli("dedup-images", work / "against" / "train", "--out", work / "out-against",
                          "--against", work / "against" / "val")
    against = score_against(work / "out-against", atruth)
    rows = [[k, r["planted"], r["found"], f"{r['recall']:.3f}", ">= 0.95", r["same_image"]]
            for k, r in against["recall"].items()]
    print(_common.fmt_table(["copy kind", "planted", "reported", "recall", "target",
                             "named with the planted image"], rows,
                            f"dedup-images --against: {args.bench} benchmark images, exit {code}, {asecs:.1f} s"))
    print(f"controls (new crops in no benchmark): {against['false_matches']} of {against['controls']} matched a "
          f"crop of another photo (false matches); {against['same_photo_matches']} matched a crop of the same "
          f"photo (overlapping crops, not scored); reported kinds: {against['kinds_reported']}")
    missed = []
    if joint["base_dropped"]:
        missed.append("records dropped")
    if any(f["found"] < f["planted"] for f in joint["found"].values()):
        missed.append("planted duplicates")
    missed += [k for k, r in against["recall"].items() if r["recall"] < 0.95]
    print("targets: " + ("met" if not missed else "MISSED: " + ", ".join(missed)))
    _common.write_json_result(args.json, {"params": vars(args), "joint": joint, "text_only": text,
                                          "against": against, "seconds": {"joint": secs, "text": text_secs,
                                                                          "against": asecs}})
    return 3 if missed and args.strict else 0


if __name__ == "__main__":
    sys.exit(main())
