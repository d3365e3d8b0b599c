#!/usr/bin/env python
"""Recall and false positives of the audit on image-text data, per layout; real hostile files; a bomb's memory.

Generates the image-text datasets (fixtures/image_data.py: WebDataset tars, HF-datasets Parquet, raw-bytes
Parquet, JSONL with image paths and LLaVA-style multimodal JSONL, built from real photos with defects planted at
known records), runs `python -m dataaudit.cli audit SHARDS --out DIR --engine local` on each layout (one process
each, this checkout's code: its root is put first on the child's PYTHONPATH), and scores its flags.parquet
against truth.json:

  recall        per kind: planted records on which EVERY expected check flagged (a sliver is image_aspect_ratio
                and image_too_small; a GIF or PNG in parquet_bytes' `jpg` column is also image_format_mismatch).
                "partial" = some but not all of them; multimodal: "other image" = found, but on another image
                of the record than the planted one (`images[k]`).
  clean flagged the records never planted that get ANY flag, as a share of them; which checks flag them, with
                examples (shard, key, field, detail).

Then two rows on files nobody generated:

  hostile files the real files of ../shared/data/images/ (Pillow's test images: a hostile TIFF, a truncated TGA,
                hopper in four formats, a JPEG with a malformed MPO header) written into one Parquet file
                (`image`: binary, `text`: a caption) and audited; per file the flags it got, what was expected
                (crash-*.tif, *.tga: image_corrupt; hopper.{jpg,png,webp}, sugarshack: none; hopper.gif is a
                palette image: shown, not scored), and what the peer, `Image.open(b).load()`, does with it.
  bomb          a Parquet file holding a --bomb-side (40,000) square 8-bit greyscale PNG of zero rows
                (image_data.write_png_bomb: ~1.6 MB declaring 1.6 G pixels) among a few clean images, audited
                by the CLI as a child under a small wrapper process: the kernel's peak RSS of the audit
                (getrusage(RUSAGE_CHILDREN).ru_maxrss of the wrapper, as benchmarks/memory_scaling.py), beside
                the same file without the bomb; and whether it is flagged image_bomb.

Targets: recall >= 0.95 for every kind; clean flagged <= 1%; every hostile file as expected; the bomb flagged
with a peak RSS < 2 GB. Exit status: 0 done (targets met or not), 1 error, 3 a target missed and --strict given.

    .venv/bin/python benchmarks/image_recall.py                          # 400 records per layout, 5 layouts
    .venv/bin/python benchmarks/image_recall.py --data bench-data/images --layouts webdataset --examples 5
"""
from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402
sys.path.insert(0, str(_common.REPO))   # the data generators live in fixtures/ (not installed)
from fixtures import image_data  # noqa: E402

TARGET_RECALL = 0.95
TARGET_CLEAN = 0.01
TARGET_BOMB_RSS = 2 << 30

# The real files of ../shared/data/images and the checks expected on each (None: shown, not scored).
HOSTILE = {
    "crash-4f085cc12ece8cde18758d42608bed6a2a2cfb1c.tif": ["image_corrupt"],
    "cross_scan_line_truncated.tga": ["image_corrupt"],
    "hopper.jpg": [],
    "hopper.png": [],
    "hopper.webp": [],
    "sugarshack_bad_mpo_header.jpg": [],
    "hopper.gif": None,
}
HOSTILE_NOTE = {"hopper.gif": "palette (P) GIF, no transparency: not scored"}


# ------------------------------------------------------------------------------------------------ scoring

def _rel(shard: str, data: Path) -> str:
    """A flag's shard as truth.json names it: relative to the data folder, POSIX."""
    p = Path(shard).resolve()
    try:
        return p.relative_to(data.resolve()).as_posix()
    except ValueError:
        return Path(shard).as_posix()


def record_key(layout: str, flag: dict) -> str:
    """truth.json's record key of a flag: the tar sample key (WebDataset), else the 0-based row as a string."""
    return flag["key"] if layout == "webdataset" else str(flag["row"])


