"""Digest of every command's outputs on the fixtures and the shared data, to show that a change of code kept
the outputs identical.

Runs `audit`, `dedup`, `dedup-images`, `contamination`, `clean` and `tokenizer-drift` of the checkout in the
current folder (as `python -m dataaudit.cli`, so the code of that checkout is what runs) and writes one JSON: for
each output file, its content with the `run` section (timings, host) left out, Parquet files as their rows, and the
SHA-256 of every file's bytes but JSON and HTML (which show `run`). `--engine ray` runs the jobs that take an engine
on Ray; `--corpus DIR` adds an audit, a dedup and a clean of the shards in DIR (e.g. the 100 MB corpus of
make_real_corpus.py). Two digests are compared with `--compare A B` (exit 1 and the first differences when they
differ):

    git worktree add /tmp/before <commit>
    (cd /tmp/before && python /path/to/benchmarks/output_digest.py --out /tmp/before.json)
    python benchmarks/output_digest.py --out /tmp/after.json
    python benchmarks/output_digest.py --compare /tmp/before.json /tmp/after.json
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

SHARED = Path(os.environ.get("DATAAUDIT_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
# Timing and host keys (`run`, the drift command's throughput): everything else must be identical between runs.
VOLATILE = {"run", "seconds", "texts_per_second", "mtime_ns"}   # mtime: of the fixtures generated anew


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


def _jobs(data: Path, fixtures: Path, config: Path, engine: str, corpus: Path | None) -> dict[str, list[str]]:
    """Each job's arguments (before --out); a job may name an earlier job's output folder as <out:NAME>."""
    s = SHARED
    chat, images = data / "chat", data / "images"
    image_shards = [str(images / d) for d in ("webdataset", "parquet_bytes", "parquet_hf", "jsonl_paths", "multimodal")]
    e = ["--engine", engine]
    jobs = {
        "audit-fixtures": ["audit", str(fixtures), "--config", str(config), *e],
        "audit-drift": ["audit", str(fixtures), "--config", str(_drift_config(data, config)), *e],
        "audit-chat": ["audit", str(chat), *e],
        "audit-images": ["audit", *image_shards, *e],
        "audit-shared": ["audit", str(s / "webdataset" / "testgz.tar"), str(s / "benchmarks" / "gsm8k_test.jsonl"),
                         str(s / "benchmarks" / "arc_challenge_test.jsonl"), str(s / "chat" / "v1_sft_demo.jsonl"),
                         str(s / "parquet-testing"), str(data / "shakespeare.parquet"), *e],
        "dedup-fixtures": ["dedup", str(fixtures), "--threshold", "0.5", *e],
        "dedup-shared": ["dedup", str(data / "shakespeare.parquet"), str(s / "webdataset" / "testgz.tar"),
                         "--against", str(s / "benchmarks" / "gsm8k_test.jsonl"), "--verify", *e],
        "dedup-images": ["dedup-images", *image_shards, *e],
        "contamination-shared": ["contamination", "--train", str(s / "webdataset" / "testgz.tar"),
                                 str(data / "shakespeare.parquet"), str(s / "benchmarks" / "gsm8k_test.jsonl"),
                                 "--benchmark", f"gsm8k={s / 'benchmarks' / 'gsm8k_test.jsonl'}",
                                 "--benchmark", f"arc={s / 'benchmarks' / 'arc_challenge_test.jsonl'}",
                                 "--decontaminate-train", *e],
        "clean-fixtures": ["clean", str(fixtures / "train-000.parquet"), str(fixtures / "train-001.parquet"),
                           str(fixtures / "images-000.tar"), str(fixtures / "captions-000.tar.gz"),
                           "--audit", "<out:audit-fixtures>", "--dedup", "<out:dedup-fixtures>",
                           "--severity", "warning", *e],
        "clean-images": ["clean", *image_shards, "--audit", "<out:audit-images>", "--dedup", "<out:dedup-images>",
                         "--severity", "warning", *e],
        "clean-chat": ["clean", str(chat), "--audit", "<out:audit-chat>", "--severity", "warning", *e],
        "clean-shared": ["clean", str(s / "webdataset" / "testgz.tar"), str(data / "shakespeare.parquet"),
                         str(s / "benchmarks" / "gsm8k_test.jsonl"), "--audit", "<out:audit-shared>",
                         "--contamination", "<out:contamination-shared>", "--severity", "warning", *e],
        "tokenizer-drift": ["tokenizer-drift", str(s / "tokenizers" / "llama-test-tokenizer.json"),
                            str(s / "tokenizers" / "gpt-neo-test-tokenizer.json"),
                            "--sample", str(s / "benchmarks" / "gsm8k_test.jsonl"), "--max-texts", "500"],
    }
    if corpus is not None:
        jobs["audit-corpus"] = ["audit", str(corpus), *e]
        jobs["dedup-corpus"] = ["dedup", str(corpus), *e]
        jobs["clean-corpus"] = ["clean", str(corpus), "--audit", "<out:audit-corpus>", "--dedup", "<out:dedup-corpus>",
                                "--severity", "warning", *e]
    return jobs


def _stable(doc):
    if isinstance(doc, dict):
        return {k: _stable(v) for k, v in doc.items() if k not in VOLATILE}
    if isinstance(doc, list):
        return [_stable(v) for v in doc]
    return doc


def _canonical(path: Path):
    if path.suffix == ".json":
        doc = json.loads(path.read_text())
        return _stable(doc)
    if path.suffix == ".html":
        return None   # HTML pages show `run` (timings): compared through the JSON they are rendered from
    out = {"sha256": hashlib.sha256(path.read_bytes()).hexdigest()}
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        t = pq.read_table(path)
        out.update(schema=t.schema.to_string(show_schema_metadata=False), num_rows=t.num_rows)
        if path.stat().st_size < 4 << 20:   # a cleaned corpus shard: its bytes' hash says enough
            out["rows"] = t.to_pylist()
    elif path.suffix == ".jsonl" and path.stat().st_size < 4 << 20:
        out["text"] = path.read_text(errors="replace")
    return out


def digest(out: Path, engine: str, corpus: Path | None) -> None:
    if not SHARED.is_dir():
        sys.exit(f"shared data not found: {SHARED} (set DATAAUDIT_SHARED_DATA)")
    # One fixed folder, so that the paths written into Parquet outputs (and so their bytes) are the same every run.
    tmp = Path(tempfile.gettempdir()) / "dataaudit-output-digest"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    try:
        fixtures = tmp / "fixtures"
        subprocess.run([sys.executable, "-m", "fixtures.generate", str(fixtures)], check=True, capture_output=True)
        data = tmp / "data"     # beside the outputs, not above them (clean refuses an --out inside an input folder)
        data.mkdir()
        _shakespeare_parquet(data / "shakespeare.parquet")
        for kind in ("chat", "images"):   # copied: their paths in the outputs must not name the checkout
            shutil.copytree(Path("fixtures") / kind, data / kind)
        result = {}
        jobs = _jobs(data, fixtures, Path("fixtures/audit.toml").resolve(), engine, corpus)
        for name, args in jobs.items():
            job_out = tmp / "out" / name
            args = [str(tmp / "out" / a[5:-1]) if a.startswith("<out:") else a for a in args]
            proc = subprocess.run([sys.executable, "-m", "dataaudit.cli", *args, "--out", str(job_out)],
                                  capture_output=True, text=True)
            files = {}
            for f in sorted(job_out.rglob("*")):
                if f.is_file() and not {"parts", "work"} & set(f.relative_to(job_out).parts):
                    c = _canonical(f)
                    if c is not None:
                        files[str(f.relative_to(job_out))] = c
            # Paths inside outputs name the temp folder: make them relative so two digests compare.
            text = json.dumps({"exit": proc.returncode, "files": files}, sort_keys=True, default=str)
            result[name] = json.loads(text.replace(str(tmp), "<tmp>"))
            tail = proc.stderr.strip().splitlines()[-1:] if proc.returncode > 1 else []
            print(f"{name}: exit {proc.returncode}, {len(files)} files {' '.join(tail)}", file=sys.stderr)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
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
    ap.add_argument("--engine", choices=("local", "ray"), default="local", help="engine of the jobs that take one")
    ap.add_argument("--corpus", type=Path, default=None, help="also audit, dedup and clean the shards in this folder")
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
    digest(args.out, args.engine, args.corpus.resolve() if args.corpus else None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
