#!/usr/bin/env python
"""Parquet read throughput: pyarrow.parquet.read_table vs draining dataaudit's iter_shard.

For every shard of the corpus: `pq.read_table(path, columns=["text"])` against
`for batch in iter_shard(path, columns=["text"], batch_rows=...): ...` (which also builds the provenance
columns). Best of --repeats passes over all shards for each peer (page cache warmed by an untimed pass; the
two peers alternate within each repeat). Reported for each --threads setting: 0 = pyarrow's default thread
pools, N = pa.set_cpu_count(N) and pa.set_io_thread_count(N). Target: iter_shard >= 0.8x read_table.

    .venv/bin/python benchmarks/parquet_read.py --mb 200
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402

import gc  # noqa: E402
import json  # noqa: E402
import time  # noqa: E402

import pyarrow as pa  # noqa: E402
import pyarrow.compute as pc  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

TARGET_RATIO = 0.8


def read_table_all(paths):
    rows = 0
    for p in paths:
        rows += pq.read_table(p, columns=["text"]).num_rows
    return rows


def iter_shard_all(paths, batch_rows):
    from dataaudit.formats import iter_shard
    rows = 0
    for p in paths:
        for b in iter_shard(p, columns=["text"], batch_rows=batch_rows):
            rows += b.num_rows
    return rows


def time_best(fns: dict, repeats: int) -> dict:
    best = {k: float("inf") for k in fns}
    rows = {}
    for r in range(repeats):
        order = list(fns) if r % 2 == 0 else list(reversed(fns))
        for k in order:
            gc.collect()
            t0 = time.perf_counter()
            rows[k] = fns[k]()
            best[k] = min(best[k], time.perf_counter() - t0)
    return {k: (best[k], rows[k]) for k in fns}


def main(argv=None) -> int:
    ap = _common.base_parser(__doc__.split("\n\n")[0], default_mb=200.0)
    ap.add_argument("--repeats", type=int, default=3, help="best of this many passes")
    ap.add_argument("--batch-rows", type=int, default=4096, help="iter_shard batch_rows (the audit uses 4096)")
    ap.add_argument("--threads", default="0,1",
                    help="comma-separated thread settings to run: 0 = pyarrow defaults, N = N threads")
    ap.add_argument("--json", default=None, help="also write the figures to this JSON file")
    ap.add_argument("--min-ratio", type=float, default=None,
                    help=f"exit 3 when iter_shard/read_table is below this (target {TARGET_RATIO:g}; off by default)")
    args = ap.parse_args(argv)
    return _common.run_guarded("parquet_read", run, args)


def run(args) -> int:
    try:
        settings = [int(t) for t in args.threads.split(",") if t.strip()]
    except ValueError:
        raise SystemExit(f"--threads: expected comma-separated integers, got {args.threads!r}")
    manifest = _common.ensure_corpus(args)
    paths = _common.shard_paths(manifest, args.corpus)
    file_bytes = sum(Path(p).stat().st_size for p in paths)
    text_bytes = 0
    for p in paths:                                    # uncompressed text size (and an untimed warm-up read)
        col = pq.read_table(p, columns=["text"]).column("text")
        text_bytes += int(pc.sum(pc.binary_length(col)).as_py() or 0)
    del col
    iter_shard_all(paths, args.batch_rows)             # warm-up: imports, page cache
    default_cpu, default_io = pa.cpu_count(), pa.io_thread_count()
    print(_common.machine_line())
    print(f"corpus: {args.corpus}: {len(paths)} shards, {manifest['rows']} rows, {text_bytes / 1e6:.1f} MB text, "
          f"{file_bytes / 1e6:.1f} MB of Parquet files; best of {args.repeats}, page cache warm")
    results = {}
    status = 0
    for threads in settings:
        if threads > 0:
            pa.set_cpu_count(threads)
            pa.set_io_thread_count(threads)
        else:
            pa.set_cpu_count(default_cpu)
            pa.set_io_thread_count(default_io)
        label = f"{pa.cpu_count()} cpu / {pa.io_thread_count()} io threads" + (" (pyarrow default)" if threads == 0 else "")
        res = time_best({"read_table": lambda: read_table_all(paths),
                         "iter_shard": lambda: iter_shard_all(paths, args.batch_rows)}, max(args.repeats, 1))
        (t_rt, n_rt), (t_it, n_it) = res["read_table"], res["iter_shard"]
        if n_rt != n_it:
            raise RuntimeError(f"row counts differ: read_table {n_rt}, iter_shard {n_it}")
        ratio = t_rt / t_it
        rows = [[name, f"{t:.3f}", f"{n / t:,.0f}", f"{text_bytes / 1e6 / t:.0f}", f"{file_bytes / 1e6 / t:.0f}"]
                for name, (t, n) in (("pyarrow.parquet.read_table(columns=['text'])", res["read_table"]),
                                     (f"dataaudit iter_shard(columns=['text'], batch_rows={args.batch_rows})",
                                      res["iter_shard"]))]
        print()
        print(_common.fmt_table(["peer", "seconds", "rows/s", "text MB/s", "file MB/s"], rows, title=label + ":"))
        verdict = "meets" if ratio >= TARGET_RATIO else "BELOW"
        print(f"ratio iter_shard / read_table (throughput): {ratio:.2f}x  ({verdict} the {TARGET_RATIO:g}x target)")
        results[str(threads)] = {"label": label, "read_table_s": t_rt, "iter_shard_s": t_it, "rows": n_rt,
                                 "ratio": ratio}
        if args.min_ratio is not None and ratio < args.min_ratio:
            print(f"parquet_read: ratio {ratio:.2f} < --min-ratio {args.min_ratio:g} ({label})", file=sys.stderr)
            status = 3
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps({"text_bytes": text_bytes, "file_bytes": file_bytes,
                                               "results": results}, indent=1))
    return status


if __name__ == "__main__":
    sys.exit(main())
