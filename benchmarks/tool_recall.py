#!/usr/bin/env python
"""Recall of the tool-call and reasoning-trace checks on planted defects, per layout (OpenAI messages, ShareGPT/
glaive, LLaMA-Factory v1 parts), and their flags on records where nothing was planted.

Generates the data (fixtures/tool_data.py, `--records` per layout), runs `dataaudit audit FILE --engine local`
on each layout (the installed CLI, one process each) and scores flags.parquet against the truth table:

  recall   per kind: planted records flagged by the expected check AT the planted row and field path
  extra    flags of these checks on unplanted records, or on planted ones by another of these checks

Target: recall >= 0.97 for every kind and layout, no extra flag. Exit 1 when --strict and a target is missed.

    .venv/bin/python benchmarks/tool_recall.py --records 2400
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402
sys.path.insert(0, str(_common.REPO))
from fixtures import tool_data  # noqa: E402

TARGET_RECALL = 0.97


def score(planted: list[dict], flags: list[dict]) -> tuple[dict, list[dict]]:
    """(kind -> (found, planted), extra flags of the tool and reasoning checks)."""
    got = {(f["row"], f["check"], f["field"]) for f in flags}
    recall = {}
    for kind in tool_data.KINDS:
        mine = [p for p in planted if p["kind"] == kind]
        recall[kind] = (sum((p["row"], p["check"], p["field"]) in got for p in mine), len(mine))
    expected = {(p["row"], p["check"], p["field"]) for p in planted}
    extra = [f for f in flags if f["check"] in tool_data.KINDS and (f["row"], f["check"], f["field"]) not in expected]
    return recall, extra


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--records", type=int, default=2400)
    ap.add_argument("--rate", type=float, default=0.03)
    ap.add_argument("--strict", action="store_true")
    args = ap.parse_args(argv)
    import pyarrow.parquet as pq

    missed = False
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data"
        truth = tool_data.generate(data, args.records, args.rate)
        for layout, t in truth["layouts"].items():
            out = Path(tmp) / layout
            start = time.perf_counter()
            run = subprocess.run([str(_common.REPO / ".venv/bin/dataaudit"), "audit", str(data / t["file"]),
                                  "--out", str(out), "--engine", "local"], capture_output=True, text=True)
            took = time.perf_counter() - start
            if run.returncode not in (0, 1):
                print(f"{layout}: audit failed ({run.returncode}): {run.stderr[-500:]}")
                missed = True
                continue
            flags = pq.read_table(out / "flags.parquet").to_pylist()
            recall, extra = score(t["planted"], flags)
            print(f"{layout}: {args.records} records, audit {took:.2f} s, {len(t['planted'])} planted")
            for kind, (found, n) in recall.items():
                r = found / n if n else float("nan")
                missed |= r < TARGET_RECALL
                print(f"  {kind:22s} recall {r:.3f} ({found}/{n})")
            print(f"  extra flags: {len(extra)} {dict(Counter(f['check'] for f in extra))}")
            for f in extra[:5]:
                print(f"    row {f['row']} {f['field']} {f['check']}: {f['detail']}")
            missed |= bool(extra)
    return 1 if missed and args.strict else 0


if __name__ == "__main__":
    raise SystemExit(main())