def score(layout: str, lt: dict, flags: list[dict], data: Path, examples: int = 3) -> dict:
    """Score one layout's audit against its truth (truth.json's layouts[LAYOUT]).

    flags: flags.parquet rows (dicts with shard, key, row, field, check, detail). Returns
    {kinds: {kind: {checks, planted, found, partial, other_image, recall, misses, reasons, variants}},
     clean: {records, flagged, share, by_check: {check: {records, examples}}}, planted_extra: {check: records},
     key_mismatch: flags whose key column is not their row (Parquet / JSONL), flags: how many}."""
    by_record: dict[tuple[str, str], list[dict]] = defaultdict(list)
    mismatch = 0
    for f in flags:
        if layout != "webdataset" and f["key"] != str(f["row"]):
            mismatch += 1
        by_record[(_rel(f["shard"], data), record_key(layout, f))].append(f)
    kinds: dict[str, dict] = {}
    extra: Counter = Counter()
    for shard, planted in lt["planted"].items():
        for key, checks in planted.items():
            d = lt["details"][shard][key]
            k = kinds.setdefault(d["kind"], {"checks": list(checks), "planted": 0, "found": 0, "partial": 0,
                                             "other_image": 0, "misses": [], "reasons": Counter(),
                                             "variants": Counter()})
            for c in checks:
                if c not in k["checks"]:
                    k["checks"].append(c)
            k["planted"] += 1
            on = by_record.get((shard, key), [])
            got = {f["check"] for f in on}
            for c in got - set(checks):
                extra[c] += 1
            if set(checks) <= got:
                k["found"] += 1
                if "image" in d and d["kind"] in image_data.IMAGE_KINDS + image_data.PATH_KINDS:
                    want = f"images[{d['image']}]"
                    if not any(f["field"] == want for f in on if f["check"] == d["kind"]):
                        k["other_image"] += 1
                continue
            hit = set(checks) & got
            if hit:
                k["partial"] += 1
                reason = f"partial: {', '.join(sorted(hit))} without {', '.join(sorted(set(checks) - got))}"
            elif on:
                reason = "other checks only: " + ", ".join(sorted(got))
            else:
                reason = "no flag on the record"
            k["reasons"][f"{reason} [{d.get('variant')}]"] += 1
            k["variants"][d.get("variant")] += 1
            if len(k["misses"]) < examples:
                k["misses"].append({"shard": shard, "key": key, "details": d,
                                    "flags": [(f["check"], f["field"], f["detail"]) for f in on]})
    order = list(image_data.KINDS)
    kinds = {kind: kinds[kind] for kind in sorted(kinds, key=lambda x: order.index(x) if x in order else len(order))}
    for k in kinds.values():
        k["recall"] = k["found"] / k["planted"] if k["planted"] else None
    by_check: dict[str, dict] = {}
    n_clean = flagged = 0
    for shard, keys in lt["clean"].items():
        for key in keys:
            n_clean += 1
            on = by_record.get((shard, key), [])
            if on:
                flagged += 1
            for check in sorted({f["check"] for f in on}):
                c = by_check.setdefault(check, {"records": 0, "examples": []})
                c["records"] += 1
                if len(c["examples"]) < examples:
                    f = next(f for f in on if f["check"] == check)
                    c["examples"].append({"shard": shard, "key": key, "field": f["field"], "detail": f["detail"]})
    clean = {"records": n_clean, "flagged": flagged, "share": flagged / n_clean if n_clean else 0.0,
             "by_check": dict(sorted(by_check.items(), key=lambda kv: -kv[1]["records"]))}
    return {"kinds": kinds, "clean": clean, "planted_extra": dict(extra.most_common()), "key_mismatch": mismatch,
            "flags": len(flags)}


def targets_met(result: dict) -> tuple[bool, list[str]]:
    missed = [f"{kind} recall {k['recall']:.2f}" for kind, k in result["kinds"].items()
              if k["recall"] is not None and k["recall"] < TARGET_RECALL]
    if result["clean"]["share"] > TARGET_CLEAN:
        missed.append(f"clean flagged {result['clean']['share']:.1%}")
    return not missed, missed


# -------------------------------------------------------------------------------------------------- running

def layout_shards(data: Path, lt: dict) -> list[Path]:
    return [data / s for s in lt["shards"]]


