#!/usr/bin/env python
"""Peak memory and wall time of the whole audit CLI on corpora of different sizes (streaming check).

For each size in --sizes (MB of text; default 100 and 1000) the corpus bench-data/corpus-<mb>mb is generated
(or reused), then `.venv/bin/dataaudit audit <corpus dir> --out <tmp> --engine local` runs as a child
process, under a minimal wrapper process. Peak RSS comes from the kernel (the wrapper's
getrusage(RUSAGE_CHILDREN).ru_maxrss: the largest RSS any process of the audit reached) and, as a cross-check, from sampling the summed RSS of the child's whole process tree
every --sample-ms. A streaming audit's peak memory should not grow with corpus size: the table prints the
ratio of each peak to the smallest corpus's. The RSS of just importing the audit code (the floor) is measured
the same way.

    .venv/bin/python benchmarks/memory_scaling.py --sizes 100,1000
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402

import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import shutil  # noqa: E402
import signal  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402

import make_corpus  # noqa: E402

PAGE = os.sysconf("SC_PAGE_SIZE")


# A minimal parent for the measured command: RUSAGE_CHILDREN of a fresh small process is the command's own peak
# RSS. (Taking wait4's rusage of a child of *this* process would not do: Linux carries the RSS high-water mark
# of the forked copy across exec, so a big benchmark process inflates its children's ru_maxrss.)
_WRAPPER = """import resource, subprocess, sys
rc = subprocess.call(sys.argv[2:], stdin=subprocess.DEVNULL)
with open(sys.argv[1], "w") as f:
    f.write(f"{rc} {resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}")
"""


def _tree_rss(pid: int, include_root: bool = True) -> int:
    """Summed RSS in bytes of pid's descendants (and pid itself if include_root); 0 once gone."""
    total, stack, seen = 0, [pid], set()
    while stack:
        p = stack.pop()
        if p in seen:
            continue
        seen.add(p)
        try:
            if p != pid or include_root:
                with open(f"/proc/{p}/statm") as f:
                    total += int(f.read().split()[1]) * PAGE
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as f:
                    stack.extend(int(c) for c in f.read().split())
        except (OSError, ValueError):
            continue
    return total


def run_measured(cmd: list[str], log_path: Path, sample_ms: float, timeout: float | None) -> dict:
    """Run cmd under a small wrapper process; return its exit code, wall seconds, kernel peak RSS (bytes, the
    largest single process of the command's tree) and sampled peak RSS of its whole process tree (bytes)."""
    rc_path = log_path.with_suffix(".rusage")
    with open(log_path, "wb") as log:
        t0 = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-c", _WRAPPER, str(rc_path)] + cmd, stdout=log,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        peak = [0]
        done = threading.Event()

        def sampler():
            while not done.is_set():
                peak[0] = max(peak[0], _tree_rss(proc.pid, include_root=False))
                done.wait(sample_ms / 1000)

        th = threading.Thread(target=sampler, daemon=True)
        th.start()
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)          # the wrapper leads its own session/process group
            proc.wait()
            raise RuntimeError(f"timed out after {timeout:g}s: {' '.join(cmd)}")
        finally:
            done.set()
            th.join()
        wall = time.perf_counter() - t0
    if proc.returncode != 0 or not rc_path.exists():
        raise RuntimeError(f"measuring wrapper failed (exit {proc.returncode}): {' '.join(cmd)}")
    rc, maxrss_kib = (int(x) for x in rc_path.read_text().split())
    return {"rc": rc, "wall_s": wall, "maxrss_bytes": maxrss_kib * 1024,  # Linux: ru_maxrss is in KiB
            "sampled_tree_peak_bytes": peak[0]}


def corpus_args(mb: float, base: argparse.Namespace) -> argparse.Namespace:
    a = argparse.Namespace(**vars(base))
    a.mb = mb
    a.out = str(_common.REPO / make_corpus.default_corpus_dir(mb))
    return a


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="100,1000", help="comma-separated corpus sizes in MB of text")
    ap.add_argument("--dataaudit", default=str(_common.REPO / ".venv/bin/dataaudit"), help="the CLI to run")
    ap.add_argument("--config", default=None, help="audit.toml passed to the CLI (default: none)")
    ap.add_argument("--engine", default="local")
    ap.add_argument("--work-dir", default=str(_common.REPO / "bench-data/tmp"),
                    help="where the audit --out folders and logs go (removed afterwards unless --keep)")
    ap.add_argument("--keep", action="store_true", help="keep the audit outputs and logs")
    ap.add_argument("--sample-ms", type=float, default=50.0, help="RSS sampling period")
    ap.add_argument("--timeout", type=float, default=3600.0, help="seconds before an audit run is killed")
    ap.add_argument("--json", default=None, help="also write the figures to this JSON file")
    ap.add_argument("--max-growth", type=float, default=None,
                    help="exit 3 when the largest corpus's peak RSS exceeds this multiple of the smallest's "
                         "(off by default)")
    make_corpus.add_corpus_args(ap)
    args = ap.parse_args(argv)
    return _common.run_guarded("memory_scaling", run, args)


