#!/usr/bin/env python
"""Structured (chat) audit throughput vs the flat-text audit of the same text, MB/s of text, one process.

The chat datasets of fixtures/chat_data.py (real conversations converted, plus generated ones; nothing
planted) are repeated until they hold --mb MB of turn text, and written twice as Parquet (row groups of 4096):

  structured   the chat form as it is: `messages` (id + [{role, content}] with content strings), `parts`
               (content as [{type, text}] parts) or `sharegpt` ([{from, value}] with function_call and
               observation turns, plus the `tools` JSON column)
  flat         one `text` column: each record's turn texts joined with "\\n" (the same characters)

Each is audited with `dataaudit.pipelines.audit.run_audit(..., EngineOptions("local"))` in this process, default
config, the two alternating; the figure is the median of --repeats runs. MB of text = UTF-8 bytes of the turn texts
(the same for both sides; the `tools` column and the roles are not counted). Target: structured >= 0.5x the
flat-text throughput.

    .venv/bin/python benchmarks/chat_throughput.py --mb 20
"""
from __future__ import annotations

import argparse
import gc
import resource
import shutil
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402
sys.path.insert(0, str(_common.REPO))   # the data generators live in fixtures/ (not installed)
from fixtures import chat_data  # noqa: E402

TARGET_RATIO = 0.5
CASES = ("messages", "parts", "sharegpt")


def _turn_texts(rec: dict, case: str) -> list[str]:
    if case == "sharegpt":
        return [t["value"] for t in rec["conversations"] if isinstance(t["value"], str)]
    out = []
    for m in rec["messages"]:
        c = m.get("content")
        if isinstance(c, list):
            out += [p["text"] for p in c if p.get("type") == "text" and isinstance(p.get("text"), str)]
        elif isinstance(c, str):
            out.append(c)
    return out


def build(work: Path, case: str, mb: float, seed: int, log=print) -> dict:
    """Write OUT/<case>/structured.parquet and flat.parquet holding >= mb MB of turn text; returns sizes."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    real = chat_data.load_real()
    pool = chat_data.build_pool(real)
    form = "sharegpt" if case == "sharegpt" else "messages"
    built = chat_data.build_form(form, real, pool, 2000, 0.0, seed, kinds=())
    shard = "messages-001" if case == "parts" else chat_data.SHARDS[form][0]
    records = built["shards"][shard]
    if case == "messages":              # the plain conversation: role + content strings
        records = [{"id": r["id"], "messages": [{"role": m["role"], "content": m["content"]} for m in r["messages"]
                                                 if m.get("content") is not None]} for r in records]
        schema = pa.schema([("id", pa.string()), ("messages", pa.list_(pa.struct([("role", pa.string()),
                                                                                  ("content", pa.string())])))])
    else:
        schema = chat_data._arrow_schema(form, parts=case == "parts")
    texts = ["\n".join(_turn_texts(r, case)) for r in records]
    one = sum(len(t.encode("utf-8")) - t.count("\n") for t in texts)     # turn text bytes (separators aside)
    copies = max(1, int(-(-mb * 1e6 // one)))
    folder = work / case
    folder.mkdir(parents=True, exist_ok=True)
    structured, flat = folder / "structured.parquet", folder / "flat.parquet"
    table = pa.Table.from_pylist(records, schema=schema)
    flat_table = pa.table({"text": pa.array(texts, pa.string())})
    for path, base in ((structured, table), (flat, flat_table)):
        with pq.ParquetWriter(path, base.schema) as w:
            for c in range(copies):
                t = base
                if c and "id" in base.schema.names:   # each copy its own ids (a repeated id is a duplicate_id flag)
                    ids = pa.array([f"{x}-{c}" for x in base.column("id").to_pylist()], pa.string())
                    t = base.set_column(base.schema.get_field_index("id"), "id", ids)
                w.write_table(t, row_group_size=4096)
    info = {"case": case, "records": len(records) * copies, "text_bytes": one * copies, "copies": copies,
            "structured_file_bytes": structured.stat().st_size, "flat_file_bytes": flat.stat().st_size}
    log(f"{case}: {info['records']:,} records ({len(records)} x {copies}), {info['text_bytes'] / 1e6:.1f} MB of turn "
        f"text; Parquet {info['structured_file_bytes'] / 1e6:.1f} MB structured, "
        f"{info['flat_file_bytes'] / 1e6:.1f} MB flat")
    return info


def _cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def time_audit(path: Path, out: Path, config) -> tuple[float, float, dict]:
    """(wall seconds, CPU seconds of this process's threads, report) of one audit."""
    from dataaudit.pipelines.audit import run_audit
    from dataaudit.pipelines.engine import EngineOptions

    if out.exists():
        shutil.rmtree(out)
    gc.collect()
    c0, t0 = _cpu(), time.perf_counter()
    report = run_audit([str(path)], config, out, options=EngineOptions("local"))
    return time.perf_counter() - t0, _cpu() - c0, report


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--work", default=str(_common.REPO / "bench-data" / "chat-throughput"),
                    help="folder for the Parquet files and the audits (default bench-data/chat-throughput)")
    ap.add_argument("--mb", type=float, default=20.0, help="MB of turn text per side (default 20)")
    ap.add_argument("--repeats", type=int, default=3, help="median of this many runs per side (default 3)")
    ap.add_argument("--cases", default=",".join(CASES), help=f"comma-separated, of {', '.join(CASES)} (default: all)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", default=None, help="also write the figures to this JSON file")
    ap.add_argument("--min-ratio", type=float, default=None,
                    help=f"exit 3 when structured/flat is below this (target {TARGET_RATIO:g}; off by default)")
    args = ap.parse_args(argv)
    return _common.run_with_data("chat_throughput", chat_data.chat_sources, run, args)


