#!/usr/bin/env python
"""Array jobs and samples (issue 32): what a merge costs and what a sample saves.

1. merge: --parts small JSONL shards (default 1,000) audited as --slices array tasks (`audit --shard-index I
   --num-shards N`, one process each, one after the other), then `dataaudit merge OUT` timed as a command (start-up
   included) and as the library call; the merged report is checked against one job's. Target: < 5 s.
2. sample: `audit --sample 10000` against the full audit of a ~1 GB Parquet corpus (make_corpus.py, generated in
   --tmp and deleted after unless --keep). Target: the sample < 10% of the full audit's time.

    .venv/bin/python benchmarks/array_jobs.py                  # both
    .venv/bin/python benchmarks/array_jobs.py --skip-sample    # the merge only
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import child_env, dataaudit_cli, dataaudit_origin, machine_line  # noqa: E402


def _run(args: list[str]) -> tuple[int, float, str]:
    t0 = time.perf_counter()
    proc = subprocess.run(dataaudit_cli() + args, capture_output=True, text=True, env=child_env())
    return proc.returncode, time.perf_counter() - t0, (proc.stdout + proc.stderr).strip()


def _cpu() -> float:
    """CPU seconds (user + system) of the finished children so far: less at the mercy of a shared machine's load
    than wall time."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _report(out: Path) -> dict:
    report = json.loads((out / "report.json").read_text())
    report.pop("run")
    return report


def bench_merge(tmp: Path, parts: int, slices: int) -> dict:
    data = tmp / "parts-data"
    data.mkdir()
    for i in range(parts):
        rows = [{"text": "" if (i + j) % 37 == 0 else f"shard {i} record {j}: a short line about rivers"}
                for j in range(20)]
        (data / f"s{i:05d}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    out, single = tmp / "sliced", tmp / "single"
    t_slices = 0.0
    for i in range(slices):
        rc, s, text = _run(["audit", str(data), "--out", str(out), "--engine", "local", "--shard-index", str(i),
                            "--num-shards", str(slices)])
        assert rc == 0, text
        t_slices += s
    merges = []
    for _ in range(3):      # the median of three: the command's time on a shared machine varies
        rc_merge, t, text = _run(["merge", str(out)])
        assert rc_merge in (0, 1), text
        merges.append(t)
    t_merge = sorted(merges)[1]
    # the library call alone (no interpreter start-up, no imports): the merge's own work
    code = ("import time,sys; from dataaudit.pipelines.audit import merge_audit; t=time.perf_counter(); "
            f"merge_audit({str(out)!r}); print(time.perf_counter()-t)")
    lib = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=child_env())
    t_lib = float(lib.stdout.strip().splitlines()[-1])
    rc, t_single, text = _run(["audit", str(data), "--out", str(single), "--engine", "local"])
    same = _report(out) == _report(single) and \
        (out / "flags.parquet").read_bytes() == (single / "flags.parquet").read_bytes()
    return {"parts": parts, "slices": slices, "slices_seconds": round(t_slices, 2),
            "merge_command_seconds": round(t_merge, 2), "merge_command_runs": [round(t, 2) for t in merges], "merge_library_seconds": round(t_lib, 2),
            "single_job_seconds": round(t_single, 2), "identical_to_one_job": same}


def bench_sample(tmp: Path, mb: float, n: int, corpus: Path | None = None, repeats: int = 3,
                 seeds: int = 200) -> dict:
    if corpus is None:      # generated in the run's folder, deleted with it
        corpus = tmp / "corpus"
        subprocess.run([sys.executable, str(Path(__file__).parent / "make_corpus.py"), "--mb", str(mb), "--out",
                        str(corpus)], check=True, capture_output=True, env=child_env())
    size = sum(p.stat().st_size for p in corpus.rglob("*.parquet"))
    times: dict[str, list[float]] = {"full": [], "sample": []}
    cpus: dict[str, list[float]] = {"full": [], "sample": []}
    loads = [os.getloadavg()[0]]
    for i in range(repeats):        # alternating, so both see the same (shared) machine
        for kind, extra in (("full", []), ("sample", ["--sample", str(n)])):
            out = tmp / kind       # a fresh folder each time: an audit resumes from the parts of a previous one
            shutil.rmtree(out, ignore_errors=True)
            cpu = _cpu()
            rc, t, text = _run(["audit", str(corpus), "--out", str(out), "--engine", "local", *extra])
            assert rc in (0, 1), text
            times[kind].append(t)
            cpus[kind].append(_cpu() - cpu)
            loads.append(os.getloadavg()[0])
    t_full, t_sample = statistics.median(times["full"]), statistics.median(times["sample"])
    full = json.loads((tmp / "full" / "report.json").read_text())
    sample = json.loads((tmp / "sample" / "report.json").read_text())
    rates = {k: (round(full["checks"][k]["flagged"] / full["totals"]["samples"], 6), r["rate"], r["ci95"],
                 r.get("deff")) for k, r in sample["sample"]["rates"].items()
             if r["flagged"] or full["checks"][k]["flagged"]}
    inside = sum(lo <= whole <= hi for whole, _, (lo, hi), _ in rates.values())
    return {"corpus_mb_text": mb, "parquet_bytes": size, "records": full["totals"]["samples"], "sample": n,
            "full_seconds": round(t_full, 2), "sample_seconds": round(t_sample, 2),
            "runs": {k: [round(t, 2) for t in v] for k, v in times.items()},
            "load_1min": [round(x, 2) for x in loads],
            "sample_share": round(t_sample / t_full, 4),
            "cpu": {k: [round(t, 2) for t in v] for k, v in cpus.items()},
            "cpu_share": round(statistics.median(cpus["sample"]) / statistics.median(cpus["full"]), 4),
            "design": sample["sample"]["design"],
            "clusters": sample["sample"].get("clusters"), "rates_full_sample_ci95": rates,
            "full_rates_inside_ci95": f"{inside}/{len(rates)}",
            "coverage": coverage(corpus, tmp / "full", n, seeds)}


