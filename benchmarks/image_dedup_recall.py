#!/usr/bin/env python
"""Recall and false merges of `dataaudit dedup-images` on real photos with planted copies.

Base images are crops of the real photos fixtures/image_data.py uses (../shared/data/images and matplotlib's
sample photos; random regions, scales, flips, colour jitter, re-encoded), each a different picture. A share of
them (`--rate`) gets one copy of each kind, written to another shard of the same Parquet dataset (`image`
binary + `text`):

  exact      the same bytes
  reencode   decoded and saved again: JPEG quality 40-70, or another format (PNG, WebP)
  resize     scaled to 40-90% of its size
  crop       2-5% cut from the borders
  bright     brightness and contrast changed by 5-10%

`dataaudit dedup-images DATA --out OUT --engine local` (the installed CLI, one process) is scored against the
truth: recall per kind = copies in the same cluster as their original; false merges = base images cut from
different photos that end in one cluster (two crops of one photo may overlap: counted apart, not scored). Targets: recall >= 0.95 for exact, reencode, resize (the kinds a perceptual
hash is made for); crop and bright are printed as measured; false merges <= 1% of base images.

    .venv/bin/python benchmarks/image_dedup_recall.py --images 1000
"""
from __future__ import annotations

import argparse
import json
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

KINDS = ("exact", "reencode", "resize", "crop", "bright")
TARGETS = {"exact": 0.95, "reencode": 0.95, "resize": 0.95}


def _copy(rng: random.Random, kind: str, data: bytes, fmt: str) -> bytes:
    from PIL import Image, ImageEnhance
    import io

    if kind == "exact":
        return data
    with Image.open(io.BytesIO(data)) as im:
        im = im.convert("RGB")
    w, h = im.size
    if kind == "reencode":
        other = rng.choice([f for f in ("jpeg", "png", "webp") if f != fmt])
        return image_data.encode(im, other, rng, quality=rng.randint(40, 70))
    if kind == "resize":
        s = rng.uniform(0.4, 0.9)
        return image_data.encode(im.resize((max(8, int(w * s)), max(8, int(h * s))), Image.LANCZOS), fmt, rng)
    if kind == "crop":
        c = rng.uniform(0.02, 0.05)
        return image_data.encode(im.crop((int(w * c), int(h * c), w - int(w * c), h - int(h * c))), fmt, rng)
    if kind == "bright":
        im = ImageEnhance.Brightness(im).enhance(rng.choice((0.9, 0.95, 1.05, 1.1)))
        return image_data.encode(ImageEnhance.Contrast(im).enhance(rng.choice((0.92, 1.08))), fmt, rng)
    raise ValueError(kind)


def generate(out: Path, n: int, rate: float, seed: int) -> dict:
    """Base images in base.parquet, their copies in copies.parquet; returns the truth."""
    rng = random.Random(seed)
    sources = image_data.load_sources()
    prof = image_data.PROFILES["default"]
    base, truth = [], {"copies": [], "photo": []}
    for i in range(n):
        img, src = image_data.clean_picture(rng, sources, prof)
        base.append((img["bytes"], img["fmt"]))
        truth["photo"].append(src["name"].split(".")[0])   # hopper.jpg/.png/.webp: one photo
    planted = rng.sample(range(n), max(1, int(n * rate)))
    copies = []
    for i in planted:
        for kind in KINDS:
            copies.append(_copy(rng, kind, *base[i]))
            truth["copies"].append({"base": i, "kind": kind, "row": len(copies) - 1})
    out.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"image": pa.array([b for b, _ in base], pa.binary()),
                             "text": [f"base {i}" for i in range(n)]}), out / "base.parquet")
    pq.write_table(pa.table({"image": pa.array(copies, pa.binary()),
                             "text": [f"copy {c['kind']} of {c['base']}" for c in truth["copies"]]}),
                   out / "copies.parquet")
    truth["base"] = n
    return truth