def run(args) -> int:
    from dataaudit.config import load_config

    cases = [c for c in args.cases.split(",") if c]
    bad = [c for c in cases if c not in CASES]
    if bad:
        raise SystemExit(f"--cases: unknown {', '.join(bad)} (expected {', '.join(CASES)})")
    work = Path(args.work)
    config = load_config(None)
    print(_common.machine_line())
    rows, results, status = [], {}, 0
    for case in cases:
        info = build(work, case, args.mb, args.seed)
        folder = work / case
        # warm-up (imports, page cache), untimed
        time_audit(folder / "flat.parquet", folder / "audit-warm", config)
        times = {"structured": [], "flat": []}
        cpu = {"structured": [], "flat": []}
        reports = {}
        for r in range(max(1, args.repeats)):
            order = ("structured", "flat") if r % 2 == 0 else ("flat", "structured")
            for side in order:
                s, c, reports[side] = time_audit(folder / f"{side}.parquet", folder / f"audit-{side}", config)
                times[side].append(s)
                cpu[side].append(c)
        med = {side: statistics.median(v) for side, v in times.items()}
        med_cpu = {side: statistics.median(v) for side, v in cpu.items()}
        mbs = {side: info["text_bytes"] / 1e6 / med[side] for side in med}
        mbs_cpu = {side: info["text_bytes"] / 1e6 / med_cpu[side] for side in med}
        ratio = mbs["structured"] / mbs["flat"]
        ratio_cpu = mbs_cpu["structured"] / mbs_cpu["flat"]
        for side in ("structured", "flat"):
            rep = reports[side]
            fields = "; ".join(f"{k} [{v}]" for k, v in rep["shards"][0].get("formats", {}).items())
            rows.append([case if side == "structured" else "", side, fields,
                         " ".join(f"{t:.2f}" for t in times[side]), f"{mbs[side]:.2f}", f"{mbs_cpu[side]:.2f}",
                         f"{info['records'] / med[side]:,.0f}", rep["totals"]["flagged"],
                         f"{ratio:.2f}x / {ratio_cpu:.2f}x" if side == "structured" else ""])
        results[case] = {**info, "seconds": times, "cpu_seconds": cpu, "median_s": med, "median_cpu_s": med_cpu,
                         "mb_per_s": mbs, "mb_per_cpu_s": mbs_cpu, "ratio": ratio, "ratio_cpu": ratio_cpu}
        if args.min_ratio is not None and ratio < args.min_ratio:
            print(f"chat_throughput: {case}: ratio {ratio:.2f} < --min-ratio {args.min_ratio:g}", file=sys.stderr)
            status = 3
    print()
    print(_common.fmt_table(["case", "side", "fields", "runs (wall s)", "text MB/s", "MB/CPU-s", "records/s",
                             "flagged", "structured / flat (wall / CPU)"], rows,
                            title=f"run_audit(local engine), default config, median of {args.repeats} alternating "
                                  f"runs (target >= {TARGET_RATIO:g}x):"))
    for case, r in results.items():
        verdict = "meets" if r["ratio"] >= TARGET_RATIO else "BELOW"
        print(f"{case}: structured {r['mb_per_s']['structured']:.2f} MB/s vs flat {r['mb_per_s']['flat']:.2f} MB/s "
              f"= {r['ratio']:.2f}x ({verdict} the {TARGET_RATIO:g}x target); per CPU-second "
              f"{r['mb_per_cpu_s']['structured']:.2f} vs {r['mb_per_cpu_s']['flat']:.2f} MB = {r['ratio_cpu']:.2f}x")
    _common.write_json_result(args.json, {"mb": args.mb, "repeats": args.repeats, "results": results})
    return status


if __name__ == "__main__":
    sys.exit(main())
