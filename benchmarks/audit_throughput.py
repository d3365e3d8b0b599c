#!/usr/bin/env python
"""MB/s per core of the text checks and of the whole audit on real mixed text (make_real_corpus.py: code,
English prose, Chinese), against `pq.read_table` of the same shards in the same run.

(a) pq.read_table of every shard (one thread): the floor an audit cannot beat.
(b) every text check (REGISTRY target "text") as `spec.fn(column, **spec.params)` on every row group of the
    corpus, read into memory first; best of --repeats; CPU time of this one thread.
(c) `dataaudit audit --engine local` on the shards in a subprocess with one thread everywhere, end to end
    (start-up, read, every default check, stats, reports): wall time, median of --repeats runs, after an untimed
    run on the first shard (numba's on-disk cache warm) and with the package's bytecode compiled (as an installed
    package has it: without, Python compiles every module from source on each start when
    PYTHONDONTWRITEBYTECODE is set). With the text kernels compiled ahead of time (`dataaudit build-kernels`, run
    here when they are not built), and again with numba's JIT kernels (DATAAUDIT_NO_AOT) for the difference.
(d) `--engine local` as a user runs it (no --workers, no thread pinned: every core) vs (c), median of --repeats;
    and `--engine local --workers N` (default 2: worker processes, one thread each) vs (c). The runs of (c) and (d)
    alternate, round after round, so that a drift of the machine's speed falls on all of them alike.
(e) with --ray: `--engine ray` (a local Ray on every core) vs (c) (the ratio; target >= 1.6x on 2 cores).

(f) with --per-record K: the same text with every K records joined into one (same bytes, K times fewer records),
    audited alternately with (c): the difference over the difference in records is the fixed cost per record.

(g) with --one-shard: the corpus rewritten as one Parquet file (row groups of 5,000 rows, made once beside it):
    every run above audits that one shard, which the lanes of (d) share in pieces (`dataaudit.audit.pieces`).

    .venv/bin/python benchmarks/audit_throughput.py --mb 100
    .venv/bin/python benchmarks/audit_throughput.py --mb 100 --short --per-record 10     # chat turns, questions
    .venv/bin/python benchmarks/audit_throughput.py --mb 100 --one-shard --repeats 5      # one large file
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402

_common.single_core_env()

import argparse  # noqa: E402
import compileall  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import os  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

REPO = _common.REPO


def _corpus(args) -> tuple[list[Path], int]:
    out = Path(args.corpus or f"bench-data/real-{'short-' if args.short else ''}{args.mb:g}mb")
    if not (out / "manifest.json").exists():
        import make_real_corpus
        make_real_corpus.main(["--mb", str(args.mb), "--out", str(out)] + (["--short"] if args.short else []))
    manifest = json.loads((out / "manifest.json").read_text())
    return [out / s["file"] for s in manifest["shards"]], int(manifest["text_bytes"])


def _joined(files: list[Path], k: int) -> list[Path]:
    """The same texts, k consecutive records joined by a blank line into one: the same bytes in k times fewer
    records (beside the corpus, made once)."""
    out = files[0].parent.with_name(files[0].parent.name + f"-joined{k}")
    out.mkdir(exist_ok=True)
    made = []
    for f in files:
        target = out / f.name
        if not target.exists():
            texts = pq.read_table(f, columns=["text"]).column("text").to_pylist()
            joined = ["\n\n".join(texts[i:i + k]) for i in range(0, len(texts), k)]
            pq.write_table(pa.table({"text": pa.array(joined, pa.string())}), target,
                           row_group_size=max(1, 5000 // k))
        made.append(target)
    return made


def _one_shard(files: list[Path]) -> list[Path]:
    """The corpus as one Parquet file of 5,000-row groups (beside the corpus, made once)."""
    target = files[0].parent.with_name(files[0].parent.name + "-one-shard") / "all.parquet"
    if not target.exists():
        target.parent.mkdir(exist_ok=True)
        pq.write_table(pa.concat_tables([pq.read_table(f) for f in files]), target, row_group_size=5000)
    return [target]


def _audit(files: list[Path], engine: str, env: dict, *more: str, default: bool = False) -> float:
    if engine == "local" and "--workers" not in more and not default:   # one process (the default uses every core)
        more = (*more, "--workers", "1")
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, "-m", "dataaudit.cli", "audit", *map(str, files), "--out", tmp, "--engine", engine,
               *more]
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
        wall = time.perf_counter() - t0
    if proc.returncode not in (0, 1):
        raise SystemExit(f"audit failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return wall


def _compiled_kernels() -> bool:
    """Build the text kernels ahead of time unless built (`dataaudit build-kernels`); whether the audits get them."""
    if os.environ.get("DATAAUDIT_NO_AOT"):
        print("kernels: numba's JIT (DATAAUDIT_NO_AOT is set)")
        return False
    from dataaudit.textops.compiled import build

    t0 = time.perf_counter()
    try:
        folder, built = build()
    except RuntimeError as exc:
        print(f"kernels: numba's JIT (not compiled ahead of time: {exc})")
        return False
    when = f"built now in {time.perf_counter() - t0:.0f} s" if built else "built before"
    print(f"kernels: compiled ahead of time ({when}: {folder})")
    return True


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mb", type=float, default=100.0)
    ap.add_argument("--corpus", default=None, help="a make_real_corpus.py folder (default bench-data/real-<mb>mb)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--ray", action="store_true", help="also time --engine ray on 2 CPUs")
    ap.add_argument("--workers", type=int, default=2, help="also time --engine local --workers N (N > 1)")
    ap.add_argument("--short", action="store_true", help="the short-record corpus (make_real_corpus.py --short)")
    ap.add_argument("--per-record", type=int, default=0, metavar="K",
                    help="also audit the same text with K records joined into one: the fixed cost per record")
    ap.add_argument("--one-shard", action="store_true", help="audit the corpus rewritten as one Parquet file")
    args = ap.parse_args(argv)
    files, text_bytes = _corpus(args)
    if args.one_shard:
        files = _one_shard(files)
    mb = text_bytes / 1e6
    _common.single_core_libs()

    t0 = time.perf_counter()
    tables = [pq.read_table(f) for f in files]
    read_s = time.perf_counter() - t0
    print(f"corpus: {len(files)} shards, {sum(t.num_rows for t in tables)} rows, {mb:.1f} MB text")
    print(f"pq.read_table: {read_s:.2f} s = {mb / read_s:.0f} MB/s")

    from dataaudit.checks import REGISTRY
    batches = [b.column(0) for t in tables for b in t.to_batches()]
    total = 0.0
    for name, spec in REGISTRY.items():
        if spec.target != "text":
            continue
        if spec.state is not None:   # a stateful check runs with its shard's state: timed in the audits below
            print(f"  {name:18s} (stateful: in the audit's time only)")
            continue
        spec.fn(batches[0].slice(0, 10), **spec.params)             # compile / warm caches
        best = float("inf")
        for _ in range(args.repeats):
            t0 = time.process_time()
            for col in batches:
                spec.fn(col, **spec.params)
            best = min(best, time.process_time() - t0)
        total += best
        print(f"  {name:18s} {mb / best:8.1f} MB/s/core")
    print(f"  {'all text checks':18s} {mb / total:8.1f} MB/s/core")
    del tables, batches                          # the audits below run beside this process: not beside 2x the corpus

    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    for package in ("dataaudit", "pipelines"):
        compileall.compile_dir(str(REPO / package), quiet=1)
    compiled = _compiled_kernels()
    _audit(files[:1], "local", env)                                  # numba's cache: loaded, or compiled once
    # (c) and (d) alternate, round after round: a shared machine's speed drifts between rounds, not within one
    free_env = {k: v for k, v in env.items() if k not in _common._THREAD_VARS}
    runs, defaults, pooled = [], [], []
    for _ in range(args.repeats):
        runs.append(_audit(files, "local", env))
        defaults.append(_audit(files, "local", free_env, default=True))
        if args.workers > 1:
            pooled.append(_audit(files, "local", env, "--workers", str(args.workers)))
    local = statistics.median(runs)
    print(f"audit --engine local (1 thread{', compiled kernels' if compiled else ''}): {local:.2f} s = "
          f"{mb / local:.1f} MB/s/core (median of {len(runs)}: {min(runs):.2f}-{max(runs):.2f} s); pq.read_table is "
          f"{local / read_s:.0f}x faster")
    if compiled:
        jit_env = {**env, "DATAAUDIT_NO_AOT": "1"}
        _audit(files[:1], "local", jit_env)
        jit = statistics.median(_audit(files, "local", jit_env) for _ in range(args.repeats))
        print(f"audit --engine local (1 thread, numba's JIT kernels from its disk cache): {jit:.2f} s = "
              f"{mb / jit:.1f} MB/s/core; the compiled kernels save {jit - local:.2f} s")
    if args.per_record:
        joined = _joined(files, args.per_record)
        rows = sum(pq.ParquetFile(f).metadata.num_rows for f in files)
        rows_j = sum(pq.ParquetFile(f).metadata.num_rows for f in joined)
        _audit(joined[:1], "local", env)
        a, b = [], []
        for _ in range(args.repeats):   # alternating, in one run
            a.append(_audit(files, "local", env))
            b.append(_audit(joined, "local", env))
        ta, tb = statistics.median(a), statistics.median(b)
        print(f"per-record cost: {rows} records {ta:.2f} s vs the same text in {rows_j} records {tb:.2f} s: "
              f"{(ta - tb) / (rows - rows_j) * 1e6:.2f} us of fixed cost per record (medians of {args.repeats})")
    # the default as a user runs it: no option, no thread pinned
    default = statistics.median(defaults)
    print(f"audit --engine local (the default: no --workers, no thread pinned): {default:.2f} s = "
          f"{mb / default:.1f} MB/s wall, {mb / default / os.cpu_count():.1f} MB/s per core; {local / default:.2f}x "
          f"one pinned thread (median of {len(defaults)}, alternating with it: {min(defaults):.2f}-"
          f"{max(defaults):.2f} s)")
    if pooled:
        workers = statistics.median(pooled)
        print(f"audit --engine local --workers {args.workers} (1 thread each): {workers:.2f} s = "
              f"{mb / workers:.1f} MB/s; {local / workers:.2f}x one process (median of {len(pooled)}: "
              f"{min(pooled):.2f}-{max(pooled):.2f} s)")
    if args.ray:
        ray_env = {k: v for k, v in env.items() if k not in _common._THREAD_VARS}
        ray = _audit(files, "ray", ray_env)                 # a local Ray takes every core
        print(f"audit --engine ray ({os.cpu_count()} CPUs): {ray:.1f} s = {mb / ray:.1f} MB/s; {local / ray:.2f}x "
              f"local")
    return 0


if __name__ == "__main__":
    sys.exit(main())
