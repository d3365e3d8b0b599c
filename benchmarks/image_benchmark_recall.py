#!/usr/bin/env python
"""Recall and false matches of `dataaudit contamination` with an image benchmark, on real photos.

Sources: the distinct real photos of ../shared/data (sugarshack_bad_mpo_header.jpg, the LLaMA-Factory demo photos
posttrain/mllm_demo_data/1-3.jpg) and matplotlib's sample photos (grace_hopper.jpg, Minduka_Present_Blue_Pack.png);
not images/hopper.jpg, which is cut from grace_hopper.jpg (crops of the two at one place are one picture). Every picture is a crop of one of them at a random place and scale (25-100% of
the side, its box recorded), resized to 96-320 px and saved as JPEG: `--bench` of them form the benchmark (a
folder), `--unrelated` others (another seed), plus `--textures` Pillow-made textures (noise, gradients, shapes),
are the unrelated training photos. Each benchmark picture is planted in the training data four times:

  reencode   decoded and saved again: JPEG quality 40-70, or WebP / PNG
  resize     scaled to 40-90% of its size
  crop       2-5% cut from each border (each border its own share)
  mirror     flipped left-right, saved again as JPEG

The training data: one JSONL shard, one image per record, half as `images: [path]`, half as an OpenAI content part
(`messages[0].content[1]`). `dataaudit contamination --train T --benchmark bench=FOLDER` (the CLI, one process)
is scored from bench/items.parquet (every matching record listed: [report] max_matches is raised):

  recall per kind   planted copies found as a match of their own benchmark picture (target >= 0.95 each)
  false matches     unrelated training photos matched to some benchmark picture they are unrelated to, over all
                    unrelated photos (target <= 0.1%). Unrelated: a texture; another source photo; or the same
                    photo where the two crop boxes overlap by at most half their union (IoU <= 0.5). Pairs of
                    crops of one photo with IoU > 0.5 may show the same picture: counted apart, not scored.

    .venv/bin/python benchmarks/image_benchmark_recall.py
"""
from __future__ import annotations

import argparse
import io
import json
import random
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402

KINDS = ("reencode", "resize", "crop", "mirror")
RECALL_TARGET, FALSE_TARGET = 0.95, 0.001


def sources(shared: Path | None = None) -> list[tuple[str, Path]]:
    """(photo name, path) of the distinct real photos; FileNotFoundError naming the missing one."""
    import matplotlib

    shared = shared or _common.REPO.parent / "shared" / "data"
    mpl = Path(matplotlib.get_data_path()) / "sample_data"
    # hopper.jpg is left out: Pillow's hopper is cut from matplotlib's grace_hopper photo (one photo twice)
    out = [("sugarshack", shared / "images" / "sugarshack_bad_mpo_header.jpg")]
    out += [(f"demo{i}", shared / "posttrain" / "mllm_demo_data" / f"{i}.jpg") for i in (1, 2, 3)]
    out += [("grace_hopper", mpl / "grace_hopper.jpg"), ("minduka", mpl / "Minduka_Present_Blue_Pack.png")]
    for _, p in out:
        if not p.is_file():
            raise FileNotFoundError(f"{p}: missing (put ../shared/data beside the checkout)")
    return out


def _load(path: Path):
    import warnings

    from PIL import Image

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")              # sugarshack: "malformed MPO file", read as its base JPEG
        with Image.open(path) as im:
            im.load()
            if im.mode in ("RGBA", "LA", "PA", "P"):
                rgba = im.convert("RGBA")
                rgb = Image.new("RGB", rgba.size, (255, 255, 255))
                rgb.paste(rgba, mask=rgba.getchannel("A"))
                return rgb
            return im.convert("RGB")


def _save(im, fmt: str = "JPEG", quality: int = 90) -> bytes:
    buf = io.BytesIO()
    im.save(buf, fmt, quality=quality) if fmt != "PNG" else im.save(buf, fmt)
    return buf.getvalue()


def crop_picture(rng: random.Random, photos: list) -> tuple[bytes, dict]:
    """A crop of a random photo at a random place: (JPEG bytes, {photo, box})."""
    from PIL import Image

    name, img = rng.choice(photos)
    W, H = img.size
    for _ in range(50):
        s = rng.uniform(0.25, 1.0)
        cw, ch = max(16, int(W * s * rng.uniform(0.7, 1.0))), max(16, int(H * s * rng.uniform(0.7, 1.0)))
        x, y = rng.randint(0, W - cw), rng.randint(0, H - ch)
        im = img.crop((x, y, x + cw, y + ch))
        side = rng.randint(96, 320)
        im = im.resize((side, max(16, round(side * ch / cw))), Image.LANCZOS)
        import numpy as np
        if float(np.asarray(im.convert("L"), np.float64).std()) >= 12:    # detail, not a flat patch
            return _save(im, quality=rng.randint(80, 95)), {"photo": name, "box": (x, y, x + cw, y + ch)}
    raise RuntimeError(f"{name}: no detailed crop")


