"""Start-up cost of the `dataaudit` command: `--help`, and each command's fixed overhead on a tiny input, against
`python -c pass` and `python -c "import pyarrow"` measured in the same run (alternating rounds, best of --reps).

Each command runs as a child (`python -m dataaudit.cli ...` from this checkout) on a 1-record input: what it costs
before any real work (imports, config, the report writers), each into a fresh --out folder (so no run reuses an
earlier one's finished shards). One untimed warm-up run fills numba's on-disk cache first. Also prints which heavy
modules each child imported (torch, ray, matplotlib, ...). `--baseline DIR` times the same commands from another
checkout (e.g. the previous version) in the same alternating rounds.

    python benchmarks/startup.py [--reps 7] [--json PATH] [--baseline DIR]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
HEAVY = ("torch", "ray", "matplotlib", "tokenizers", "PIL", "pandas", "numba", "scipy")
# After the command, the child prints the heavy modules it loaded (to stderr, so the timing sees no difference).
PROBE = ("import sys, atexit; atexit.register(lambda: sys.stderr.write('LOADED ' + ' '.join(m for m in {heavy!r} "
         "if m in sys.modules) + '\\n')); sys.argv = ['dataaudit'] + {argv!r}; "
         "from dataaudit.cli import main; main()")


def _inputs(tmp: Path) -> dict[str, list[str]]:
    text = tmp / "one.jsonl"
    text.write_text(json.dumps({"text": "A short and perfectly ordinary sentence."}) + "\n", encoding="utf-8")
    bench = tmp / "bench.jsonl"
    bench.write_text(json.dumps({"question": "What is two plus two?", "answer": "4"}) + "\n", encoding="utf-8")
    out = lambda name: str(tmp / "out" / name)  # noqa: E731
    return {
        "dataaudit --help": ["--help"],
        "audit (1-record JSONL)": ["audit", str(text), "--out", out("audit")],
        "dedup (1-record JSONL)": ["dedup", str(text), "--out", out("dedup")],
        "contamination (1 x 1 record)": ["contamination", "--train", str(text), "--benchmark", f"b={bench}:question",
                                         "--out", out("contamination")],
    }


def _time(cmd: list[str], env: dict, cwd: Path, out: Path) -> tuple[float, str]:
    shutil.rmtree(out, ignore_errors=True)
    t = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=cwd)
    dt = time.perf_counter() - t
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(cmd)}: exit {proc.returncode}\n{proc.stderr[-2000:]}")
    loaded = next((line[7:] for line in proc.stderr.splitlines() if line.startswith("LOADED ")), "")
    return dt, loaded


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=7, help="alternating rounds; the best of each is reported")
    ap.add_argument("--json", type=Path, help="write the figures here")
    ap.add_argument("--baseline", type=Path, help="another checkout whose commands are timed in the same rounds")
    args = ap.parse_args()

    def where(root: Path) -> tuple[dict, Path]:   # `python -c` imports from its folder first: run in the checkout
        return {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])}, root

    py = sys.executable
    with tempfile.TemporaryDirectory(prefix="startup-") as tmp:
        out = Path(tmp) / "out"
        commands = {name: [py, "-c", PROBE.format(heavy=HEAVY, argv=argv)]
                    for name, argv in _inputs(Path(tmp)).items()}
        peers = {"python -c pass": [py, "-c", "pass"], 'python -c "import pyarrow"': [py, "-c", "import pyarrow"]}
        runs = {name: (cmd, *where(REPO)) for name, cmd in {**peers, **commands}.items()}
        if args.baseline:
            runs.update({f"{name} [baseline]": (cmd, *where(args.baseline.resolve()))
                         for name, cmd in commands.items()})
        loaded = {name: _time(*run, out)[1] for name, run in runs.items() if name not in peers}   # warm-up:
        # numba's cache filled
        best = {name: float("inf") for name in runs}
        for _ in range(args.reps):
            for name, run in runs.items():
                best[name] = min(best[name], _time(*run, out)[0])
    base, pa_base = best["python -c pass"], best['python -c "import pyarrow"']
    print(f"{'what':45} {'best s':>8} {'- pass s':>9} {'x import pyarrow':>17}  heavy modules loaded")
    for name, t in best.items():
        print(f"{name:45} {t:8.3f} {t - base:9.3f} {t / pa_base:16.2f}x  {loaded.get(name, '-') or 'none'}")
    if args.json:
        args.json.write_text(json.dumps({"best_s": best, "loaded": loaded, "reps": args.reps}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
