"""Images inside message content parts cost what the same images in an `images` column cost (issue target: within
10%). The same pictures, referenced by path from N records, audited both ways in alternating runs; prints the
median time of each and their ratio.

    .venv/bin/python benchmarks/image_parts_cost.py [--records 2000] [--runs 5]
"""
from __future__ import annotations

import argparse
import io
import json
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np


def _pictures(folder: Path, n: int) -> list[str]:
    from PIL import Image

    rng = np.random.default_rng(0)
    names = []
    for i in range(n):
        arr = rng.integers(0, 255, (96, 128, 3), dtype=np.uint8)
        buf = io.BytesIO()
        Image.fromarray(arr, "RGB").save(buf, "JPEG", quality=85)
        (folder / f"{i}.jpg").write_bytes(buf.getvalue())
        names.append(f"img/{i}.jpg")
    return names


def _records(names: list[str], records: int, parts: bool) -> list[dict]:
    out = []
    for r in range(records):
        image = names[r % len(names)]
        if parts:
            user = [{"type": "image_url", "image_url": {"url": image}}, {"type": "text", "text": f"What is {r}?"}]
            out.append({"messages": [{"role": "user", "content": user},
                                     {"role": "assistant", "content": [{"type": "text", "text": "A pattern."}]}]})
        else:
            out.append({"messages": [{"role": "user", "content": f"<image>What is {r}?"},
                                     {"role": "assistant", "content": "A pattern."}], "images": [image]})
    return out


def _audit(shard: Path, out: Path) -> float:
    from click.testing import CliRunner

    from dataaudit.cli import main

    start = time.perf_counter()
    res = CliRunner().invoke(main, ["audit", str(shard), "--out", str(out), "--engine", "local"])
    took = time.perf_counter() - start
    assert res.exit_code in (0, 1), res.output
    return took


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=2000)
    ap.add_argument("--pictures", type=int, default=2000)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "img").mkdir()
        names = _pictures(root / "img", args.pictures)
        shards = {}
        for kind, parts in (("column", False), ("parts", True)):
            shards[kind] = root / f"{kind}.jsonl"
            shards[kind].write_text("".join(json.dumps(r) + "\n" for r in _records(names, args.records, parts)))
        times: dict[str, list[float]] = {"column": [], "parts": []}
        _audit(shards["column"], root / "warm")          # imports and kernels once, outside the timings
        for run in range(args.runs):
            for kind in (("column", "parts") if run % 2 == 0 else ("parts", "column")):
                times[kind].append(_audit(shards[kind], root / f"out-{kind}-{run}"))
        for kind in times:
            report = json.loads((root / f"out-{kind}-0" / "report.json").read_text())
            stats = next(iter(report["images"].values()))
            print(f"{kind:7s} images={stats['images']} decoded={stats['decoded']} "
                  f"median {statistics.median(times[kind]):.3f} s  runs {[round(t, 3) for t in times[kind]]}")
        ratio = statistics.median(times["parts"]) / statistics.median(times["column"])
        print(f"content parts / images column: {ratio:.3f}x (target <= 1.10)")


if __name__ == "__main__":
    main()
