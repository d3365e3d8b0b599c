"""Helpers shared by the benchmark scripts (not part of the dataaudit package)."""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import time
import traceback
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BENCH_DEPS = REPO / ".bench-deps"

_THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS",
                "VECLIB_MAXIMUM_THREADS", "RAYON_NUM_THREADS", "ARROW_NUM_THREADS")


def single_core_env() -> None:
    """Pin thread pools to one thread. Call before numpy/torch/pyarrow are imported."""
    for v in _THREAD_VARS:
        os.environ[v] = "1"


def single_core_libs() -> None:
    """Pin the pools of already-imported libraries to one thread."""
    import pyarrow as pa
    pa.set_cpu_count(1)
    pa.set_io_thread_count(1)
    if "torch" in sys.modules:
        import torch
        torch.set_num_threads(1)


def ensure_corpus(args, log=print) -> dict:
    """The corpus to benchmark; returns its manifest (see make_corpus.py).

    --corpus DIR that already exists is used as it is (its manifest.json if it has one, else every *.parquet
    in it, sorted; nothing in it is ever deleted). Without --corpus the default bench-data/corpus-<mb>mb is
    generated, or reused when its manifest matches the corpus options.
    """
    import json
    import make_corpus
    if args.corpus is not None and Path(args.corpus).is_dir() and not args.force:
        corpus = Path(args.corpus)
        mpath = corpus / "manifest.json"
        if mpath.exists():
            manifest = json.loads(mpath.read_text())
            log(f"corpus: using {corpus} as it is ({manifest['rows']} rows, "
                f"{manifest['text_bytes'] / 1e6:.1f} MB text, params {manifest['params']})")
            return manifest
        files = sorted(corpus.rglob("*.parquet"))
        if not files:
            raise SystemExit(f"{corpus}: no manifest.json and no *.parquet files")
        import pyarrow.parquet as pq
        shards = [{"file": str(f.relative_to(corpus)), "rows": pq.ParquetFile(f).metadata.num_rows,
                   "file_bytes": f.stat().st_size} for f in files]
        log(f"corpus: using external {corpus} ({len(files)} Parquet files, no manifest: no planted rows)")
        return {"params": None, "rows": sum(s["rows"] for s in shards), "text_bytes": None,
                "file_bytes": sum(s["file_bytes"] for s in shards), "shards": shards, "planted": [],
                "planted_counts": {}}
    if args.corpus is None:
        args.corpus = str(REPO / make_corpus.default_corpus_dir(args.mb))
    args.out = args.corpus
    return make_corpus.generate(args, log=log)


def shard_paths(manifest: dict, corpus: str) -> list[str]:
    return [str(Path(corpus) / s["file"]) for s in manifest["shards"]]


def machine_line() -> str:
    load = os.getloadavg() if hasattr(os, "getloadavg") else (float("nan"),) * 3
    return (f"machine: {platform.node()} {platform.machine()}, {os.cpu_count()} cpus, python "
            f"{platform.python_version()}, load avg {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")


def fmt_table(header: list[str], rows: list[list], title: str | None = None) -> str:
    cells = [[str(c) for c in header]] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    lines = []
    if title:
        lines.append(title)
    for k, r in enumerate(cells):
        lines.append("  ".join(c.ljust(widths[i]) if i == 0 else c.rjust(widths[i]) for i, c in enumerate(r)))
        if k == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def human_rate(x: float) -> str:
    if x >= 1e6:
        return f"{x / 1e6:.2f}M"
    if x >= 1e3:
        return f"{x / 1e3:.1f}k"
    return f"{x:.1f}"


class Timer:
    def __enter__(self):
        self.t0 = time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.s = time.perf_counter() - self.t0
        return False


def base_parser(description: str, default_mb: float) -> argparse.ArgumentParser:
    import make_corpus
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--corpus", default=None,
                    help="corpus folder (default bench-data/corpus-<mb>mb; generated if missing or if its "
                         "manifest does not match the corpus options)")
    make_corpus.add_corpus_args(ap, default_mb=default_mb)
    return ap


def run_with_data(name: str, sources, run, args) -> int:
    """`sources()` checks that the real data a benchmark needs is there (FileNotFoundError naming the folder: the
    benchmark stops with that one line), then `run_guarded`."""
    try:
        sources()
    except FileNotFoundError as e:
        raise SystemExit(f"{name}: {e}")
    return run_guarded(name, run, args)


def run_guarded(name: str, run, args) -> int:
    """Run a benchmark's `run(args)`: an unexpected error prints its traceback and `NAME: FAILED`, exit 1."""
    try:
        return run(args)
    except SystemExit:
        raise
    except Exception:  # noqa: BLE001  (a benchmark reports any failure the same way)
        traceback.print_exc()
        print(f"{name}: FAILED", file=sys.stderr)
        return 1


def write_json_result(path: str | None, result: dict) -> None:
    """--json: the figures as JSON, for comparing runs."""
    if path:
        import json

        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(json.dumps(result, indent=1))


# ----------------------------------------------------------------------------- the audit CLI as a child process

def child_env() -> dict:
    """The environment of the audit children: this checkout's root first on PYTHONPATH (so `-m dataaudit.cli`
    runs this checkout's code, not another editable install's), whatever PYTHONPATH held kept after it."""
    paths = [str(REPO)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep)
                                    if p and Path(p).resolve() != REPO]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(paths), "COLUMNS": "160"}


def dataaudit_cli() -> list[str]:
    return [sys.executable, "-m", "dataaudit.cli"]


def dataaudit_origin() -> str:
    """Where the children import dataaudit from (printed, so a run says which code it measured)."""
    out = subprocess.run([sys.executable, "-c", "import dataaudit; print(dataaudit.__file__)"], capture_output=True,
                         text=True, env=child_env())
    return out.stdout.strip() or out.stderr.strip().splitlines()[-1]


def audit_cmd(shards: list[Path], out: Path, config: str | None = None) -> list[str]:
    cmd = dataaudit_cli() + ["audit", *map(str, shards), "--out", str(out), "--engine", "local"]
    return cmd + (["--config", config] if config else [])


def read_outputs(res: dict, out: Path) -> dict:
    if res["rc"] in (0, 1) and (out / "flags.parquet").exists():
        import pyarrow.parquet as pq

        res["flags"] = pq.read_table(out / "flags.parquet").to_pylist()
        res["report"] = json.loads((out / "report.json").read_text())
    return res


def run_audit_cli(shards: list[Path], out: Path, config: str | None = None) -> dict:
    """`dataaudit audit SHARDS --out OUT --engine local` as a child; returns rc, seconds, the last output lines,
    and the flags and report when it wrote them."""
    if out.exists():
        shutil.rmtree(out)
    cmd = audit_cmd(shards, out, config)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=child_env())
    seconds = time.perf_counter() - t0
    res = {"cmd": cmd, "rc": proc.returncode, "seconds": seconds,
           "output": (proc.stdout + proc.stderr).strip().splitlines()[-12:]}
    return read_outputs(res, out)


def fields_line(report: dict) -> str:
    seen = {}
    for s in report.get("shards", []):
        seen.update(s.get("formats", {}))
    return "; ".join(f"{k} [{v}]" for k, v in seen.items())