# ------------------------------------------------------------------------------------ hostile files, bomb

def _peer(data: bytes) -> str:
    """What the peer does: `with Image.open(io.BytesIO(b)) as im: im.load()`, warnings silenced (and libtiff's
    own messages on file descriptor 2)."""
    import warnings

    from PIL import Image

    sys.stderr.flush()
    saved, null = os.dup(2), os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 2)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with Image.open(io.BytesIO(data)) as im:
                im.load()
                return f"loads: {im.format} {im.size[0]}x{im.size[1]} {im.mode}"
    except Exception as e:  # noqa: BLE001  (the answer is whatever it raised)
        return f"raises {type(e).__name__}: {' '.join(str(e).split())[:60]}"
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(null)


def _caption_table(images: list[bytes], path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    caps = [f"A test picture from the Pillow test suite, number {i + 1}, shown to check the decoder."
            for i in range(len(images))]
    pq.write_table(pa.table({"image": pa.array(images, pa.binary()), "text": pa.array(caps, pa.string())}), path)


def hostile_files(work: Path, config: str | None) -> dict:
    """Write the real files of shared/data/images into one Parquet (`image` binary, `text`) and audit it."""
    folder = image_data.shared_data_dir() / "images"
    names = [n for n in HOSTILE if (folder / n).is_file()]
    blobs = [(folder / n).read_bytes() for n in names]
    d = work / "hostile"
    d.mkdir(parents=True, exist_ok=True)
    path = d / "hostile.parquet"
    _caption_table(blobs, path)
    res = _common.run_audit_cli([path], d / "audit", config)
    rows = []
    on = defaultdict(list)
    for f in res.get("flags", []):
        on[int(f["row"])].append(f)
    for i, (name, b) in enumerate(zip(names, blobs)):
        got = sorted({f["check"] for f in on[i]})
        want = HOSTILE[name]
        ok = None if want is None else set(got) == set(want)
        rows.append({"file": name, "bytes": len(b), "expected": want, "got": got, "ok": ok,
                     "details": [f"{f['check']}: {f['detail']}" for f in on[i]], "peer": _peer(b),
                     "note": HOSTILE_NOTE.get(name)})
    missing = [n for n in HOSTILE if n not in names]
    return {"rc": res["rc"], "seconds": res["seconds"], "output": res["output"], "audited": "flags" in res,
            "files": rows, "missing": missing, "fields": _common.fields_line(res["report"]) if "report" in res else ""}


def bomb_row(work: Path, side: int, config: str | None, sample_ms: float = 20) -> dict:
    """Audit a Parquet holding a side x side 8-bit PNG bomb and 3 clean pictures, and the same without the bomb,
    each under a wrapper process: peak RSS, flags."""
    import memory_scaling  # the wrapper and its kernel peak RSS

    folder = image_data.shared_data_dir() / "images"
    clean = [(folder / n).read_bytes() for n in ("hopper.jpg", "hopper.png", "sugarshack_bad_mpo_header.jpg")]
    d = work / "bomb"
    d.mkdir(parents=True, exist_ok=True)
    png = d / f"bomb-{side}x{side}.png"
    t0 = time.perf_counter()
    if not png.is_file():
        tmp = png.with_suffix(".tmp")
        image_data.write_png_bomb(tmp, side, side)
        tmp.replace(png)
    made_s = time.perf_counter() - t0
    bomb = png.read_bytes()
    out = {"side": side, "png_bytes": len(bomb), "declared_pixels": side * side, "made_s": made_s,
           "peer": _peer(bomb)}
    for name, images in (("with bomb", [clean[0], bomb, clean[1], clean[2]]), ("without", clean)):
        path = d / ("with-bomb.parquet" if name == "with bomb" else "without-bomb.parquet")
        _caption_table(images, path)
        audit_out = d / ("audit-" + path.stem)
        if audit_out.exists():
            shutil.rmtree(audit_out)
        env = os.environ.copy()
        os.environ.update(_common.child_env())               # the wrapper's child inherits this process's environment
        try:
            m = memory_scaling.run_measured(_common.audit_cmd([path], audit_out, config), d / f"{path.stem}.log", sample_ms,
                                            timeout=600)
        finally:
            os.environ.clear()
            os.environ.update(env)
        res = _common.read_outputs({"rc": m["rc"]}, audit_out)
        bomb_flags = [f for f in res.get("flags", []) if f["check"] == "image_bomb"]
        out[name] = {**m, "flags": sorted({(int(f["row"]), f["check"]) for f in res.get("flags", [])}),
                     "bomb_flags": [(int(f["row"]), f["detail"]) for f in bomb_flags]}
    w = out["with bomb"]
    out["flagged"] = any(r == 1 for r, _ in w["bomb_flags"])
    out["ok"] = out["flagged"] and w["rc"] in (0, 1) and w["maxrss_bytes"] < TARGET_BOMB_RSS
    return out


# ------------------------------------------------------------------------------------------------ printing

def _clip(s, n: int = 70) -> str:
    s = "" if s is None else str(s).replace("\n", "\\n")
    return s if len(s) <= n else s[: n - 1] + "…"


def print_layout(layout: str, res: dict, result: dict | None, examples: int) -> None:
    title = f"== {layout}"
    if result is None:
        print(f"{title}: audit did not run (exit {res['rc']}): {' / '.join(res['output'][-2:])}")
        return
    rep = res["report"]
    print(f"{title}: {rep['totals']['samples']} records, audit {res['seconds']:.1f} s (exit {res['rc']}); "
          f"fields: {_common.fields_line(rep)}")
    multi = layout == "multimodal"
    rows = []
    for kind, k in result["kinds"].items():
        row = [kind, ", ".join(k["checks"]), k["planted"], k["found"], f"{k['recall']:.2f}"
               + ("" if k["recall"] >= TARGET_RECALL else " MISS"), k["partial"] or ""]
        rows.append(row + ([k["other_image"] or ""] if multi else []))
    header = ["kind", "expected checks", "planted", "found", "recall", "partial"] + (["other image"] if multi else [])
    print(_common.fmt_table(header, rows))
    c = result["clean"]
    verdict = "meets" if c["share"] <= TARGET_CLEAN else "ABOVE"
    print(f"clean (unplanted records): {c['flagged']} / {c['records']} flagged = {c['share']:.2%} "
          f"({verdict} the {TARGET_CLEAN:.0%} target)")
    for check, v in c["by_check"].items():
        ex = "; ".join(f"{e['shard'].split('/')[-1]} key {e['key']} {e['field']}: {_clip(e['detail'])}"
                       for e in v["examples"][:examples])
        print(f"  false positives {check}: {v['records']} clean records ({v['records'] / c['records']:.2%}), e.g. {ex}")
    if result["planted_extra"]:
        print("planted records, checks beyond the expected ones: "
              + ", ".join(f"{ch} {n}" for ch, n in result["planted_extra"].items()))
    if result["key_mismatch"]:
        print(f"  note: {result['key_mismatch']} flags whose key column is not their row number")
    for kind, k in result["kinds"].items():
        if k["found"] < k["planted"]:
            reasons = "; ".join(f"{n} x {r}" for r, n in k["reasons"].most_common(4))
            print(f"  missed {kind}: {reasons}")
            for m in k["misses"][:examples]:
                d = {x: v for x, v in m["details"].items() if x not in ("kind", "checks")}
                fl = ", ".join(f"{c}@{f}: {_clip(dt, 50)}" for c, f, dt in m["flags"][:4]) or "none"
                print(f"    e.g. {m['shard']} key {m['key']} {_clip(json.dumps(d), 110)}: flags {fl}")


def print_summary(results: dict) -> None:
    layouts = list(results)
    kinds = [k for k in image_data.KINDS if any(r and k in r["kinds"] for r in results.values())]
    rows = []
    for kind in kinds:
        row = [kind]
        for layout in layouts:
            r = results[layout]
            row.append("n/r" if r is None else "" if kind not in r["kinds"] else f"{r['kinds'][kind]['recall']:.2f}")
        rows.append(row)
    rows.append(["clean flagged"] + ["n/r" if results[x] is None else f"{results[x]['clean']['share']:.1%}"
                                     for x in layouts])
    print()
    print(_common.fmt_table(["kind"] + layouts, rows,
                            title="recall per kind (every expected check on the planted record) and clean flagged "
                                  "share; blank = kind not planted in that layout; n/r = the audit did not run"))


def print_hostile(h: dict) -> None:
    print()
    if not h["audited"]:
        print(f"hostile files: audit did not run (exit {h['rc']}): {' / '.join(h['output'][-2:])}")
        return
    rows = []
    for r in h["files"]:
        want = "(not scored)" if r["expected"] is None else (", ".join(r["expected"]) or "none")
        verdict = "" if r["ok"] is None else ("ok" if r["ok"] else "WRONG")
        rows.append([r["file"], f"{r['bytes']:,}", want, ", ".join(r["got"]) or "none", verdict,
                     _clip("; ".join(r["details"]) or r["note"] or "", 60), _clip(r["peer"], 58)])
    print(_common.fmt_table(["file", "bytes", "expected", "flags", "", "detail", "peer: Image.open(b).load()"], rows,
                            title=f"real files of {image_data.shared_data_dir() / 'images'} in one Parquet "
                                  f"(`image` binary, `text`), audit {h['seconds']:.1f} s (exit {h['rc']}); "
                                  f"fields: {h['fields']}"))
    for r in h["files"]:
        if r["note"]:
            print(f"  {r['file']}: {r['note']}; it gets {', '.join(r['got']) or 'no flag'}")
    if h["missing"]:
        print(f"  not found (skipped): {', '.join(h['missing'])}")


def print_bomb(b: dict) -> None:
    print()
    rows = []
    for name in ("with bomb", "without"):
        m = b[name]
        rows.append([name, m["rc"], f"{m['wall_s']:.1f}", f"{m['maxrss_bytes'] / 2**20:,.0f}",
                     f"{m['sampled_tree_peak_bytes'] / 2**20:,.0f}",
                     _clip("; ".join(d for _, d in m["bomb_flags"]) or "no image_bomb flag", 80)])
    print(_common.fmt_table(["dataset", "exit", "wall s", "peak RSS MiB", "sampled MiB", "image_bomb flag"], rows,
                            title=f"bomb: a {b['side']:,}x{b['side']:,} 8-bit greyscale PNG "
                                  f"({b['png_bytes'] / 1e6:.1f} "
                                  f"MB file, {b['declared_pixels'] / 1e9:.1f} G pixels = "
                                  f"{b['declared_pixels'] / 2**30:.1f} GiB decoded) among 3 clean pictures in a "
                                  f"Parquet, the audit CLI under a wrapper (kernel peak RSS):"))
    w = b["with bomb"]
    verdict = "meets" if b["ok"] else "MISSES"
    print(f"bomb: {'flagged image_bomb' if b['flagged'] else 'NOT flagged image_bomb'}, peak RSS "
          f"{w['maxrss_bytes'] / 2**20:,.0f} MiB vs {b['without']['maxrss_bytes'] / 2**20:,.0f} MiB without it "
          f"({verdict} the target: flagged, < {TARGET_BOMB_RSS / 2**30:.0f} GiB); the peer: {b['peer']}")


# ---------------------------------------------------------------------------------------------------- main

def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--work", default=str(_common.REPO / "bench-data" / "image-recall"),
                    help="folder for the generated data and the audits (default bench-data/image-recall)")
    ap.add_argument("--data", default=None,
                    help="use this image_data.py output (its truth.json and layouts) as it is instead of generating")
    ap.add_argument("--records", type=int, default=400, help="records per layout (default 400)")
    ap.add_argument("--rate", type=float, default=0.04, help="share of records planted per kind (default 0.04)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--shards", type=int, default=4, help="shards per layout (default 4)")
    ap.add_argument("--layouts", default=",".join(image_data.LAYOUTS))
    ap.add_argument("--config", default=None, help="audit config passed to every audit")
    ap.add_argument("--bomb-side", type=int, default=40000, help="side of the square PNG bomb (default 40000)")
    ap.add_argument("--skip-bomb", action="store_true", help="leave out the bomb row")
    ap.add_argument("--skip-hostile", action="store_true", help="leave out the real hostile files")
    ap.add_argument("--examples", type=int, default=3, help="examples per false-positive check and per miss")
    ap.add_argument("--json", default=None, help="also write the figures to this JSON file")
    ap.add_argument("--strict", action="store_true", help="exit 3 when a target is missed")
    args = ap.parse_args(argv)
    return _common.run_with_data("image_recall", image_data.image_sources, run, args)


