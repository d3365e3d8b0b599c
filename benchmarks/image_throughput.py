#!/usr/bin/env python
"""Image probe throughput vs a plain Pillow decode loop, images/s and MB/s of JPEG, one process, one run.

--images (2,000) 512x512 JPEGs (quality 90) are made from the real photos fixtures/image_data.py uses (random
crops, small rotations, flips, colour jitter, resized to 512x512: image_data.picture) and held in memory; then,
side by side, best of --repeats (3) runs each, the sides taking turns:

  peer          `with Image.open(io.BytesIO(b)) as im: im.load()` over every image, one thread (a full decode
                to RGB 512x512, what a loader or a "does it open" script does)
  probe         dataaudit.images.probe.probe(b) over every image, one thread: identify, the pixel bound, a full
                read of the stream (JPEG `draft`: grey, DCT scaled to ~64 px), the grey-level spread (blank
                check) and the 32x32 grey input of the perceptual hash
  batch         ImageBatch.of on one Arrow record batch holding the bytes (binary column `jpg`): the audit's
                image target (the probes, plus the xxh3 digest of each image and the arrays the checks read),
                with Limits(threads=1) and with the default Limits() threads (min(4, cpus))

MB = JPEG bytes. The ratio to the peer is printed per wall second and per CPU-second of this process (the
threaded row uses more than one core: its per-CPU-second ratio is the per-core figure). Target: the default path
(batch, default threads) >= 3x the peer's images/s. Then a correctness line: every truncated copy (cut at 50%,
90% and 99% of its bytes) of --truncated (50) of the JPEGs must be flagged corrupt by probe() (and what the peer
does with them).

    .venv/bin/python benchmarks/image_throughput.py --images 2000
"""
from __future__ import annotations

import argparse
import io
import os
import random
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402
sys.path.insert(0, str(_common.REPO))   # the data generators live in fixtures/ (not installed)
from fixtures import image_data  # noqa: E402

TARGET_RATIO = 3.0
SIDE = 512
QUALITY = 90
CUTS = (0.5, 0.9, 0.99)