def score(truth: dict, clusters: list[dict]) -> dict:
    cluster_of = {(Path(c["shard"]).stem, c["row"]): c["cluster_id"] for c in clusters}
    found = {k: [0, 0] for k in KINDS}
    for c in truth["copies"]:
        a = cluster_of.get(("base", c["base"]))
        b = cluster_of.get(("copies", c["row"]))
        found[c["kind"]][1] += 1
        found[c["kind"]][0] += int(a is not None and a == b)
    members: dict[int, list[int]] = {}
    for (shard, row), cid in cluster_of.items():
        if shard == "base":
            members.setdefault(cid, []).append(row)
    merged = [rows for rows in members.values() if len(rows) > 1]
    # base images cut from different photos are different pictures: merging them is a false merge; two crops of
    # one photo may overlap (a crop at 90-100% of the frame twice is one picture), so they are counted apart
    false = sum(len(r) for r in merged if len({truth["photo"][i] for i in r}) > 1)
    same_photo = sum(len(r) for r in merged if len({truth["photo"][i] for i in r}) == 1)
    return {"recall": {k: {"found": f, "planted": p, "recall": round(f / p, 4) if p else None}
                       for k, (f, p) in found.items()},
            "false_merges": false, "false_merge_rate": round(false / truth["base"], 4),
            "same_photo_merges": same_photo}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--images", type=int, default=1000, help="base images (default 1000)")
    ap.add_argument("--rate", type=float, default=0.1, help="share of base images that get copies (default 0.1)")
    ap.add_argument("--max-distance", type=int, default=6)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--work", default="bench-data/image-dedup", help="scratch folder")
    ap.add_argument("--json", default=None, help="also write the figures to this JSON file")
    ap.add_argument("--strict", action="store_true", help="exit 3 when a target is missed")
    args = ap.parse_args(argv)
    return _common.run_with_data("image_dedup_recall", image_data.image_sources, run, args)


def run(args) -> int:
    work = Path(args.work)
    data, out = work / "data", work / "out"
    t0 = time.time()
    truth = generate(data, args.images, args.rate, args.seed)
    print(_common.machine_line())
    print(f"data: {args.images} base images, {len(truth['copies'])} copies in {time.time() - t0:.1f} s -> {data}")
    cli = [sys.executable, "-m", "dataaudit.cli", "dedup-images", str(data), "--out", str(out), "--engine", "local",
           "--max-distance", str(args.max_distance)]
    subprocess.run(["rm", "-rf", str(out)], check=True)
    t0 = time.time()
    proc = subprocess.run(cli, capture_output=True, text=True)
    seconds = time.time() - t0
    if proc.returncode != 0:
        print(proc.stdout[-2000:], proc.stderr[-2000:])
        return 1
    result = score(truth, pq.read_table(out / "clusters.parquet").to_pylist())
    report = json.loads((out / "dedup.json").read_text())
    rows = [[k, r["planted"], r["found"], f"{r['recall']:.3f}", f">= {TARGETS[k]}" if k in TARGETS else "measured"]
            for k, r in result["recall"].items()]
    print(_common.fmt_table(["copy kind", "planted", "same cluster", "recall", "target"], rows,
                            f"dedup-images at max_distance {args.max_distance}, {seconds:.1f} s for "
                            f"{report['documents']} records"))
    print(f"false merges (base images cut from different photos in one cluster): {result['false_merges']} of "
          f"{truth['base']} ({100 * result['false_merge_rate']:.2f}%; target <= 1%); base images clustered with "
          f"another crop of the same photo: {result['same_photo_merges']} (overlapping crops, not scored)")
    missed = [k for k, t in TARGETS.items() if result["recall"][k]["recall"] < t]
    if result["false_merge_rate"] > 0.01:
        missed.append("false merges")
    print("targets: " + ("met" if not missed else "MISSED: " + ", ".join(missed)))
    _common.write_json_result(args.json, {"params": vars(args), "seconds": seconds, **result})
    return 3 if missed and args.strict else 0


if __name__ == "__main__":
    sys.exit(main())
