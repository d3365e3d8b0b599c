#!/usr/bin/env python
"""Writes a deterministic Parquet corpus of real text (`text` column, --mb MB of UTF-8) from files available
offline, for throughput benchmarks of the text checks and the audit.

Documents, by kind (shares of the bytes: --code-share, --zh-share, the rest English prose):
  code     Python/C/C++ sources (.py .c .h .cpp .pyx), each whole file up to 20,000 bytes (cut at a line end),
           from the site-packages of the interpreter running this script
  prose    English: 2,000-character pieces of tinyshakespeare, the GSM8K and ARC questions and answers, the
           WebDataset passages and the SFT turns of ../shared/data, and the docs (.md .rst .txt) of the
           installed packages
  zh       Chinese: the 300 tool-calling conversations of ../shared/data/chat/glaive_toolcall_zh_demo.json, one
           document per conversation (its turns joined by blank lines)
Every kind is cycled in a seeded shuffled order until its share of --mb is written (so documents repeat when
a kind has fewer bytes than its share; the text checks see each row on its own), then the kinds are
interleaved by a seeded shuffle. Same arguments and same installed files -> byte-identical shards.

    .venv/bin/python benchmarks/make_real_corpus.py --mb 100 --out bench-data/real-100mb
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import sys
import sysconfig
import tarfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

REPO = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("DATAAUDIT_SHARED_DATA", REPO.parent / "shared" / "data"))
CODE_EXT = (".py", ".c", ".h", ".cpp", ".pyx")
DOC_EXT = (".md", ".rst", ".txt")
MAX_DOC = 20_000


def _cut(text: str) -> str:
    if len(text.encode("utf-8")) <= MAX_DOC:
        return text
    head = text.encode("utf-8")[:MAX_DOC].decode("utf-8", errors="ignore")
    return head[: head.rfind("\n") + 1] or head


def _files(root: Path, exts) -> list[str]:
    out = []
    for p in sorted(root.rglob("*")):
        if p.suffix in exts and p.is_file():
            try:
                text = p.read_text(encoding="utf-8")
            except (UnicodeDecodeError, OSError):
                continue
            if len(text) >= 200:
                out.append(_cut(text))
    return out


def sources(shared: Path) -> dict[str, list[str]]:
    site = Path(sysconfig.get_paths()["purelib"])
    docs = {"code": _files(site, CODE_EXT), "prose": _files(site, DOC_EXT), "zh": []}
    if not shared.is_dir():
        raise SystemExit(f"make_real_corpus: {shared} not found (the real texts of ../shared/data)")
    raw = (shared / "corpora" / "tinyshakespeare.txt").read_text(encoding="utf-8")
    docs["prose"] += [raw[i:i + 2000] for i in range(0, len(raw), 2000)]
    for line in (shared / "benchmarks" / "gsm8k_test.jsonl").read_text(encoding="utf-8").splitlines():
        if line.strip():
            r = json.loads(line)
            docs["prose"].append(r["question"] + "\n\n" + r["answer"])
    for line in (shared / "benchmarks" / "arc_challenge_test.jsonl").read_text(encoding="utf-8").splitlines():
        if line.strip():
            q = json.loads(line)["question"]
            docs["prose"].append(q["stem"] + "\n" + "\n".join(c["text"] for c in q["choices"]))
    with tarfile.open(shared / "webdataset" / "testgz.tar") as tar:
        docs["prose"] += [gzip.decompress(tar.extractfile(m).read()).decode("utf-8")
                          for m in tar.getmembers() if m.name.endswith(".txt.gz")]
    for line in (shared / "chat" / "v1_sft_demo.jsonl").read_text(encoding="utf-8").splitlines():
        if line.strip():
            docs["prose"] += [p["value"] for m in json.loads(line)["messages"] for p in m["content"]
                              if isinstance(p.get("value"), str) and p["value"].strip()]
    glaive = json.loads((shared / "chat" / "glaive_toolcall_zh_demo.json").read_text(encoding="utf-8"))
    docs["zh"] = ["\n\n".join(t["value"] for t in r["conversations"]) for r in glaive]
    return docs


def _turn_texts(value) -> list[str]:
    """The text of one turn: a string, or the text parts of a content list."""
    if isinstance(value, str):
        return [value] if value.strip() else []
    if isinstance(value, list):
        return [p.get("value") or p.get("text") for p in value if isinstance(p, dict)
                and isinstance(p.get("value") or p.get("text"), str) and (p.get("value") or p.get("text")).strip()]
    return []


def short_sources(shared: Path) -> list[str]:
    """Short real records, as chat and instruction data has them: every turn of the chat and post-training files of
    ../shared/data (system prompts, questions, replies, chosen / rejected), GSM8K questions and answers apart, ARC
    stems, and tinyshakespeare cut at blank lines (one speech each)."""
    if not shared.is_dir():
        raise SystemExit(f"make_real_corpus: {shared} not found (the real texts of ../shared/data)")
    out = [p.strip() for p in (shared / "corpora" / "tinyshakespeare.txt").read_text(encoding="utf-8").split("\n\n")
           if p.strip()]
    for line in (shared / "benchmarks" / "gsm8k_test.jsonl").read_text(encoding="utf-8").splitlines():
        if line.strip():
            r = json.loads(line)
            out += [r["question"], r["answer"]]
    for line in (shared / "benchmarks" / "arc_challenge_test.jsonl").read_text(encoding="utf-8").splitlines():
        if line.strip():
            out.append(json.loads(line)["question"]["stem"])

    def turns(record):
        for key in ("messages", "conversations", "chosen_messages", "rejected_messages"):
            for m in record.get(key) or []:
                out.extend(_turn_texts(m.get("content", m.get("value"))))
        for key in ("chosen", "rejected"):
            if isinstance(record.get(key), dict):
                out.extend(_turn_texts(record[key].get("value")))
        for key in ("instruction", "input", "output"):
            out.extend(_turn_texts(record.get(key)))

    for folder, names in (("chat", ("v1_sft_demo.jsonl", "glaive_toolcall_zh_demo.json")),
                          ("posttrain", ("dpo_en_demo.json", "kto_en_demo.json", "identity.json",
                                         "reason_tool_use_demo_50.jsonl", "v1_dpo_demo.jsonl"))):
        for name in names:
            text = (shared / folder / name).read_text(encoding="utf-8")
            records = json.loads(text) if name.endswith(".json") else \
                [json.loads(line) for line in text.splitlines() if line.strip()]
            for r in records:
                turns(r)
    return out


def _fill(rng: np.random.Generator, docs: list[str], target: int) -> list[str]:
    out, total = [], 0
    sizes = [len(d.encode("utf-8")) for d in docs]
    while total < target:
        for i in rng.permutation(len(docs)):
            out.append(docs[i])
            total += sizes[i]
            if total >= target:
                break
    return out


def build_rows(args) -> tuple[list[str], list[str], dict[str, list[str]]]:
    """(rows, the kind of each source, the documents of each kind) of the corpus `args` describes, in their final
    order (the shards hold them in this order); nothing written."""
    target = int(args.mb * 1e6)
    if args.short:   # one kind: short records
        docs = {"short": short_sources(Path(args.shared))}
        shares = {"short": 1.0}
    else:
        docs = sources(Path(args.shared))
        shares = {"code": args.code_share, "zh": args.zh_share, "prose": 1.0 - args.code_share - args.zh_share}
    rng = np.random.default_rng(args.seed)
    rows, kinds = [], []
    for kind in shares:
        picked = _fill(rng, docs[kind], int(target * shares[kind])) if shares[kind] > 0 else []
        rows += picked
        kinds += [kind] * len(picked)
    order = rng.permutation(len(rows))
    return [rows[i] for i in order], [kinds[i] for i in order], {k: docs[k] for k in shares}


def generate(args) -> dict:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows, kinds, docs = build_rows(args)
    composition = {k: {"rows": 0, "bytes": 0, "distinct_docs": len(docs[k])} for k in docs}
    for k, d in zip(kinds, rows):
        composition[k]["rows"] += 1
        composition[k]["bytes"] += len(d.encode("utf-8"))
    for p in out.glob("shard-*.parquet"):
        p.unlink()
    shards, per = [], max(1, int(args.rows_per_shard))
    for s in range(0, len(rows), per):
        name = f"shard-{len(shards):05d}.parquet"
        table = pa.table({"text": pa.array(rows[s:s + per], pa.string())})
        pq.write_table(table, out / name, row_group_size=args.row_group_rows)
        shards.append({"file": name, "rows": table.num_rows})
    text_bytes = sum(c["bytes"] for c in composition.values())
    lengths = np.sort([len(r.encode("utf-8")) for r in rows]) if rows else np.zeros(1)
    manifest = {"params": {"mb": args.mb, "seed": args.seed, "code_share": args.code_share,
                           "zh_share": args.zh_share, "short": args.short}, "rows": len(rows),
                "text_bytes": text_bytes, "median_record_bytes": int(lengths[len(lengths) // 2]),
                "composition": composition, "shards": shards}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1))
    print(f"make_real_corpus: wrote {out}: {len(rows)} rows (median {manifest['median_record_bytes']} bytes), "
          f"{text_bytes / 1e6:.1f} MB text in {len(shards)} "
          f"shards; " + ", ".join(f"{k} {c['bytes'] / 1e6:.1f} MB ({c['rows']} rows from {c['distinct_docs']} "
                                  f"documents)" for k, c in composition.items()))
    return manifest


def parser() -> argparse.ArgumentParser:
    """The options (and their defaults: other benchmarks build the same corpora with `parser().parse_args([...])`)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=None, help="output folder (default bench-data/real-<mb>mb)")
    ap.add_argument("--mb", type=float, default=100.0, help="total MB (10^6 bytes) of UTF-8 text")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--code-share", type=float, default=0.4)
    ap.add_argument("--zh-share", type=float, default=0.2)
    ap.add_argument("--rows-per-shard", type=int, default=20_000)
    ap.add_argument("--row-group-rows", type=int, default=5_000)
    ap.add_argument("--shared", default=str(SHARED), help="the real data folder (../shared/data)")
    ap.add_argument("--short", action="store_true",
                    help="short records only (chat turns, instructions, questions, speeches: see short_sources)")
    return ap


def main(argv=None) -> int:
    ap = parser()
    args = ap.parse_args(argv)
    if args.mb <= 0 or not (0 <= args.code_share and 0 <= args.zh_share and args.code_share + args.zh_share <= 1):
        ap.error("--mb must be positive and the shares in [0, 1] with code + zh <= 1")
    args.out = args.out or f"bench-data/real-{'short-' if args.short else ''}{args.mb:g}mb"
    generate(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
