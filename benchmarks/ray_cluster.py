#!/usr/bin/env python
"""Issue 32's Ray figure: an audit on a Ray cluster that is already running against the local engine.

Starts a cluster of --nodes raylets of --cpus CPUs each on this machine ONCE (tests/pipelines/ray_cluster.py:
`ray start --head` and `ray start --address`, their own ports and temporary folder), then alternates, --repeats
times each, `dataaudit audit CORPUS --engine ray --ray-address ADDR` and `dataaudit audit CORPUS --engine local
--workers 1`, each a child process timed from its start to its exit (start-up included on both sides; the cluster's
own start is not a job's cost). Prints the medians, their ratio (target >= 1.6x), the nodes each Ray run used
(report.json's run.nodes) and whether every run wrote the same report.json (but `run`) and flags.parquet, then
stops the cluster. The corpus: make_real_corpus.py, --mb (200) MB, made when missing.

    .venv/bin/python benchmarks/ray_cluster.py                 # 200 MB, 3 runs each
    .venv/bin/python benchmarks/ray_cluster.py --mb 50 --repeats 2
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import _common  # noqa: E402

import argparse  # noqa: E402
import hashlib  # noqa: E402
import json  # noqa: E402
import shutil  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

from tests.pipelines.ray_cluster import RayCluster  # noqa: E402


def _corpus(args) -> list[Path]:
    out = Path(args.corpus or _common.REPO / f"bench-data/real-{args.mb:g}mb")
    if not (out / "manifest.json").exists():
        import make_real_corpus
        make_real_corpus.main(["--mb", str(args.mb), "--out", str(out)])
    manifest = json.loads((out / "manifest.json").read_text())
    return [out / s["file"] for s in manifest["shards"]]


def _outputs(out: Path) -> tuple[str, dict]:
    """A digest of report.json but its `run`, and flags.parquet's bytes; and the `run` section."""
    report = json.loads((out / "report.json").read_text())
    run = report.pop("run")
    digest = hashlib.sha256(json.dumps(report, sort_keys=True).encode() + (out / "flags.parquet").read_bytes())
    return digest.hexdigest()[:16], run


def _audit(files: list[Path], tmp: Path, *options: str) -> tuple[float, str, dict]:
    out = tmp / "out"
    shutil.rmtree(out, ignore_errors=True)
    cmd = _common.dataaudit_cli() + ["audit", *map(str, files), "--out", str(out), *options]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=_common.child_env(), capture_output=True, text=True, stdin=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(options)}: exit {proc.returncode}: {(proc.stdout + proc.stderr)[-2000:]}")
    return (wall, *_outputs(out))


def run(args) -> int:
    files = _corpus(args)
    mb = sum(f.stat().st_size for f in files) / 1e6
    print(_common.machine_line())
    print(f"corpus: {len(files)} Parquet shards, {mb:.1f} MB on disk; code from {_common.dataaudit_origin()}")
    t0 = time.perf_counter()
    cluster = RayCluster(num_cpus=args.cpus, nodes=args.nodes)
    print(f"cluster: {args.nodes} raylets x {args.cpus} CPU at {cluster.address}, up in "
          f"{time.perf_counter() - t0:.1f} s (not part of any job's time)")
    times: dict[str, list[float]] = {"ray": [], "local": []}
    digests, nodes = set(), []
    try:
        with tempfile.TemporaryDirectory(dir=args.tmp) as tmp:
            _audit(files[:1], Path(tmp), "--engine", "local")    # warm-up: page cache, numba's on-disk cache
            for i in range(args.repeats):
                for name, options in (("ray", ("--engine", "ray", "--ray-address", cluster.address)),
                                      ("local", ("--engine", "local", "--workers", "1"))):
                    wall, digest, record = _audit(files, Path(tmp), *options)
                    times[name].append(wall)
                    digests.add(digest)
                    if name == "ray":
                        nodes.append(record.get("nodes", {}))
                    print(f"  run {i + 1} {name:5s} {wall:6.2f} s  outputs {digest}")
    finally:
        cluster.stop()
    ray_s, local_s = statistics.median(times["ray"]), statistics.median(times["local"])
    ratio = local_s / ray_s
    used = sorted({len(n) for n in nodes})
    print(_common.fmt_table(["engine", "median s", "MB/s", "runs"], [
        [f"ray, {args.nodes} x {args.cpus} CPU cluster", f"{ray_s:.2f}", f"{mb / ray_s:.1f}",
         " ".join(f"{t:.2f}" for t in times["ray"])],
        ["local, --workers 1", f"{local_s:.2f}", f"{mb / local_s:.1f}", " ".join(f"{t:.2f}" for t in times["local"])],
    ]))
    print(f"ratio ray / local: {ratio:.2f}x (target >= 1.6x); nodes used per Ray run: {used}; "
          f"outputs identical: {len(digests) == 1}")
    _common.write_json_result(args.json, {"mb": mb, "ray_s": times["ray"], "local_s": times["local"],
                                          "ratio": ratio, "nodes": nodes, "identical": len(digests) == 1})
    if len(digests) != 1:
        return 1
    return 3 if args.min_ratio is not None and ratio < args.min_ratio else 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=200.0, help="corpus size (make_real_corpus.py)")
    ap.add_argument("--corpus", default=None, help="a make_real_corpus.py folder (default bench-data/real-<mb>mb)")
    ap.add_argument("--nodes", type=int, default=2, help="raylets in the cluster")
    ap.add_argument("--cpus", type=int, default=1, help="CPUs of each raylet")
    ap.add_argument("--repeats", type=int, default=3, help="runs of each engine, alternating")
    ap.add_argument("--tmp", default=None, help="folder for the outputs (default: the system's)")
    ap.add_argument("--min-ratio", type=float, default=None, help="exit 3 below this ratio")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    return _common.run_guarded("ray_cluster", run, args)


if __name__ == "__main__":
    sys.exit(main())