def coverage(corpus: Path, full_out: Path, n: int, seeds: int) -> dict:
    """Over `seeds` seeds, in how many the full audit's rate of each check lies in the sample's 95% interval, for the
    cluster sample (`--sample N`) and for a sample of records (Wilson, as `--sample-fraction` gives): simulated from
    the full audit's flags, which are exactly the sample's on the records it takes (a check comparing records with
    each other, e.g. duplicates, is the exception: left out)."""
    import numpy as np
    import pyarrow.parquet as pq

    from dataaudit.audit.sample import Z95, chosen, plan_sample, wilson
    from dataaudit.audit.sample_clusters import ratio_interval, records_per_cluster
    from dataaudit.cli.paths import expand_shards

    paths = expand_shards([str(corpus)])
    report = json.loads((full_out / "report.json").read_text())
    total = report["totals"]["samples"]
    flags = pq.read_table(full_out / "flags.parquet", columns=["shard", "row", "check"]).to_pydict()
    by: dict[str, dict[str, np.ndarray]] = {}
    for shard, row, check in zip(flags["shard"], flags["row"], flags["check"]):
        by.setdefault(check, {}).setdefault(shard, []).append(row)
    by = {c: {s: np.unique(np.array(r, np.int64)) for s, r in d.items()} for c, d in by.items()
          if c not in ("exact_duplicate", "near_duplicate", "duplicate_id")}
    truth = {c: sum(r.size for r in d.values()) / total for c, d in by.items()}
    hits = {c: {"clusters": 0, "records": 0} for c in by}
    widths = {c: {"clusters": [], "records": []} for c in by}
    empty = np.zeros(0, np.int64)
    for seed in range(seeds):
        plan = plan_sample(paths, seed, n)
        spans = plan["clusters"]
        n_j = np.concatenate([records_per_cluster(sp, np.arange(sp[0][0], sp[-1][1])[chosen(
            plan, p, np.arange(sp[0][0], sp[-1][1]))]) for p, sp in spans.items()])
        for c, shards in by.items():
            k_j = np.concatenate([records_per_cluster(sp, rows[chosen(plan, p, rows)])
                                  for p, sp in spans.items() for rows in [shards.get(p, empty)]])
            _, (lo, hi), _ = ratio_interval(k_j, n_j, Z95)
            hits[c]["clusters"] += lo <= truth[c] <= hi
            widths[c]["clusters"].append(hi - lo)
            # a record sample of the same size: its count of flagged records is hypergeometric
            good = round(truth[c] * total)
            k = int(np.random.default_rng(seed).hypergeometric(good, total - good, n))
            lo, hi = wilson(k, n)
            hits[c]["records"] += lo <= truth[c] <= hi
            widths[c]["records"].append(hi - lo)
    return {c: {"rate": round(truth[c], 6), "inside_clusters": f"{hits[c]['clusters']}/{seeds}",
                "inside_records": f"{hits[c]['records']}/{seeds}",
                "width_clusters": round(float(np.mean(widths[c]["clusters"])), 6),
                "width_records": round(float(np.mean(widths[c]["records"])), 6)} for c in by}