def texture(rng: random.Random) -> bytes:
    """A Pillow-made picture: noise, a gradient with shapes, or stripes."""
    import numpy as np
    from PIL import Image, ImageDraw, ImageFilter

    w, h = rng.randint(96, 320), rng.randint(96, 320)
    nrng = np.random.default_rng(rng.randrange(1 << 30))
    kind = rng.randrange(3)
    if kind == 0:
        im = Image.fromarray(nrng.integers(0, 256, (h // 8 + 1, w // 8 + 1, 3), dtype=np.uint8)).resize(
            (w, h), Image.BICUBIC).filter(ImageFilter.GaussianBlur(rng.uniform(0, 3)))
    elif kind == 1:
        yy, xx = np.mgrid[0:h, 0:w]
        a = rng.uniform(0, 6.28)
        g = ((np.cos(a) * xx + np.sin(a) * yy) / max(w, h) * 255).clip(0, 255).astype(np.uint8)
        im = Image.fromarray(np.stack([g, np.roll(g, rng.randrange(w), 1), 255 - g], 2))
        d = ImageDraw.Draw(im)
        for _ in range(rng.randint(3, 12)):
            x0, y0 = rng.randrange(w), rng.randrange(h)
            box = (x0, y0, x0 + rng.randint(10, w), y0 + rng.randint(10, h))
            fill = tuple(rng.randrange(256) for _ in range(3))
            (d.ellipse if rng.random() < 0.5 else d.rectangle)(box, fill=fill)
    else:
        yy, xx = np.mgrid[0:h, 0:w]
        f1, f2 = rng.uniform(0.02, 0.3), rng.uniform(0.02, 0.3)
        v = (np.sin(xx * f1 + yy * f2 * rng.uniform(-1, 1)) * 127 + 128).astype(np.uint8)
        im = Image.fromarray(np.stack([v, v[::-1], np.roll(v, 7, 0)], 2))
    return _save(im, quality=rng.randint(75, 95))


def copy_of(rng: random.Random, kind: str, data: bytes) -> bytes:
    from PIL import Image, ImageOps

    with Image.open(io.BytesIO(data)) as im:
        im = im.convert("RGB")
    w, h = im.size
    if kind == "reencode":
        fmt = rng.choice(("JPEG", "WEBP", "PNG"))
        return _save(im, fmt, quality=rng.randint(40, 70))
    if kind == "resize":
        s = rng.uniform(0.4, 0.9)
        return _save(im.resize((max(8, int(w * s)), max(8, int(h * s))), Image.LANCZOS))
    if kind == "crop":      # each border cut on its own: 2-5% of the side
        c = [rng.uniform(0.02, 0.05) for _ in range(4)]
        return _save(im.crop((int(w * c[0]), int(h * c[1]), w - int(w * c[2]), h - int(h * c[3]))))
    if kind == "mirror":
        return _save(ImageOps.mirror(im))
    raise ValueError(kind)


def overlap(a: tuple, b: tuple) -> float:
    """Intersection of two boxes over their union."""
    iw = max(0, min(a[2], b[2]) - max(a[0], b[0]))
    ih = max(0, min(a[3], b[3]) - max(a[1], b[1]))
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - iw * ih
    return iw * ih / union if union else 0.0


def generate(work: Path, args) -> dict:
    photos = [(name, _load(p)) for name, p in sources()]
    rng = random.Random(args.seed)
    bench_dir, train_dir = work / "bench", work / "train"
    for d in (bench_dir, train_dir):
        d.mkdir(parents=True, exist_ok=True)
    bench = []
    for i in range(args.bench):
        data, meta = crop_picture(rng, photos)
        (bench_dir / f"b{i:04d}.jpg").write_bytes(data)
        bench.append({**meta, "data": data})
    train = []      # per training record: ("copy", bench index, kind) | ("photo", meta) | ("texture", None)
    files = []
    for i, b in enumerate(bench):
        for kind in KINDS:
            data = copy_of(rng, kind, b["data"])
            files.append(data)
            train.append(("copy", i, kind))
    urng = random.Random(args.seed + 1)
    for _ in range(args.unrelated):
        data, meta = crop_picture(urng, photos)
        files.append(data)
        train.append(("photo", meta, None))
    for _ in range(args.textures):
        files.append(texture(urng))
        train.append(("texture", None, None))
    order = list(range(len(train)))
    rng.shuffle(order)
    train = [train[k] for k in order]
    files = [files[k] for k in order]
    with open(train_dir / "train.jsonl", "w") as f:
        for r, data in enumerate(files):
            ext = "png" if data[:4] == b"\x89PNG" else "webp" if data[8:12] == b"WEBP" else "jpg"
            name = f"t{r:05d}.{ext}"
            (train_dir / name).write_bytes(data)
            if r % 2:
                rec = {"messages": [{"role": "user", "content": [{"type": "text", "text": f"look {r}"},
                                                                 {"type": "image", "image": name}]},
                                    {"role": "assistant", "content": [{"type": "text", "text": "ok"}]}]}
            else:
                rec = {"images": [name], "text": f"record {r}"}
            f.write(json.dumps(rec) + "\n")
    return {"bench": bench, "train": train}


def score(truth: dict, items: list[dict]) -> dict:
    bench, train = truth["bench"], truth["train"]
    found = {k: [0, 0] for k in KINDS}
    matched: dict[int, set[int]] = {}           # training row -> benchmark images it matched
    for it in items:
        b = int(it["id"][1:])
        for m in it["matches"]:
            matched.setdefault(m["row"], set()).add(b)
    for row, (what, b, kind) in enumerate(train):
        if what == "copy":
            found[kind][1] += 1
            found[kind][0] += int(b in matched.get(row, ()))
    false, ambiguous, unrelated = 0, 0, 0
    for row, (what, meta, _) in enumerate(train):
        if what == "copy":
            continue
        unrelated += 1
        hits = matched.get(row, set())
        real = [b for b in hits if what == "texture" or bench[b]["photo"] != meta["photo"]
                or overlap(bench[b]["box"], meta["box"]) <= 0.5]
        false += bool(real)
        ambiguous += bool(hits) and not real
    return {"recall": {k: {"found": f, "planted": p, "recall": round(f / p, 4)} for k, (f, p) in found.items()},
            "unrelated": unrelated, "false_matches": false, "false_match_rate": round(false / unrelated, 5),
            "same_photo_overlapping": ambiguous}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bench", type=int, default=300, help="benchmark pictures (default 300)")
    ap.add_argument("--unrelated", type=int, default=3000, help="unrelated real-photo crops (default 3000)")
    ap.add_argument("--textures", type=int, default=1000, help="unrelated Pillow textures (default 1000)")
    ap.add_argument("--max-distance", type=int, default=None, help="[images] max_distance (default: the config's)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--work", default="bench-data/image-benchmark", help="scratch folder")
    ap.add_argument("--json", default=None, help="also write the figures to this JSON file")
    ap.add_argument("--strict", action="store_true", help="exit 3 when a target is missed")
    args = ap.parse_args(argv)
    try:
        sources()
    except FileNotFoundError as exc:
        print(f"skipped: {exc}")
        return 0
    return run(args)


def run(args) -> int:
    import pyarrow.parquet as pq

    work = Path(args.work)
    subprocess.run(["rm", "-rf", str(work)], check=True)
    t0 = time.time()
    truth = generate(work, args)
    print(_common.machine_line())
    n_train = len(truth["train"])
    print(f"data: {args.bench} benchmark photos, {args.bench * len(KINDS)} planted copies, {args.unrelated} "
          f"unrelated photo crops, {args.textures} textures ({n_train} training records) in {time.time() - t0:.1f} s")
    config = work / "contamination.toml"
    config.write_text(f"[report]\nmax_matches = {n_train}\n" +
                      (f"[images]\nmax_distance = {args.max_distance}\n" if args.max_distance is not None else ""))
    out = work / "out"
    cli = [sys.executable, "-m", "dataaudit.cli", "contamination", "--train", str(work / "train" / "train.jsonl"),
           "--benchmark", f"bench={work / 'bench'}", "--out", str(out), "--config", str(config), "--engine", "local"]
    t0 = time.time()
    proc = subprocess.run(cli, capture_output=True, text=True)
    seconds = time.time() - t0
    if proc.returncode not in (0, 1):
        print(proc.stdout[-2000:], proc.stderr[-2000:])
        return 1
    report = json.loads((out / "contamination.json").read_text())
    distance = report["methods"]["image"]["max_distance"]
    result = score(truth, pq.read_table(out / "bench" / "items.parquet").to_pylist())
    rows = [[k, r["planted"], r["found"], f"{r['recall']:.3f}", f">= {RECALL_TARGET}"]
            for k, r in result["recall"].items()]
    print(_common.fmt_table(["copy kind", "planted", "found", "recall", "target"], rows,
                            f"contamination, image benchmark, max_distance {distance}, {seconds:.1f} s end to end"))
    print(f"false matches: {result['false_matches']} of {result['unrelated']} unrelated training photos "
          f"({100 * result['false_match_rate']:.3f}%; target <= {100 * FALSE_TARGET:.1f}%); matched only to a "
          f"crop of the same photo with IoU > 0.5: {result['same_photo_overlapping']} (not scored)")
    missed = [k for k, r in result["recall"].items() if r["recall"] < RECALL_TARGET]
    if result["false_match_rate"] > FALSE_TARGET:
        missed.append("false matches")
    b = report["image_benchmarks"]["bench"]
    print(f"benchmark photos of low detail, matched by their bytes only: {b['bytes_only']} of {b['items']}")
    print("targets: " + ("met" if not missed else "MISSED: " + ", ".join(missed)))
    _common.write_json_result(args.json, {"params": vars(args), "seconds": seconds, "max_distance": distance,
                                          "bytes_only": b["bytes_only"], **result})
    return 3 if missed and args.strict else 0


if __name__ == "__main__":
    sys.exit(main())