def run(args) -> int:
    try:
        sizes = sorted(float(s) for s in args.sizes.split(",") if s.strip())
    except ValueError:
        raise SystemExit(f"--sizes: expected comma-separated numbers, got {args.sizes!r}")
    if not sizes:
        raise SystemExit("--sizes: nothing to run")
    if not Path(args.dataaudit).exists():
        raise SystemExit(f"{args.dataaudit}: not found")
    corpora = {mb: make_corpus.generate(corpus_args(mb, args)) for mb in sizes}
    work = Path(args.work_dir)
    work.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="memory-scaling-", dir=work))
    print(_common.machine_line())
    results = []
    try:
        # floor: just importing what the audit imports
        py = str(Path(args.dataaudit).parent / "python")
        floor = run_measured([py, "-c", "import dataaudit.cli, dataaudit.checks, dataaudit.pipelines.audit"],
                             tmp / "floor.log", args.sample_ms, args.timeout)
        if floor["rc"] != 0:
            print((tmp / "floor.log").read_text(errors="replace")[-2000:], file=sys.stderr)
            raise RuntimeError("importing the audit code failed")
        for mb in sizes:
            corpus = _common.REPO / make_corpus.default_corpus_dir(mb)
            out = tmp / f"out-{mb:g}mb"
            cmd = [args.dataaudit, "audit", str(corpus), "--out", str(out), "--engine", args.engine]
            if args.config:
                cmd += ["--config", args.config]
            print(f"running: {' '.join(cmd)}", flush=True)
            r = run_measured(cmd, tmp / f"audit-{mb:g}mb.log", args.sample_ms, args.timeout)
            if r["rc"] not in (0, 1):
                print((tmp / f"audit-{mb:g}mb.log").read_text(errors="replace")[-3000:], file=sys.stderr)
                raise RuntimeError(f"audit of {corpus} exited {r['rc']} (0/1 expected)")
            samples = None
            try:
                samples = json.loads((out / "report.json").read_text())["totals"]["samples"]
            except (OSError, ValueError, KeyError):
                pass
            m = corpora[mb]
            if samples is not None and samples != m["rows"]:
                raise RuntimeError(f"audit reported {samples} samples, corpus has {m['rows']} rows")
            r.update({"mb": mb, "rows": m["rows"], "text_bytes": m["text_bytes"], "file_bytes": m["file_bytes"],
                      "samples_reported": samples})
            results.append(r)
            if not args.keep:
                shutil.rmtree(out, ignore_errors=True)
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
            try:
                work.rmdir()                           # only if empty
            except OSError:
                pass

    base = results[0]
    rows = [["import floor (python -c 'import dataaudit.cli, dataaudit.checks, dataaudit.pipelines.audit')", "-", "-",
             f"{floor['wall_s']:.1f}", "-", f"{floor['maxrss_bytes'] / 2**20:,.0f}",
             f"{floor['sampled_tree_peak_bytes'] / 2**20:,.0f}", "-"]]
    for r in results:
        rows.append([f"dataaudit audit --engine {args.engine}: corpus {r['mb']:g} MB", f"{r['rows']:,}",
                     f"{r['file_bytes'] / 1e6:,.0f}", f"{r['wall_s']:.1f}",
                     f"{r['rows'] / r['wall_s']:,.0f}", f"{r['maxrss_bytes'] / 2**20:,.0f}",
                     f"{r['sampled_tree_peak_bytes'] / 2**20:,.0f}",
                     f"{r['maxrss_bytes'] / base['maxrss_bytes']:.2f}x"])
    print()
    print(_common.fmt_table(["run", "rows", "parquet MB", "wall s", "rows/s", "peak RSS MiB",
                             "tree RSS MiB (sampled)", "peak vs smallest"], rows,
                            title="whole-audit peak memory vs corpus size (exit code 0/1 = ran fine):"))
    big = results[-1]
    growth = big["maxrss_bytes"] / base["maxrss_bytes"]
    size_ratio = big["text_bytes"] / base["text_bytes"]
    if len(results) > 1:
        print(f"corpus {size_ratio:.1f}x larger -> peak RSS {growth:.2f}x, wall time "
              f"{big['wall_s'] / base['wall_s']:.1f}x; "
              + ("streaming: peak memory flat (<= 1.25x)" if growth <= 1.25 else
                 "peak memory GROWS with corpus size"))
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps({"floor": floor, "runs": results}, indent=1))
    if args.max_growth is not None and growth > args.max_growth:
        print(f"memory_scaling: peak RSS grew {growth:.2f}x > --max-growth {args.max_growth:g}", file=sys.stderr)
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