def bench_coverage(tmp: Path, corpus: Path, n: int, seeds: int, by_length: bool) -> dict:
    """The coverage simulation alone on `corpus` (a full audit, then `seeds` samples); `by_length`: on a copy of it
    with its records sorted by text length, one shard after the other (records alike sit together: the clustering a
    corpus ordered by source or length has, which a record sample's interval ignores)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    if by_length:
        files = sorted(corpus.rglob("*.parquet"))
        table = pa.concat_tables(pq.read_table(f, columns=["text"]) for f in files)
        table = table.take(pc.sort_indices(pc.utf8_length(table["text"])))
        rows_per_rg = pq.read_metadata(files[0]).row_group(0).num_rows
        per_shard = -(-table.num_rows // len(files))
        corpus = tmp / "by-length"
        corpus.mkdir()
        for i in range(len(files)):
            pq.write_table(table.slice(i * per_shard, per_shard), corpus / f"shard-{i:05d}.parquet",
                           row_group_size=rows_per_rg)
    out = tmp / ("full-by-length" if by_length else "full-as-is")
    rc, t, text = _run(["audit", str(corpus), "--out", str(out), "--engine", "local"])
    assert rc in (0, 1), text
    return {"corpus": str(corpus), "seconds": round(t, 1), "coverage": coverage(corpus, out, n, seeds)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--parts", type=int, default=1000)
    ap.add_argument("--slices", type=int, default=4)
    ap.add_argument("--mb", type=float, default=1000.0, help="MB of text of the sample benchmark's corpus")
    ap.add_argument("--sample", type=int, default=10_000)
    ap.add_argument("--repeats", type=int, default=3, help="runs of each audit (the median is reported)")
    ap.add_argument("--seeds", type=int, default=200, help="seeds of the coverage simulation")
    ap.add_argument("--corpus", type=Path, default=None,
                    help="a make_corpus.py corpus to use as it is (default: one of --mb generated in --tmp)")
    ap.add_argument("--tmp", default="/tmp")
    ap.add_argument("--coverage-corpus", type=Path, default=None,
                    help="also the coverage simulation on this Parquet corpus (e.g. make_real_corpus.py's), as it is "
                         "and with its records sorted by length")
    ap.add_argument("--skip-merge", action="store_true")
    ap.add_argument("--skip-sample", action="store_true")
    ap.add_argument("--keep", action="store_true", help="keep the generated data")
    args = ap.parse_args()
    print(machine_line())
    print(f"dataaudit from {dataaudit_origin()}")
    tmp = Path(tempfile.mkdtemp(prefix="array-jobs-", dir=args.tmp))
    try:
        if not args.skip_merge:
            r = bench_merge(tmp, args.parts, args.slices)
            print(f"merge of {r['parts']} parts ({r['slices']} slices): command {r['merge_command_seconds']} s "
                  f"(median of {r['merge_command_runs']}) "
                  f"(library call {r['merge_library_seconds']} s; target < 5 s); the slices took "
                  f"{r['slices_seconds']} s, one job {r['single_job_seconds']} s; identical to one job: "
                  f"{r['identical_to_one_job']}")
        if not args.skip_sample:
            r = bench_sample(tmp, args.mb, args.sample, args.corpus, args.repeats, args.seeds)
            print(f"--sample {r['sample']} of {r['records']} records ({r['parquet_bytes'] / 1e9:.2f} GB Parquet, "
                  f"{r['corpus_mb_text']:.0f} MB text; design {r['design']}, {r['clusters']} clusters): "
                  f"{r['sample_seconds']} s vs the full audit {r['full_seconds']} s (medians of {args.repeats}, "
                  f"alternating: {r['runs']}) = {r['sample_share']:.1%} (target < 10%); 1-min load before and "
                  f"after each run: {r['load_1min']}; the full audit's rates inside this sample's 95% intervals: "
                  f"{r['full_rates_inside_ci95']}")
            print(f"  CPU seconds (user + system): {r['cpu']}: the sample's median {r['cpu_share']:.1%} of the full's")
            for k, (whole, rate, ci, deff) in r["rates_full_sample_ci95"].items():
                print(f"  {k}: full {whole:.4%}, sample {rate:.4%} [{ci[0]:.4%}, {ci[1]:.4%}] deff {deff}")
            print(f"coverage over {args.seeds} seeds (full rate inside the 95% interval; mean width), cluster "
                  "sample vs a record sample of the same size:")
            for k, c in r["coverage"].items():
                print(f"  {k}: rate {c['rate']:.4%}: clusters {c['inside_clusters']} (width "
                      f"{c['width_clusters']:.4%}), records {c['inside_records']} (width {c['width_records']:.4%})")
        if args.coverage_corpus is not None:
            for by_length in (False, True):
                r = bench_coverage(tmp, args.coverage_corpus, args.sample, args.seeds, by_length)
                print(f"coverage on {args.coverage_corpus}{' sorted by length' if by_length else ''} ({args.seeds} "
                      f"seeds of --sample {args.sample}; the full audit took {r['seconds']} s):")
                for k, c in r["coverage"].items():
                    print(f"  {k}: rate {c['rate']:.4%}: clusters {c['inside_clusters']} (width "
                          f"{c['width_clusters']:.4%}), records {c['inside_records']} (width {c['width_records']:.4%})")
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
