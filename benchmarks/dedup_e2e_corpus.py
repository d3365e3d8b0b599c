"""The corpus of benchmarks/dedup_end_to_end.py: real-ish documents with planted exact and near copies.

Text: the lines of ../shared/data/corpora/tinyshakespeare.txt and of the Python sources (code, comments,
docstrings) of the standard library and of a few installed packages (numpy, scipy, pandas, pyarrow, rich,
click), files read in sorted order, lines stripped, shorter than 16 characters or repeated dropped, up to
--pool-mb MB. A document is random lines of that pool joined by newlines, ~180-1800 bytes (log-uniform; 700
on average), so unrelated documents share a few shingles (common code lines) as real corpora do.

Planted (the ground truth, as (copy, original) document indices):
- exact copies (4%): the same text, half of them in upper case or with other whitespace (equal after
  normalization);
- near copies (8%): 2-8% of the words replaced, deleted or inserted in 1-3 runs (word 5-gram Jaccard to the
  original between ~0.7 and ~0.95: on both sides of the default threshold 0.8).

Same arguments and same installed sources -> the same corpus; `pool_digest` names the text pool used.
"""
from __future__ import annotations

import hashlib
import json
import sys
import sysconfig
from pathlib import Path

import numpy as np

PACKAGES = ("numpy", "scipy", "pandas", "pyarrow", "rich", "click")
SHAKESPEARE = "corpora/tinyshakespeare.txt"


def _source_files() -> list[Path]:
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    site = Path(sysconfig.get_paths()["purelib"])
    files = sorted(p for p in stdlib.rglob("*.py") if "test" not in p.parts and "site-packages" not in p.parts)
    for pkg in PACKAGES:
        files += sorted((site / pkg).rglob("*.py"))
    return files


def text_pool(shared_data: Path, pool_mb: float) -> tuple[list[str], str]:
    """(unique lines, digest of the pool)."""
    budget = int(pool_mb * 1e6)
    seen: dict[str, None] = {}
    size = 0
    sources = [shared_data / SHAKESPEARE] + _source_files()
    for f in sources:
        try:
            text = f.read_text("utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        for line in text.splitlines():
            line = line.strip()
            if len(line) >= 16 and line not in seen:
                seen[line] = None
                size += len(line) + 1
        if size >= budget:
            break
    lines = list(seen)
    digest = hashlib.sha256("\n".join(lines).encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return lines, digest


def _edit(rng: np.random.Generator, words: list[str], frac: float, donor: list[str]) -> list[str]:
    total = max(1, int(round(frac * len(words))))
    runs = int(min(rng.integers(1, 4), total))
    for size in np.diff(np.linspace(0, total, runs + 1).astype(int)).tolist():
        op = rng.choice(3, p=[0.6, 0.2, 0.2])
        start = int(rng.integers(0, max(1, len(words) - size)))
        at = int(rng.integers(0, max(1, len(donor) - size)))
        new = donor[at:at + size]
        if op == 0:
            words[start:start + size] = new
        elif op == 1:
            del words[start:start + size]
        else:
            words[start:start] = new
    return words


def _vary(rng: np.random.Generator, text: str) -> str:
    return text.upper() if rng.random() < 0.5 else "  " + text.replace("\n", " \n\t") + "\n"


def build(n_docs: int, shared_data: Path, seed: int = 0, pool_mb: float = 48.0, exact_frac: float = 0.04,
          near_frac: float = 0.08) -> dict:
    """{"texts": list[str], "origin": int64 (original of a planted copy, else -1), "kind": list, ...}."""
    lines, digest = text_pool(shared_data, pool_mb)
    rng = np.random.default_rng(seed)
    mean_line = float(np.mean([len(s) for s in lines])) + 1
    n_exact, n_near = int(exact_frac * n_docs), int(near_frac * n_docs)
    n_base = n_docs - n_exact - n_near
    target = np.exp(rng.uniform(np.log(180), np.log(1800), n_base))
    k = np.maximum(1, np.round(target / mean_line)).astype(np.int64)
    ids = rng.integers(0, len(lines), int(k.sum())).tolist()
    texts: list[str] = []
    pos = 0
    for c in k.tolist():
        texts.append("\n".join([lines[i] for i in ids[pos:pos + c]]))
        pos += c
    kind = ["unique"] * n_base
    origin = [-1] * n_base
    originals = rng.choice(n_base, size=max(1, (n_exact + n_near) // 2), replace=False)
    pick = originals[rng.integers(0, len(originals), n_exact + n_near)].tolist()
    for j, o in enumerate(pick):
        kind[o] = "original"
        if j < n_exact:
            texts.append(texts[o] if rng.random() < 0.5 else _vary(rng, texts[o]))
            kind.append("exact")
        else:
            donor = lines[int(rng.integers(0, len(lines)))].split()
            donor = (donor * (1 + 64 // max(1, len(donor))))[:64]
            words = _edit(rng, texts[o].split(" "), float(rng.uniform(0.02, 0.08)), donor)
            texts.append(" ".join(words))
            kind.append("near")
        origin.append(o)
    perm = rng.permutation(n_docs)
    inv = np.empty_like(perm)
    inv[perm] = np.arange(n_docs)
    origin_arr = np.asarray(origin, np.int64)[perm]
    origin_arr = np.where(origin_arr >= 0, inv[np.maximum(origin_arr, 0)], -1)
    return {"texts": [texts[i] for i in perm.tolist()], "origin": origin_arr, "kind": [kind[i] for i in perm.tolist()],
            "pool_lines": len(lines), "pool_digest": digest}


def write(corpus: dict, out: Path, shard_docs: int) -> list[Path]:
    """Parquet shards `train-NNNNN.parquet` of shard_docs documents (column `text`), and manifest.json."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    out.mkdir(parents=True, exist_ok=True)
    texts = corpus["texts"]
    paths = []
    for s, lo in enumerate(range(0, len(texts), shard_docs)):
        p = out / f"train-{s:05d}.parquet"
        pq.write_table(pa.table({"text": pa.array(texts[lo:lo + shard_docs], pa.large_string()).cast(pa.string())}),
                       p, row_group_size=8192)
        paths.append(p)
    (out / "manifest.json").write_text(json.dumps({
        "documents": len(texts), "text_bytes": sum(len(t.encode("utf-8", "surrogatepass")) for t in texts),
        "shard_docs": shard_docs, "pool_lines": corpus["pool_lines"], "pool_digest": corpus["pool_digest"],
        "origin": corpus["origin"].tolist(), "kind": corpus["kind"]}))
    return paths


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    c = build(n, Path(__file__).resolve().parents[2] / "shared" / "data")
    print(c["pool_lines"], c["pool_digest"], sum(map(len, c["texts"])) / n)
