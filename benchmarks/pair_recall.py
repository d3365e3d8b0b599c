#!/usr/bin/env python
"""Recall of the preference-pair and KTO checks per layout, their false flags, and the pair audit's throughput
against a flat text audit of the same characters.

Generates fixtures/pair_data.py's shards (`--records` per layout, defects planted at known rows, sides and
turns), runs `dataaudit audit FILE --out DIR` on each (the installed CLI, one process each) and scores its
flags.parquet against truth.json:

  recall       planted records flagged by the expected check AT the planted row AND field path
  false        unplanted records with a pair check's flag (pair_*, kto_label): every such flag is a false one,
               since the records are real pairs with nothing planted
Throughput: the ranking shard vs one JSONL whose `text` holds the same characters per record (prompt, chosen,
rejected joined), audit wall time each (best of --repeat).

    .venv/bin/python benchmarks/pair_recall.py --records 2000
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from fixtures import pair_data  # noqa: E402

PAIR_CHECKS = ("pair_empty_side", "pair_identical", "pair_near_identical", "pair_prefix", "pair_prompt_mismatch",
               "kto_label", "contradictory_preference", "pair_truncated_identical", "no_trainable_tokens")
# The recall runs render each record with a tokenizer and cut it to a context (pair_truncated_identical,
# no_trainable_tokens); the throughput runs read text alone, as the flat audit they are compared with.
RENDERED = ["--tokenizer", str(pair_data.TOKENIZER), "--context-length", str(pair_data.CONTEXT_LENGTH)]


def audit(path: Path, out: Path, rendered: bool = False) -> tuple[list[dict], float]:
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "dataaudit.cli", "audit", str(path), "--out", str(out),
                           *(RENDERED if rendered else [])], capture_output=True, text=True)
    took = time.perf_counter() - start
    if done.returncode not in (0, 1):
        raise SystemExit(f"audit of {path} failed: {done.stderr.strip()}")
    return pq.read_table(out / "flags.parquet").to_pylist(), took


def score(truth: dict, flags: list[dict]) -> dict:
    found = {(f["row"], f["check"], f["field"]) for f in flags}
    planted = {p["row"] for p in truth["plants"]}
    per_kind: dict[str, list[int]] = {}
    misses = []
    for p in truth["plants"]:
        hit = (p["row"], p["check"], p["field"]) in found
        per_kind.setdefault(p["kind"], [0, 0])[0] += hit
        per_kind[p["kind"]][1] += 1
        if not hit:
            misses.append(p)
    false = [f for f in flags if f["check"] in PAIR_CHECKS and f["row"] not in planted]
    hits = sum(v[0] for v in per_kind.values())
    return {"recall": hits / max(1, len(truth["plants"])), "kinds": per_kind, "misses": misses[:5],
            "false_records": len({f["row"] for f in false}), "false_checks": Counter(f["check"] for f in false),
            "records": truth["records"]}


def flat_copy(ranking: Path, dst: Path) -> int:
    """The ranking shard's characters as one flat `text` per record; returns the characters."""
    chars = 0
    with open(dst, "w", encoding="utf-8") as f:
        for r in json.loads(ranking.read_text(encoding="utf-8")):
            text = "\n".join([t["value"] for t in r["conversations"]] + [r["chosen"]["value"], r["rejected"]["value"]])
            chars += len(text)
            f.write(json.dumps({"text": text}, ensure_ascii=False) + "\n")
    return chars


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--records", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=2)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        truth = pair_data.generate(tmp / "data", a.records)
        for layout, t in truth.items():
            flags, took = audit(tmp / "data" / t["file"], tmp / f"out-{layout}", rendered=True)
            s = score(t, flags)
            kinds = ", ".join(f"{k} {v[0]}/{v[1]}" for k, v in s["kinds"].items())
            print(f"{layout:14s} recall {s['recall']:.3f} ({kinds}); false pair flags on "
                  f"{s['false_records']}/{s['records']} records {dict(s['false_checks'])}; {took:.1f}s")
            for m in s["misses"]:
                print(f"   missed {m}; flags on that row: "
                      f"{[(f['check'], f['field']) for f in flags if f['row'] == m['row']]}")
        chars = flat_copy(tmp / "data" / "ranking.json", tmp / "flat.jsonl")
        pair = min(audit(tmp / "data" / "ranking.json", tmp / f"t-pair-{i}")[1] for i in range(a.repeat))
        flat = min(audit(tmp / "flat.jsonl", tmp / f"t-flat-{i}")[1] for i in range(a.repeat))
        print(f"throughput ({chars / 1e6:.1f} M chars, {a.records} records, wall incl. start-up): pair audit "
              f"{pair:.2f}s ({chars / pair / 1e6:.1f} M chars/s), flat text audit {flat:.2f}s "
              f"({chars / flat / 1e6:.1f} M chars/s)")


if __name__ == "__main__":
    main()
