#!/usr/bin/env python
"""LSH banding + clustering of many signatures: wall time and peak memory of the dedup job's later stages.

Writes --signatures synthetic MinHash signatures (uint32 x --num-perm) as the signature parts of --shards
shards, exactly as stage 1 of `dataaudit dedup` leaves them (so the job resumes from them), with planted
duplicates: --near-frac of the documents are copies of another document's signature with up to
--max-changed values redrawn (Jaccard estimate >= 1 - max_changed/num_perm), --exact-frac exact copies
(same signature and same exact hash). Then, in a child process, `dataaudit.pipelines.dedup.run_dedup` runs stages 2-4
(band hashes -> hash-partitioned files -> per-partition sort -> edges -> connected components -> outputs) and
the parent reads the child's peak RSS (getrusage of children). The import-only RSS floor is measured too.

    .venv/bin/python benchmarks/dedup_lsh_scale.py --signatures 1000000
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402

_common.single_core_env()

import argparse  # noqa: E402
import json  # noqa: E402
import resource  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
import time  # noqa: E402

sys.path.insert(0, str(_common.REPO))


import numpy as np  # noqa: E402  (after the parent's children are set up it is needed only in them)


def _spec(args):
    from dataaudit.dedup import DedupSpec
    return DedupSpec(num_perm=args.num_perm, threshold=args.threshold)


def prepare(args, work: Path) -> dict:
    import pyarrow as pa
    from dataaudit.dedup.signature_columns import signature_array
    from dataaudit.pipelines.dedup import SignatureStore
    rng = np.random.default_rng(args.seed)
    n, k = args.signatures, args.num_perm
    spec = _spec(args)
    store = SignatureStore(work / "out", spec.signature_fingerprint(), train_shards=args.shards)
    sig = rng.integers(0, 2**32, size=(n, k), dtype=np.uint64).astype(np.uint32)
    hi = rng.integers(0, 2**63, size=n, dtype=np.uint64)
    lo = rng.integers(0, 2**63, size=n, dtype=np.uint64)
    n_near, n_exact = int(args.near_frac * n), int(args.exact_frac * n)
    copies = rng.choice(n, size=n_near + n_exact, replace=False)
    origins = rng.integers(0, n, size=len(copies))
    clash = np.isin(origins, copies)
    origins[clash] = rng.choice(np.setdiff1d(np.arange(n), copies), size=int(clash.sum()))
    sig[copies] = sig[origins]
    near = copies[:n_near]
    changed = rng.integers(0, args.max_changed + 1, size=n_near)
    for c in range(1, args.max_changed + 1):                 # redraw `c` values of the copies with c changes
        rows = near[changed == c]
        if len(rows):
            cols = np.argsort(rng.random((len(rows), k)), axis=1)[:, :c]
            sig[rows[:, None], cols] = rng.integers(0, 2**32, size=(len(rows), c), dtype=np.uint64).astype(np.uint32)
    exact = copies[n_near:]
    hi[exact], lo[exact] = hi[origins[n_near:]], lo[origins[n_near:]]
    bounds = np.linspace(0, n, args.shards + 1).astype(np.int64)
    paths = []
    for s in range(args.shards):
        a, b = int(bounds[s]), int(bounds[s + 1])
        path = str(work / f"synthetic-{s:03d}.parquet")
        paths.append(path)
        m = b - a
        table = pa.table({"row": pa.array(np.arange(m, dtype=np.int64)),
                          "line": pa.nulls(m, pa.int64()),   # as for Parquet shards: no physical line
                          "key": pa.array(np.arange(m).astype(str)),
                          "count": pa.array(np.full(m, 100, np.int32)),
                          "exact_hi": pa.array(hi[a:b]), "exact_lo": pa.array(lo[a:b]),
                          "sig": signature_array(sig[a:b])})
        store.save(s, path, {"path": path, "samples": m, "empty": 0, "unreadable_records": 0, "shingles": 100 * m,
                             "status": "ok", "error": None, "text_field": "text", "seconds": 0.0}, table)
    truth = {"copies": copies.tolist(), "origins": origins.tolist(), "near": int(n_near), "exact": int(n_exact),
             "paths": paths, "changed": changed.tolist()}
    (work / "truth.json").write_text(json.dumps(truth))
    return truth


def child(args, work: Path) -> int:
    from dataaudit.pipelines.dedup import run_dedup
    from dataaudit.pipelines.engine import EngineOptions
    if args.import_only:
        return 0
    truth = json.loads((work / "truth.json").read_text())
    t0 = time.perf_counter()
    rep = run_dedup(truth["paths"], _spec(args), work / "out", options=EngineOptions("local"),
                    partitions=args.partitions)
    total = time.perf_counter() - t0
    import pyarrow.parquet as pq
    cl = pq.read_table(work / "out" / "clusters.parquet", columns=["shard", "row", "cluster_id"])
    shard_idx = {p: i for i, p in enumerate(truth["paths"])}
    bounds = np.linspace(0, args.signatures, args.shards + 1).astype(np.int64)
    gid = np.array([bounds[shard_idx[s]] for s in cl.column("shard").to_pylist()]) + cl.column("row").to_numpy()
    cid = np.full(args.signatures, -1, np.int64)
    cid[gid] = cl.column("cluster_id").to_numpy()
    copies, origins = np.array(truth["copies"]), np.array(truth["origins"])
    found = (cid[copies] >= 0) & (cid[copies] == cid[origins])
    print(json.dumps({"seconds": rep["run"]["seconds"], "wall": total, "resumed": rep["run"]["resumed_shards"],
                      "partitions": rep["params"]["partitions"], "bands": [rep["params"]["bands"], rep["params"]["rows"]],
                      "clusters": rep["clusters"]["count"], "duplicates": rep["duplicates"],
                      "recall_near": float(found[:truth["near"]].mean()) if truth["near"] else 1.0,
                      "recall_exact": float(found[truth["near"]:].mean()) if truth["exact"] else 1.0}))
    return 0


def run_child(argv: list[str]) -> tuple[dict | None, float]:
    """Run this script as a child; (its JSON line, its own peak RSS in MiB as it reports it)."""
    proc = subprocess.run([sys.executable, __file__, *argv], capture_output=True, text=True)
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout + proc.stderr)
        raise RuntimeError(f"child failed with exit {proc.returncode}")
    lines = [x for x in proc.stdout.splitlines() if x.startswith("{")]
    peak = [x for x in proc.stdout.splitlines() if x.startswith("peak_rss_kib ")]
    return (json.loads(lines[-1]) if lines else None), (int(peak[-1].split()[1]) / 1024.0 if peak else float("nan"))


def run(args) -> int:
    work = Path(args.work or (_common.REPO / "bench-data" / f"dedup-lsh-{args.signatures}"))
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    print(_common.machine_line())
    common = ["--child", "--work", str(work), "--signatures", str(args.signatures), "--shards", str(args.shards),
              "--num-perm", str(args.num_perm), "--threshold", str(args.threshold), "--partitions", str(args.partitions)]
    t0 = time.perf_counter()
    # every step runs in a child of this small process: a child forked from a big parent would inherit
    # the parent's resident size in its ru_maxrss
    run_child(common + ["--prepare", "--seed", str(args.seed), "--near-frac", str(args.near_frac),
                        "--exact-frac", str(args.exact_frac), "--max-changed", str(args.max_changed)])
    truth = json.loads((work / "truth.json").read_text())
    print(f"prepared {args.signatures} signatures x {args.num_perm} in {args.shards} shard parts "
          f"({truth['near']} near copies, {truth['exact']} exact copies) in {time.perf_counter() - t0:.1f} s")
    _, floor = run_child(common + ["--import-only"])
    res, peak = run_child(common)
    s = res["seconds"]
    lsh_cluster = s["lsh"] + s["cluster"] + s["outputs"]
    rows = [["band hashes + partition + sort + edges (stages 2-3)", f"{s['lsh']:.1f}"],
            ["connected components (stage 4)", f"{s['cluster']:.1f}"],
            ["outputs: clusters/keep parquet, dedup.json, html", f"{s['outputs']:.1f}"],
            ["LSH + clustering + outputs", f"{lsh_cluster:.1f}"],
            ["whole run_dedup call (incl. resume check)", f"{res['wall']:.1f}"]]
    print()
    print(_common.fmt_table(["stage", "seconds"], rows,
                            title=f"{args.signatures} signatures, threshold {args.threshold} -> "
                                  f"{res['bands'][0]} bands x {res['bands'][1]} rows, {res['partitions']} partition(s)"))
    print(f"peak RSS of the child: {peak:.0f} MiB (import floor {floor:.0f} MiB); target < 2048 MiB, < 60 s")
    print(f"clusters {res['clusters']}, duplicates {res['duplicates']}; planted near copies found "
          f"{res['recall_near']:.4f}, exact copies {res['recall_exact']:.4f}")
    if args.json:
        Path(args.json).write_text(json.dumps({**res, "peak_rss_mib": peak, "import_floor_mib": floor,
                                               "signatures": args.signatures}, indent=2))
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    ok = lsh_cluster < 60 and peak < 2048
    return 0 if ok or not args.enforce else 3


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--signatures", type=int, default=1_000_000)
    ap.add_argument("--shards", type=int, default=10)
    ap.add_argument("--num-perm", type=int, default=128)
    ap.add_argument("--threshold", type=float, default=0.8)
    ap.add_argument("--near-frac", type=float, default=0.05)
    ap.add_argument("--exact-frac", type=float, default=0.02)
    ap.add_argument("--max-changed", type=int, default=12, help="values redrawn in a near copy (0..this)")
    ap.add_argument("--partitions", default="auto")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--work", default=None, help="scratch folder (default bench-data/dedup-lsh-<n>)")
    ap.add_argument("--keep", action="store_true", help="keep the scratch folder")
    ap.add_argument("--enforce", action="store_true", help="exit 3 when over 60 s or 2 GB")
    ap.add_argument("--json", default=None)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--import-only", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--prepare", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.partitions != "auto":
        args.partitions = int(args.partitions)
    if args.child:
        rc = prepare(args, Path(args.work)) and 0 if args.prepare else child(args, Path(args.work))
        # this process was exec'd by a small parent, so its ru_maxrss is its own peak
        print(f"peak_rss_kib {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}")
        return rc
    return _common.run_guarded("dedup_lsh_scale", run, args)


if __name__ == "__main__":
    raise SystemExit(main())
