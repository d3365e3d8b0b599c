"""Digest of every command's outputs on the fixtures and the shared data, to show that a change of code kept
the outputs identical.

Runs `audit`, `dedup`, `contamination` and `tokenizer-drift` of the checkout in the current folder (as
`python -m dataaudit.cli`, so the code of that checkout is what runs) and writes one JSON: for each output
file, its content with the `run` section (timings, host) left out; Parquet files as their rows. Two digests
are compared with `--compare A B` (exit 1 and the first differences when they differ):

    git worktree add /tmp/before <commit>
    (cd /tmp/before && python /path/to/benchmarks/output_digest.py --out /tmp/before.json)
    python benchmarks/output_digest.py --out /tmp/after.json
    python benchmarks/output_digest.py --compare /tmp/before.json /tmp/after.json
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

SHARED = Path(os.environ.get("DATAAUDIT_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
# Timing and host keys (`run`, the drift command's throughput): everything else must be identical between runs.
VOLATILE = {"run", "seconds", "texts_per_second"}


def _shakespeare_parquet(path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    paragraphs = [p for p in (SHARED / "corpora" / "tinyshakespeare.txt").read_text().split("\n\n") if p.strip()]
    pq.write_table(pa.table({"id": [f"p{i}" for i in range(len(paragraphs))], "text": paragraphs}), path)


def _drift_config(data: Path, config: Path) -> Path:
    """The fixtures' config plus an inference tokenizer: the audit's stateful check runs on every shard."""
    tok = SHARED / "tokenizers" / "llama-test-tokenizer.json"
    path = data / "audit-drift.toml"
    path.write_text(config.read_text().replace("[data]\n", f'[data]\ninference_tokenizer = "{tok}"\ndrift_sample = 0\n'))
    return path


def _jobs(data: Path, fixtures: Path, config: Path) -> dict[str, list[str]]:
    s = SHARED
    return {
        "audit-fixtures": ["audit", str(fixtures), "--config", str(config), "--engine", "local"],
        "audit-drift": ["audit", str(fixtures), "--config", str(_drift_config(data, config)), "--engine", "local"],
        "audit-shared": ["audit", str(s / "webdataset" / "testgz.tar"), str(s / "benchmarks" / "gsm8k_test.jsonl"),
                         str(s / "benchmarks" / "arc_challenge_test.jsonl"), str(s / "chat" / "v1_sft_demo.jsonl"),
                         str(s / "parquet-testing"), str(data / "shakespeare.parquet"), "--engine", "local"],
        "dedup-fixtures": ["dedup", str(fixtures), "--engine", "local", "--threshold", "0.5"],
        "dedup-shared": ["dedup", str(data / "shakespeare.parquet"), str(s / "webdataset" / "testgz.tar"),
                         "--against", str(s / "benchmarks" / "gsm8k_test.jsonl"), "--engine", "local", "--verify"],
        "contamination-shared": ["contamination", "--train", str(s / "webdataset" / "testgz.tar"),
                                 str(data / "shakespeare.parquet"), str(s / "benchmarks" / "gsm8k_test.jsonl"),
                                 "--benchmark", f"gsm8k={s / 'benchmarks' / 'gsm8k_test.jsonl'}",
                                 "--benchmark", f"arc={s / 'benchmarks' / 'arc_challenge_test.jsonl'}",
                                 "--engine", "local", "--decontaminate-train"],
        "tokenizer-drift": ["tokenizer-drift", str(s / "tokenizers" / "llama-test-tokenizer.json"),
                            str(s / "tokenizers" / "gpt-neo-test-tokenizer.json"),
                            "--sample", str(s / "benchmarks" / "gsm8k_test.jsonl"), "--max-texts", "500"],
    }


def _stable(doc):
    if isinstance(doc, dict):
        return {k: _stable(v) for k, v in doc.items() if k not in VOLATILE}
    if isinstance(doc, list):
        return [_stable(v) for v in doc]
    return doc


def _canonical(path: Path, root: Path):
    if path.suffix == ".json":
        doc = json.loads(path.read_text())
        return _stable(doc)
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        t = pq.read_table(path)
        return {"schema": t.schema.to_string(show_schema_metadata=False), "rows": t.to_pylist()}
    if path.suffix == ".jsonl":
        return path.read_text()
    return None   # HTML pages show `run` (timings): compared through the JSON they are rendered from


def digest(out: Path) -> None:
    if not SHARED.is_dir():
        sys.exit(f"shared data not found: {SHARED} (set DATAAUDIT_SHARED_DATA)")
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        fixtures = tmp / "fixtures"
        subprocess.run([sys.executable, "-m", "fixtures.generate", str(fixtures)], check=True, capture_output=True)
        _shakespeare_parquet(tmp / "shakespeare.parquet")
        result = {}
        for name, args in _jobs(tmp, fixtures, Path("fixtures/audit.toml").resolve()).items():
            job_out = tmp / "out" / name
            proc = subprocess.run([sys.executable, "-m", "dataaudit.cli", *args, "--out", str(job_out)],
                                  capture_output=True, text=True)
            files = {}
            for f in sorted(job_out.rglob("*")):
                if f.is_file() and "parts" not in f.relative_to(job_out).parts:
                    c = _canonical(f, tmp)
                    if c is not None:
                        files[str(f.relative_to(job_out))] = c
            # Paths inside outputs name the temp folder: make them relative so two digests compare.
            text = json.dumps({"exit": proc.returncode, "files": files}, sort_keys=True, default=str)
            result[name] = json.loads(text.replace(str(tmp), "<tmp>"))
            print(f"{name}: exit {proc.returncode}, {len(files)} files", file=sys.stderr)
    Path(out).write_text(json.dumps(result, sort_keys=True, indent=1))


def _diff(a, b, where: str, out: list[str], limit: int = 20) -> None:
    if len(out) >= limit or a == b:
        return
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                out.append(f"{where}/{k}: only in {'after' if k in b else 'before'}")
            else:
                _diff(a[k], b[k], f"{where}/{k}", out, limit)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            _diff(x, y, f"{where}[{i}]", out, limit)
    else:
        out.append(f"{where}: {json.dumps(a, default=str)[:200]} != {json.dumps(b, default=str)[:200]}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, help="write the digest of this checkout's outputs here")
    ap.add_argument("--compare", nargs=2, type=Path, metavar=("BEFORE", "AFTER"))
    args = ap.parse_args()
    if args.compare:
        a, b = (json.loads(p.read_text()) for p in args.compare)
        diffs: list[str] = []
        _diff(a, b, "", diffs)
        for d in diffs:
            print(d)
        n_files = sum(len(j["files"]) for j in a.values())
        print(f"{'identical' if not diffs else 'DIFFERENT'}: {len(a)} jobs, {n_files} output files")
        return 1 if diffs else 0
    if not args.out:
        ap.error("--out or --compare is required")
    digest(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