def run(args) -> int:
    work = Path(args.work)
    layouts = [x for x in args.layouts.split(",") if x]
    bad = [x for x in layouts if x not in image_data.LAYOUTS]
    if bad:
        raise SystemExit(f"--layouts: unknown {', '.join(bad)} (expected {', '.join(image_data.LAYOUTS)})")
    print(_common.machine_line())
    print(f"dataaudit (audit children): {_common.dataaudit_origin()}")
    t0 = time.perf_counter()
    if args.data:
        data = Path(args.data)
        if not (data / "truth.json").is_file():
            raise SystemExit(f"image_recall: {data / 'truth.json'} missing "
                             f"(--data takes an image_data.py --out folder)")
        truth = json.loads((data / "truth.json").read_text())
        absent = [x for x in layouts if x not in truth["layouts"]]
        if absent:
            raise SystemExit(f"image_recall: {data} has no {', '.join(absent)} (has {', '.join(truth['layouts'])})")
        print(f"data: {data} as it is (params {truth['params']})")
    else:
        data = work / "data"
        truth = image_data.generate(data, args.records, args.rate, args.seed, tuple(layouts), shards=args.shards,
                                    log=lambda s: print("generated " + s))
        print(f"data: {data} ({time.perf_counter() - t0:.1f} s); shared data: {image_data.shared_data_dir()}")
    results: dict = {}
    figures: dict = {"layouts": {}}
    all_met = True
    for layout in layouts:
        lt = truth["layouts"][layout]
        res = _common.run_audit_cli(layout_shards(data, lt), work / "audits" / layout, args.config)
        result = None
        if "flags" in res:
            result = score(layout, lt, res["flags"], data, args.examples)
            met, _ = targets_met(result)
            all_met &= met
        else:
            all_met = False
        print()
        print_layout(layout, res, result, args.examples)
        results[layout] = result
        figures["layouts"][layout] = {"rc": res["rc"], "seconds": res["seconds"], "output": res["output"],
                                      "result": _jsonable(result)}
    print_summary(results)
    keyed = [x for x in layouts if x != "webdataset" and results[x] is not None]
    if keyed:
        n_flags = sum(results[x]["flags"] for x in keyed)
        bad = {x: results[x]["key_mismatch"] for x in keyed if results[x]["key_mismatch"]}
        same = f"whose `key` column holds the same row number as a string in all {n_flags:,} of their flags"
        print(f"record keys: WebDataset flags by their `key` (the tar sample key); {', '.join(keyed)} by `row`, "
              + (same if not bad else f"but the `key` column differs from the row in {bad}"))
    if not args.skip_hostile:
        h = hostile_files(work, args.config)
        print_hostile(h)
        all_met &= h["audited"] and all(r["ok"] is not False for r in h["files"])
        figures["hostile"] = h
    if not args.skip_bomb:
        b = bomb_row(work, args.bomb_side, args.config)
        print_bomb(b)
        all_met &= b["ok"]
        figures["bomb"] = _jsonable(b)
    print(f"\ntargets: recall >= {TARGET_RECALL} for every kind, clean flagged <= {TARGET_CLEAN:.0%}"
          + ("" if args.skip_hostile else ", hostile files as expected")
          + ("" if args.skip_bomb else f", bomb flagged under {TARGET_BOMB_RSS / 2**30:.0f} GiB") + ": "
          + ("met" if all_met else "MISSED (see above)") + f"; {time.perf_counter() - t0:.0f} s in all")
    _common.write_json_result(args.json, {"params": truth["params"], "made_with": truth.get("made_with"), **figures})
    return 3 if args.strict and not all_met else 0


def _jsonable(x):
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    return x


if __name__ == "__main__":
    sys.exit(main())
