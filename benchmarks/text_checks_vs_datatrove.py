#!/usr/bin/env python
"""Throughput per core: dataaudit's six text checks vs datatrove's Gopher quality + repetition filters.

(a) dataaudit: every text check in REGISTRY (target "text": empty_text, control_chars, mojibake,
    long_unbroken_run, repetition, non_text_ratio) called as `spec.fn(column, **spec.params)` on every record
    batch of the corpus. The shards are read into memory first (iter_shard, timed separately), so only the
    checks are timed. Best of --repeats passes.
(b) datatrove: GopherQualityFilter().filter(doc) and GopherRepetitionFilter().filter(doc), default
    parameters, on datatrove Documents built (untimed) from the first --datatrove-rows texts of the same
    corpus, in the order a datatrove pipeline runs them (quality then repetition on each document; datatrove
    caches the word split of the last few texts, so repetition reuses quality's spaCy tokenisation as it does
    in a real pipeline).

Everything runs in this one process on one thread (OMP/BLAS env vars, torch.set_num_threads(1),
pa.set_cpu_count(1), pa.set_io_thread_count(1)), so rows/s is a per-core figure. datatrove is installed
by benchmarks/setup_bench.sh into .bench-deps/ (not a project dependency) and only this script puts it on
sys.path.

    .venv/bin/python benchmarks/text_checks_vs_datatrove.py --mb 200 --datatrove-rows 20000
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402

_common.single_core_env()

import gc  # noqa: E402
import os  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402
import pyarrow.compute as pc  # noqa: E402

TARGET_RATIO = 10.0


def load_batches(paths: list[str], batch_rows: int) -> tuple[list[pa.Array], float]:
    """Read the text column of every shard into memory as one array per record batch; returns the read time."""
    from dataaudit.formats import iter_shard
    cols: list[pa.Array] = []
    t0 = time.perf_counter()
    for p in paths:
        for batch in iter_shard(p, columns=["text"], batch_rows=batch_rows):
            cols.append(batch.column(batch.schema.get_field_index("text")))
    return cols, time.perf_counter() - t0


def run_ours(cols: list[pa.Array], specs, repeats: int):
    """Best-of-`repeats` time of all checks over all batches + per-check times of that pass + flags."""
    best = None
    for _ in range(repeats):
        gc.collect()
        per_check = {s.name: 0.0 for s in specs}
        flags = {s.name: [] for s in specs}
        t0 = time.perf_counter()
        for col in cols:
            for s in specs:
                c0 = time.perf_counter()
                out = s.fn(col, **s.params)
                per_check[s.name] += time.perf_counter() - c0
                flags[s.name].append(np.asarray(out.flagged, dtype=bool))
        total = time.perf_counter() - t0
        if best is None or total < best[0]:
            best = (total, per_check, {k: np.concatenate(v) if v else np.zeros(0, bool) for k, v in flags.items()})
    return best


def import_datatrove(bench_deps: Path):
    if not (bench_deps / "datatrove").is_dir():
        raise SystemExit(f"datatrove not found in {bench_deps}: run `bash benchmarks/setup_bench.sh` first")
    sys.path.insert(0, str(bench_deps))
    from loguru import logger
    logger.remove()                                    # datatrove logs through loguru; keep the output clean
    from datatrove.data import Document
    from datatrove.pipeline.filters import GopherQualityFilter, GopherRepetitionFilter
    return Document, GopherQualityFilter, GopherRepetitionFilter


def run_datatrove(texts: list[str | None], bench_deps: Path):
    Document, GopherQualityFilter, GopherRepetitionFilter = import_datatrove(bench_deps)
    quality, repetition = GopherQualityFilter(), GopherRepetitionFilter()
    docs = [Document(text=t if t is not None else "", id=str(i)) for i, t in enumerate(texts)]
    # warm-up (untimed): loads spaCy's blank English tokenizer on first use
    warm = Document(text="Warm up the tokenizer with one sentence that is not in the corpus. " * 8, id="warm")
    quality.filter(warm)
    repetition.filter(warm)
    kept_q = np.zeros(len(docs), dtype=bool)
    kept_r = np.zeros(len(docs), dtype=bool)
    reasons: dict[str, int] = {}
    t_q = t_r = 0.0
    gc.collect()
    t0 = time.perf_counter()
    for i, doc in enumerate(docs):
        c0 = time.perf_counter()
        rq = quality.filter(doc)
        c1 = time.perf_counter()
        rr = repetition.filter(doc)
        c2 = time.perf_counter()
        t_q += c1 - c0
        t_r += c2 - c1
        for res, kept in ((rq, kept_q), (rr, kept_r)):
            ok = res[0] if isinstance(res, tuple) else bool(res)
            kept[i] = ok
            if not ok and isinstance(res, tuple):
                reasons[res[1]] = reasons.get(res[1], 0) + 1
    total = time.perf_counter() - t0
    return total, t_q, t_r, ~kept_q, ~kept_r, reasons


def main(argv=None) -> int:
    ap = _common.base_parser(__doc__.split("\n\n")[0], default_mb=200.0)
    ap.add_argument("--datatrove-rows", type=int, default=20_000,
                    help="time datatrove on this prefix of the corpus (0 = all rows)")
    ap.add_argument("--batch-rows", type=int, default=4096, help="rows per record batch given to our checks")
    ap.add_argument("--repeats", type=int, default=3, help="passes of our checks (best is reported)")
    ap.add_argument("--skip-datatrove", action="store_true", help="time only our checks")
    ap.add_argument("--bench-deps", default=str(_common.BENCH_DEPS), help="folder datatrove is installed in")
    ap.add_argument("--json", default=None, help="also write the figures to this JSON file")
    ap.add_argument("--min-ratio", type=float, default=None,
                    help=f"exit 3 when ours/datatrove is below this (target is {TARGET_RATIO:g}x; off by default)")
    args = ap.parse_args(argv)
    return _common.run_guarded("text_checks_vs_datatrove", run, args)


def run(args) -> int:
    manifest = _common.ensure_corpus(args)
    from dataaudit.checks import REGISTRY
    _common.single_core_libs()
    specs = [s for s in REGISTRY.values() if s.target == "text"]
    if not specs:
        raise RuntimeError("no text checks registered")
    paths = _common.shard_paths(manifest, args.corpus)
    cols, t_read = load_batches(paths, args.batch_rows)
    n = sum(len(c) for c in cols)
    text_bytes = sum(int(pc.sum(pc.binary_length(c)).as_py() or 0) for c in cols)
    print(_common.machine_line())
    print(f"corpus: {args.corpus}: {len(paths)} shards, {n} rows, {text_bytes / 1e6:.1f} MB text, "
          f"{len(cols)} batches of <= {args.batch_rows} rows; read into memory in {t_read:.2f}s "
          f"({n / t_read:,.0f} rows/s, untimed below)")
    print(f"threads: OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')}, "
          f"pa.cpu_count={pa.cpu_count()}, pa.io_thread_count={pa.io_thread_count()}"
          + (f", torch threads={sys.modules['torch'].get_num_threads()}" if "torch" in sys.modules else ""))

    # ---------------------------------------------------------------- ours
    ours_s, per_check, flags = run_ours(cols, specs, max(args.repeats, 1))
    any_flag = np.zeros(n, dtype=bool)
    for f in flags.values():
        any_flag |= f
    ours_rate = n / ours_s
    rows = [[s.name, f"{per_check[s.name]:.3f}", f"{n / per_check[s.name]:,.0f}",
             f"{text_bytes / 1e6 / per_check[s.name]:.1f}", int(flags[s.name].sum())] for s in specs]
    rows.append(["all six (sum)", f"{ours_s:.3f}", f"{ours_rate:,.0f}", f"{text_bytes / 1e6 / ours_s:.1f}",
                 int(any_flag.sum())])
    print()
    print(_common.fmt_table(["dataaudit check", "seconds", "rows/s/core", "MB/s/core", "flagged"], rows,
                            title=f"dataaudit text checks, all {n} rows, best of {max(args.repeats, 1)}:"))

    result = {"rows": n, "text_bytes": text_bytes, "read_s": t_read, "ours_s": ours_s, "ours_rows_per_s": ours_rate,
              "ours_per_check_s": per_check, "ours_flagged": {k: int(v.sum()) for k, v in flags.items()},
              "ours_flagged_any": int(any_flag.sum())}

    planted = manifest.get("planted") or []
    shard_offset, off = {}, 0
    for s in manifest["shards"]:
        shard_offset[s["file"]] = off
        off += s["rows"]
    planted_rows = np.array([shard_offset[p["shard"]] + p["row"] for p in planted], dtype=np.int64)
    planted_kind = [p["kind"] for p in planted]

    status = 0
    if not args.skip_datatrove:
        m = n if args.datatrove_rows <= 0 else min(args.datatrove_rows, n)
        texts: list = []
        for c in cols:
            if len(texts) >= m:
                break
            texts.extend(c.slice(0, m - len(texts)).to_pylist())
        m_bytes = sum(len(t.encode("utf-8")) for t in texts if t)
        dt_s, t_q, t_r, drop_q, drop_r, reasons = run_datatrove(texts, Path(args.bench_deps))
        dt_rate = m / dt_s
        ratio = ours_rate / dt_rate
        drop_any = drop_q | drop_r
        ours_prefix = int(any_flag[:m].sum())
        print()
        print(_common.fmt_table(
            ["peer", "rows timed", "seconds", "rows/s/core", "MB/s/core", "flagged (of timed rows)"],
            [["dataaudit: 6 text checks", n, f"{ours_s:.3f}", f"{ours_rate:,.0f}", f"{text_bytes / 1e6 / ours_s:.2f}",
              f"{int(any_flag.sum())} (first {m}: {ours_prefix})"],
             ["datatrove: GopherQuality + GopherRepetition", m, f"{dt_s:.2f}", f"{dt_rate:,.0f}",
              f"{m_bytes / 1e6 / dt_s:.2f}", int(drop_any.sum())],
             ["  datatrove GopherQualityFilter (incl. spaCy word split)", m, f"{t_q:.2f}", f"{m / t_q:,.0f}",
              f"{m_bytes / 1e6 / t_q:.2f}", int(drop_q.sum())],
             ["  datatrove GopherRepetitionFilter (word split cached)", m, f"{t_r:.2f}", f"{m / t_r:,.0f}",
              f"{m_bytes / 1e6 / t_r:.2f}", int(drop_r.sum())]],
            title="per-core throughput (one process, one thread):"))
        if m < n:
            print(f"note: datatrove timed on the first {m} of {n} rows (--datatrove-rows); documents are drawn "
                  "i.i.d., so the prefix has the corpus's length mix.")
        verdict = "meets" if ratio >= TARGET_RATIO else "BELOW"
        print(f"ratio dataaudit / datatrove (rows/s per core): {ratio:.1f}x  ({verdict} the {TARGET_RATIO:g}x target)")
        top = sorted(reasons.items(), key=lambda kv: -kv[1])[:8]
        print("datatrove drop reasons (informational; the two tools check different things): "
              + ", ".join(f"{k}={v}" for k, v in top))
        if planted:
            in_prefix = planted_rows < m
            pk = np.array(planted_kind)
            rows_p = []
            for kind in sorted(set(planted_kind)):
                sel_all = pk == kind
                sel_pre = sel_all & in_prefix
                rows_p.append([kind, int(sel_all.sum()), int(any_flag[planted_rows[sel_all]].sum()),
                               int(sel_pre.sum()), int(any_flag[planted_rows[sel_pre]].sum()),
                               int(drop_any[planted_rows[sel_pre]].sum())])
            clean_pre = np.ones(m, dtype=bool)
            clean_pre[planted_rows[in_prefix]] = False
            rows_p.append(["clean (not planted)", n - len(planted_rows),
                           int(any_flag.sum()) - int(any_flag[planted_rows].sum()),
                           int(clean_pre.sum()), int(any_flag[:m][clean_pre].sum()), int(drop_any[clean_pre].sum())])
            print()
            print(_common.fmt_table(["planted kind", "rows", "dataaudit flags", f"rows in first {m}",
                                     "dataaudit flags", "datatrove drops"], rows_p,
                                    title="planted garbage caught (informational):"))
        result.update({"datatrove_rows": m, "datatrove_s": dt_s, "datatrove_rows_per_s": dt_rate,
                       "datatrove_quality_s": t_q, "datatrove_repetition_s": t_r,
                       "datatrove_dropped": int(drop_any.sum()), "datatrove_reasons": reasons,
                       "ratio": ratio})
        if args.min_ratio is not None and ratio < args.min_ratio:
            print(f"text_checks_vs_datatrove: ratio {ratio:.1f}x < --min-ratio {args.min_ratio:g}", file=sys.stderr)
            status = 3
    _common.write_json_result(args.json, result)
    return status


if __name__ == "__main__":
    sys.exit(main())