def make_jpegs(work: Path, n: int, seed: int, force: bool = False, log=print) -> list[bytes]:
    """n SIDE x SIDE JPEGs (quality QUALITY) cut from image_data's source photos; cached in work as Parquet."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = work / f"jpegs-{n}-{SIDE}px-q{QUALITY}-seed{seed}.parquet"
    if path.is_file() and not force:
        blobs = pq.read_table(path).column("jpg").to_pylist()
        log(f"images: {path} reused ({len(blobs):,} JPEGs)")
        return blobs
    t0 = time.perf_counter()
    sources = image_data.load_sources()
    rng = random.Random(f"{seed}:throughput")
    blobs = []
    for _ in range(n):
        src = rng.choice(sources)
        blobs.append(image_data.encode(image_data.picture(rng, src, (SIDE, SIDE)), "jpeg", quality=QUALITY))
    work.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    pq.write_table(pa.table({"jpg": pa.array(blobs, pa.binary())}), tmp, compression="none")
    tmp.replace(path)
    log(f"images: {n:,} JPEGs made from {', '.join(s['name'] for s in sources)} in {time.perf_counter() - t0:.1f} s "
        f"-> {path}")
    return blobs


def _cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def side_peer(blobs: list[bytes]):
    from PIL import Image

    def go():
        for b in blobs:
            with Image.open(io.BytesIO(b)) as im:
                im.load()
    return go


def side_probe(blobs: list[bytes]):
    from dataaudit.images.probe import probe, quiet

    def go():
        with quiet():
            for b in blobs:
                probe(b)
    return go


def side_batch(blobs: list[bytes], threads: int | None):
    import pyarrow as pa

    from dataaudit.fields import Column
    from dataaudit.images.batch import ImageBatch, Limits

    batch = pa.record_batch({"jpg": pa.array(blobs, pa.binary())})
    fields = (Column("jpg", "image", "binary", image="bytes"),)
    limits = Limits() if threads is None else Limits(threads=threads)

    def go():
        ImageBatch.of(batch, fields, ".", limits)
    return go, limits.threads


def truncation_check(blobs: list[bytes], count: int) -> dict:
    """probe() (and the peer) on copies of the first `count` JPEGs cut at each of CUTS."""
    from PIL import Image

    from dataaudit.images.probe import CORRUPT, STATUS_NAMES, probe, quiet

    out = {"copies": 0, "flagged": 0, "peer_raises": 0, "per_cut": {}, "missed": []}
    with quiet():
        for cut in CUTS:
            c = out["per_cut"].setdefault(str(cut), {"copies": 0, "flagged": 0, "peer_raises": 0})
            for i, b in enumerate(blobs[:count]):
                bad = b[: int(len(b) * cut)]
                p = probe(bad)
                c["copies"] += 1
                c["flagged"] += p.status == CORRUPT
                if p.status != CORRUPT and len(out["missed"]) < 5:
                    out["missed"].append({"image": i, "cut": cut, "kept": len(bad), "of": len(b),
                                          "status": STATUS_NAMES[p.status], "error": p.error})
                try:
                    with Image.open(io.BytesIO(bad)) as im:
                        im.load()
                except Exception:  # noqa: BLE001  (any failure counts)
                    c["peer_raises"] += 1
    for c in out["per_cut"].values():
        for k in ("copies", "flagged", "peer_raises"):
            out[k] += c[k]
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--work", default=str(_common.REPO / "bench-data" / "image-throughput"),
                    help="folder for the cached JPEGs (default bench-data/image-throughput)")
    ap.add_argument("--images", type=int, default=2000, help=f"{SIDE}x{SIDE} JPEGs (default 2000)")
    ap.add_argument("--repeats", type=int, default=3, help="best of this many runs per side (default 3)")
    ap.add_argument("--truncated", type=int, default=50, help="JPEGs whose truncated copies are checked (default 50)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--force", action="store_true", help="remake the JPEGs even if cached")
    ap.add_argument("--json", default=None, help="also write the figures to this JSON file")
    ap.add_argument("--min-ratio", type=float, default=None,
                    help=f"exit 3 when the default path's images/s over the peer's is below this (target "
                         f"{TARGET_RATIO:g}; off by default)")
    ap.add_argument("--strict", action="store_true",
                    help=f"exit 3 when a target is missed: the default path below {TARGET_RATIO:g}x (or --min-ratio) "
                         f"or a truncated copy not flagged corrupt")
    args = ap.parse_args(argv)
    return _common.run_with_data("image_throughput", image_data.image_sources, run, args)


def run(args) -> int:
    import PIL
    from PIL import features

    print(_common.machine_line())
    print(f"Pillow {PIL.__version__} (libjpeg-turbo {features.version('libjpeg_turbo')})")
    blobs = make_jpegs(Path(args.work), args.images, args.seed)
    mb = sum(map(len, blobs)) / 1e6
    sizes = sorted(map(len, blobs))
    print(f"{len(blobs):,} JPEGs {SIDE}x{SIDE} q{QUALITY}: {mb:.1f} MB, {sizes[len(sizes) // 2] / 1e3:.0f} KB median "
          f"({sizes[0] / 1e3:.0f}-{sizes[-1] / 1e3:.0f} KB)")
    batch1, _ = side_batch(blobs, 1)
    batchn, threads = side_batch(blobs, None)
    sides = {"peer": ("Image.open(b).load(), 1 thread", side_peer(blobs), 1),
             "probe": ("probe(b), 1 thread", side_probe(blobs), 1),
             "batch-1": ("ImageBatch.of, Limits(threads=1)", batch1, 1),
             "batch-default": (f"ImageBatch.of, Limits() = {threads} threads", batchn, threads)}
    sides["probe"][1]()                          # warm-up, untimed (imports, first decodes)
    times = {k: [] for k in sides}
    cpu = {k: [] for k in sides}
    for r in range(max(1, args.repeats)):
        order = list(sides) if r % 2 == 0 else list(reversed(sides))
        for k in order:
            c0, t0 = _cpu(), time.perf_counter()
            sides[k][1]()
            times[k].append(time.perf_counter() - t0)
            cpu[k].append(_cpu() - c0)
    best = {k: min(v) for k, v in times.items()}
    best_cpu = {k: cpu[k][times[k].index(best[k])] for k in sides}
    ips = {k: len(blobs) / best[k] for k in sides}
    ips_cpu = {k: len(blobs) / best_cpu[k] for k in sides}
    rows = []
    for k, (label, _, th) in sides.items():
        rows.append([label, " ".join(f"{t:.2f}" for t in times[k]), f"{ips[k]:,.0f}", f"{mb / best[k]:.1f}",
                     f"{best_cpu[k]:.2f}", f"{ips_cpu[k]:,.0f}",
                     "peer" if k == "peer" else f"{ips[k] / ips['peer']:.2f}x / {ips_cpu[k] / ips_cpu['peer']:.2f}x"])
    print()
    print(_common.fmt_table(["side", "runs (wall s)", "images/s", "MB/s", "CPU s", "images/CPU-s",
                             "vs peer (wall / CPU)"], rows,
                            title=f"{len(blobs):,} JPEGs in memory, best of {args.repeats} (sides in turns); "
                                  f"{os.cpu_count()} cpus; target: the default path >= {TARGET_RATIO:g}x:"))
    target = args.min_ratio if args.min_ratio is not None else TARGET_RATIO
    ratio = ips["batch-default"] / ips["peer"]
    per_core = ips_cpu["batch-1"] / ips_cpu["peer"]
    verdict = "meets" if ratio >= target else "BELOW"
    print(f"default path (ImageBatch.of, {threads} threads): {ips['batch-default']:,.0f} images/s vs the peer's "
          f"{ips['peer']:,.0f} = {ratio:.2f}x ({verdict} the {target:g}x target); one thread: probe "
          f"{ips['probe'] / ips['peer']:.2f}x, ImageBatch.of {ips['batch-1'] / ips['peer']:.2f}x (per CPU-second "
          f"{per_core:.2f}x); {threads} threads on {os.cpu_count()} cpus: "
          f"{ips['batch-default'] / ips['batch-1']:.2f}x one thread")
    t = truncation_check(blobs, args.truncated)
    cuts = ", ".join(f"{float(c):.0%}: {v['flagged']}/{v['copies']}" for c, v in t["per_cut"].items())
    print(f"correctness: truncated copies flagged corrupt by probe(): {t['flagged']} / {t['copies']} ({cuts}); "
          f"the peer raises on {t['peer_raises']} / {t['copies']}")
    for m in t["missed"]:
        print(f"  not flagged: image {m['image']} cut at {m['cut']:.0%} ({m['kept']} of {m['of']} bytes): "
              f"{m['status']} {m['error'] or ''}")
    _common.write_json_result(args.json, {"images": len(blobs), "mb": mb, "side": SIDE, "quality": QUALITY,
                                          "cpus": os.cpu_count(), "threads_default": threads,
                                          "seconds": times, "cpu_seconds": cpu, "images_per_s": ips,
                                          "images_per_cpu_s": ips_cpu, "ratio_default": ratio,
                                          "ratio_per_core": per_core, "truncated": t})
    if args.min_ratio is not None and ratio < args.min_ratio:
        print(f"image_throughput: ratio {ratio:.2f} < --min-ratio {args.min_ratio:g}", file=sys.stderr)
        return 3
    if args.strict and (ratio < target or t["flagged"] < t["copies"]):
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
