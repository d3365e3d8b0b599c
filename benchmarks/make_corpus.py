#!/usr/bin/env python
"""Deterministic generator of a Parquet text corpus for the benchmarks.

Documents are English-like prose: words drawn with Zipf-like frequencies from a vocabulary of a few thousand
words (~170 real English function/common words at the top ranks, then generated syllable words, a few
accented words), grouped into sentences (capitalised, ". ", "? ", ", "), paragraphs ("\\n\\n" / "\\n") and
documents of ~200-4000 characters (log-uniform). Generation is vectorised: a chunk of documents is a single
numpy gather from a table of byte "pieces" (words, capitalised words, separators) into one UTF-8 buffer that
becomes an Arrow string array without copying.

About 2% of the documents (--garbage-frac) are replaced by planted garbage so that the text checks have
something to find: control characters, base64 runs, repeated boilerplate lines, mojibake, symbol soup
(non-text) and empty/whitespace-only text. Which rows were planted (shard, row, kind) is written to
`manifest.json` next to the shards (not a shard format, so `dataaudit audit DIR` ignores it).

The output is a pure function of the arguments (same --seed/--mb/--shard-mb/--row-group-rows -> byte-identical
text). Sizes are MB of UTF-8 text (uncompressed), 1 MB = 10**6 bytes.

    .venv/bin/python benchmarks/make_corpus.py --mb 200 --out bench-data/corpus-200mb
"""
from __future__ import annotations

import argparse
import base64
import json
import os
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

GENERATOR_VERSION = 1

# Real English words at the top of the Zipf ranking (so stop words / function words dominate as in prose).
_COMMON = """the of and to a in is that for it as was with be by on not he this are or his from at which but
have an they you were her she there been one all we their has would when if so no will more can out who what
up some about them into only other time could than its then these two may first any new like our most over
such very made after also did many before must through back years where much your way well down should
because each just those people how too little state good very make world still own see men work long get here
between both life being under never day same another know while last might us great old year off come since
against go came right used take three states himself few house use during without again place american
around however home small found thought went say part once general high upon school every does got united left
number course war until always away something fact though water less public put think almost hand enough far
took head yet government system better set told nothing night end why called didn eyes find going look asked
later knew point next city give group toward young days let room president side social given present several
order national possible rather second face per among form important often things looked early white case john
become large need big four within felt children along saw best church ever least power development light
thing seemed family interest want members others mind country area done turned although open god service""".split()
# A few non-ASCII words (rare), so that genuine accented text is present and the mojibake check sees negatives.
_ACCENTED = ["café", "naïve", "résumé", "façade", "über", "déjà", "rôle", "élan", "São", "Zürich"]
_ONSETS = ["b", "c", "d", "f", "g", "h", "j", "k", "l", "m", "n", "p", "r", "s", "t", "v", "w", "z", "br",
           "ch", "cl", "cr", "dr", "fl", "gr", "pl", "pr", "sh", "sl", "st", "str", "th", "tr", "", ""]
_VOWELS = ["a", "e", "i", "o", "u", "ea", "ou", "ai", "io", "ee", "y"]
_CODAS = ["", "", "", "n", "r", "s", "t", "l", "nd", "st", "ng", "ck", "m", "rt", "x", "nt"]
_SUFFIXES = ["", "", "", "", "s", "ed", "ing", "ly", "er", "tion", "ment", "ness", "able"]

# Separator pieces after a word. Index order matters (see _build_chunk).
_SEP_SPACE, _SEP_COMMA, _SEP_DOT, _SEP_Q, _SEP_EXCL, _SEP_DOT_NL, _SEP_DOT_PARA, _SEP_DASH, _SEP_END = range(9)
_SEPS = [" ", ", ", ". ", "? ", "! ", ".\n", ".\n\n", " \u2014 ", "."]

GARBAGE_KINDS = ("control_chars", "base64_run", "repeated_lines", "mojibake", "non_text", "empty")
_GARBAGE_WEIGHTS = np.array([0.2, 0.2, 0.2, 0.2, 0.12, 0.08])
_CTRL_CHARS = [chr(c) for c in list(range(0x00, 0x09)) + list(range(0x0E, 0x20)) + [0x7F]]
_BOILERPLATE = ["Click here to subscribe to our newsletter and never miss an update!",
                "Copyright 2024 All rights reserved. Terms of use | Privacy policy",
                "Share this article on Facebook Twitter LinkedIn Email",
                "Add to cart - Free shipping on orders over $50",
                "Loading comments... Please enable JavaScript to view the comments."]
_SYMBOLS = list("═║╔╗╚╝╬─│┼┤├▲▼◆●■□★☆♦♣♠♥→←↑↓⇒≈≠≤≥±×÷∞∑√∫$+<=>^`|~©®°") + ["😀", "🔥", "👍", "🚀", "💯"]
# byte -> character under CP1252, falling back to Latin-1 for the 5 bytes CP1252 leaves undefined
_CP1252 = [bytes([b]).decode("cp1252", errors="ignore") or chr(b) for b in range(256)]


def _vocabulary(rng: np.random.Generator, size: int) -> list[str]:
    words: list[str] = []
    seen: set[str] = set()
    for w in _COMMON:
        if w not in seen:
            seen.add(w)
            words.append(w)
    target = size - len(_ACCENTED)
    while len(words) < target:
        n_syl = int(rng.choice([1, 1, 2, 2, 2, 3]))
        w = "".join(_ONSETS[rng.integers(len(_ONSETS))] + _VOWELS[rng.integers(len(_VOWELS))]
                    + _CODAS[rng.integers(len(_CODAS))] for _ in range(n_syl))
        w += _SUFFIXES[rng.integers(len(_SUFFIXES))]
        if 1 < len(w) <= 16 and w not in seen:
            seen.add(w)
            words.append(w)
    # accented words go at spread-out mid/low ranks
    for j, w in enumerate(_ACCENTED):
        words.insert(400 + j * (len(words) - 400) // len(_ACCENTED), w)
    return words


class PieceTable:
    """Every piece a document is assembled from, as a fixed-width byte matrix (one row per piece)."""

    def __init__(self, vocab: list[str]):
        self.n_words = len(vocab)
        pieces = vocab + [w[:1].upper() + w[1:] for w in vocab] + _SEPS
        enc = [p.encode("utf-8") for p in pieces]
        self.lengths = np.array([len(b) for b in enc], dtype=np.int64)
        width = int(self.lengths.max())
        self.matrix = np.zeros((len(enc), width), dtype=np.uint8)
        for i, b in enumerate(enc):
            self.matrix[i, :len(b)] = np.frombuffer(b, dtype=np.uint8)
        self.valid = np.arange(width)[None, :] < self.lengths[:, None]
        self.sep0 = 2 * self.n_words


def _gather(table: PieceTable, piece_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Concatenate pieces -> (bytes, cumulative end offset of every piece)."""
    ends = np.cumsum(table.lengths[piece_ids])
    out = table.matrix[piece_ids][table.valid[piece_ids]]     # row-major boolean compress keeps the order
    return out, ends


def _build_chunk(rng: np.random.Generator, table: PieceTable, lookup: np.ndarray, n_docs: int,
                 min_chars: int, max_chars: int) -> pa.Array:
    """n_docs clean prose documents as a pa.StringArray."""
    # document lengths in words (log-uniform in chars; ~6.2 bytes per word+separator)
    chars = np.exp(rng.uniform(np.log(min_chars), np.log(max_chars), n_docs))
    words_per_doc = np.maximum(np.round(chars / 6.2).astype(np.int64), 5)
    n = int(words_per_doc.sum())
    doc_end = np.cumsum(words_per_doc)                      # index one past the last word of every doc
    last = np.zeros(n, dtype=bool)
    last[doc_end - 1] = True
    first = np.zeros(n, dtype=bool)
    first[doc_end - words_per_doc] = True

    word = lookup[rng.integers(0, len(lookup), n)].astype(np.int64)

    u = rng.random(n)
    sep = np.full(n, _SEP_SPACE, dtype=np.int64)
    sent_end = u < 1 / 15
    sep[(u >= 1 / 15) & (u < 1 / 15 + 0.05)] = _SEP_COMMA
    sep[(u >= 0.1167) & (u < 0.1177)] = _SEP_DASH
    v = rng.random(n)
    sep[sent_end] = _SEP_DOT
    sep[sent_end & (v < 0.04)] = _SEP_Q
    sep[sent_end & (v >= 0.04) & (v < 0.05)] = _SEP_EXCL
    sep[sent_end & (v >= 0.80) & (v < 0.86)] = _SEP_DOT_NL
    sep[sent_end & (v >= 0.86)] = _SEP_DOT_PARA
    sep[last] = _SEP_END
    sent_end |= last

    # capitalise the first word of every sentence and document
    cap = first.copy()
    cap[1:] |= sent_end[:-1]
    word[cap] += table.n_words

    pieces = np.empty(2 * n, dtype=np.int64)
    pieces[0::2] = word
    pieces[1::2] = sep + table.sep0
    data, ends = _gather(table, pieces)
    offsets = np.concatenate(([0], ends[1::2][doc_end - 1]))
    if offsets[-1] >= 2**31:
        raise ValueError("chunk exceeds 2 GiB of text: lower --row-group-rows")
    return pa.StringArray.from_buffers(n_docs, pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(data))


def _garbage(rng: np.random.Generator, kind: str, text: str) -> str:
    if kind == "control_chars":
        s = list(text)
        for _ in range(int(rng.integers(3, 20))):
            s.insert(int(rng.integers(len(s) + 1)), _CTRL_CHARS[rng.integers(len(_CTRL_CHARS))])
        return "".join(s)
    if kind == "base64_run":
        raw = rng.integers(0, 256, int(rng.integers(300, 3000)), dtype=np.uint8).tobytes()
        run = base64.b64encode(raw).decode("ascii")
        cut = text.find(" ", int(rng.integers(len(text) + 1)))
        cut = len(text) if cut < 0 else cut
        return text[:cut] + " " + run + text[cut:]
    if kind == "repeated_lines":
        line = _BOILERPLATE[rng.integers(len(_BOILERPLATE))]
        head = text[: int(rng.integers(50, 400))]
        return head + "\n" + "\n".join([line] * int(rng.integers(8, 40))) + "\n"
    if kind == "mojibake":
        words = text.split(" ")
        for _ in range(int(rng.integers(3, 12))):
            i = int(rng.integers(len(words)))
            words[i] = ["\u201c" + words[i] + "\u201d", words[i] + "\u2019s", "caf\u00e9", "na\u00efve",
                        "\u2014", "r\u00e9sum\u00e9", "\u2026"][rng.integers(7)]
        good = " ".join(words)
        return "".join(_CP1252[b] for b in good.encode("utf-8"))
    if kind == "non_text":
        k = int(rng.integers(200, 1500))
        sym = rng.integers(len(_SYMBOLS), size=k)
        s = "".join(_SYMBOLS[j] if (j % 7) else _SYMBOLS[j] + "\n" for j in sym)
        return text[: int(rng.integers(0, 120))] + s
    if kind == "empty":
        return ["", " ", "\n\n", "\t \u00a0 "][rng.integers(4)]
    raise ValueError(kind)


def _plant(rng: np.random.Generator, arr: pa.Array, frac: float) -> tuple[pa.Array, list[tuple[int, str]]]:
    n = len(arr)
    rows = np.flatnonzero(rng.random(n) < frac)
    if rows.size == 0:
        return arr, []
    kinds = rng.choice(len(GARBAGE_KINDS), size=rows.size, p=_GARBAGE_WEIGHTS / _GARBAGE_WEIGHTS.sum())
    originals = arr.take(pa.array(rows)).to_pylist()
    replaced = [_garbage(rng, GARBAGE_KINDS[k], t) for k, t in zip(kinds, originals)]
    mask = np.zeros(n, dtype=bool)
    mask[rows] = True
    out = pc.replace_with_mask(arr, pa.array(mask), pa.array(replaced, type=pa.string()))
    return out, [(int(r), GARBAGE_KINDS[k]) for r, k in zip(rows, kinds)]


def corpus_params(args) -> dict:
    return {"generator_version": GENERATOR_VERSION, "mb": args.mb, "seed": args.seed, "shard_mb": args.shard_mb,
            "row_group_rows": args.row_group_rows, "vocab": args.vocab, "zipf_s": args.zipf_s,
            "min_chars": args.min_chars, "max_chars": args.max_chars, "garbage_frac": args.garbage_frac,
            "compression": args.compression}


def generate(args, log=print) -> dict:
    out = Path(args.out)
    params = corpus_params(args)
    manifest_path = out / "manifest.json"
    if manifest_path.exists() and not args.force:
        try:
            old = json.loads(manifest_path.read_text())
        except ValueError:
            old = {}
        if old.get("params") == params and all((out / s["file"]).exists() for s in old.get("shards", [])):
            log(f"make_corpus: reusing {out} ({old['rows']} rows, {old['text_bytes'] / 1e6:.1f} MB text)")
            return old
    if out.exists():
        for p in out.glob("shard-*.parquet"):
            p.unlink()
        if manifest_path.exists():
            manifest_path.unlink()
    out.mkdir(parents=True, exist_ok=True)

    t0 = time.perf_counter()
    root = np.random.SeedSequence(args.seed)
    vocab = _vocabulary(np.random.default_rng(root.spawn(1)[0]), args.vocab)
    table = PieceTable(vocab)
    ranks = np.arange(1, table.n_words + 1, dtype=np.float64)
    weights = 1.0 / (ranks + 2.7) ** args.zipf_s
    cdf = np.cumsum(weights / weights.sum())
    # inverse-CDF lookup table: word id for each of 2**22 equally likely slots (resolution 2.4e-7 << the
    # rarest word's probability), much faster to sample than searchsorted
    lookup = np.minimum(np.searchsorted(cdf, (np.arange(1 << 22) + 0.5) / (1 << 22), side="right"),
                        table.n_words - 1).astype(np.int32)

    target = int(args.mb * 1e6)
    shard_target = int(args.shard_mb * 1e6)
    schema = pa.schema([("text", pa.string())])
    total_bytes = total_rows = 0
    shards: list[dict] = []
    planted: list[dict] = []
    writer = None
    shard_bytes = shard_rows = 0
    chunk = 0
    while total_bytes < target:
        # every chunk (= one row group) has its own stream: output doesn't depend on anything but the args
        rng = np.random.default_rng(np.random.SeedSequence([args.seed, 1, chunk]))
        n_docs = args.row_group_rows
        arr = _build_chunk(rng, table, lookup, n_docs, args.min_chars, args.max_chars)
        arr, planted_rows = _plant(rng, arr, args.garbage_frac)
        remaining = target - total_bytes
        lens = np.asarray(pc.fill_null(pc.binary_length(arr), 0).to_numpy(zero_copy_only=False), dtype=np.int64)
        ends = np.cumsum(lens)
        nbytes = int(ends[-1])
        if nbytes > remaining:                    # last chunk: trim to the requested size
            keep = max(int(np.searchsorted(ends, remaining, side="left")) + 1, 1)
            arr = arr.slice(0, keep)
            planted_rows = [(r, k) for r, k in planted_rows if r < keep]
            nbytes = int(ends[keep - 1])
        if writer is None:
            name = f"shard-{len(shards):05d}.parquet"
            writer = pq.ParquetWriter(out / name, schema, compression=args.compression)
            shards.append({"file": name, "rows": 0, "text_bytes": 0})
        writer.write_table(pa.Table.from_arrays([arr], schema=schema), row_group_size=len(arr))
        for r, k in planted_rows:
            planted.append({"shard": shards[-1]["file"], "row": shard_rows + r, "kind": k})
        shard_rows += len(arr)
        shard_bytes += nbytes
        total_rows += len(arr)
        total_bytes += nbytes
        shards[-1]["rows"], shards[-1]["text_bytes"] = shard_rows, shard_bytes
        chunk += 1
        if shard_bytes >= shard_target or total_bytes >= target:
            writer.close()
            writer = None
            shard_bytes = shard_rows = 0
    if writer is not None:
        writer.close()
    for s in shards:
        s["file_bytes"] = (out / s["file"]).stat().st_size
    counts = {k: 0 for k in GARBAGE_KINDS}
    for p in planted:
        counts[p["kind"]] += 1
    manifest = {"params": params, "rows": total_rows, "text_bytes": total_bytes,
                "file_bytes": sum(s["file_bytes"] for s in shards), "shards": shards,
                "planted_counts": counts, "planted": planted}
    tmp = manifest_path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(manifest))
    os.replace(tmp, manifest_path)              # written last: its presence means the corpus is complete
    dt = time.perf_counter() - t0
    log(f"make_corpus: wrote {out}: {len(shards)} shards, {total_rows} rows, {total_bytes / 1e6:.1f} MB text, "
        f"{manifest['file_bytes'] / 1e6:.1f} MB on disk, {len(planted)} planted ({counts}) in {dt:.1f}s "
        f"({total_bytes / 1e6 / dt:.0f} MB/s)")
    return manifest


def add_corpus_args(ap: argparse.ArgumentParser, default_mb: float = 200.0) -> None:
    g = ap.add_argument_group("corpus")
    g.add_argument("--mb", type=float, default=default_mb, help="total MB (10^6 bytes) of UTF-8 text")
    g.add_argument("--seed", type=int, default=1234)
    g.add_argument("--shard-mb", type=float, default=64.0, help="MB of text per Parquet shard")
    g.add_argument("--row-group-rows", type=int, default=10_000, help="rows per Parquet row group")
    g.add_argument("--vocab", type=int, default=4000, help="vocabulary size")
    g.add_argument("--zipf-s", type=float, default=1.0, help="Zipf exponent of word frequencies")
    g.add_argument("--min-chars", type=int, default=200)
    g.add_argument("--max-chars", type=int, default=4000)
    g.add_argument("--garbage-frac", type=float, default=0.02, help="share of documents replaced by garbage")
    g.add_argument("--compression", default="snappy", help="Parquet compression codec")
    g.add_argument("--force", action="store_true", help="regenerate even if a matching corpus exists")


def default_corpus_dir(mb: float) -> str:
    return f"bench-data/corpus-{mb:g}mb"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=None, help="output folder (default bench-data/corpus-<mb>mb)")
    add_corpus_args(ap)
    args = ap.parse_args(argv)
    if args.mb <= 0 or args.shard_mb <= 0 or args.row_group_rows < 1:
        ap.error("--mb, --shard-mb and --row-group-rows must be positive")
    if args.out is None:
        args.out = default_corpus_dir(args.mb)
    try:
        generate(args)
    except Exception as exc:  # noqa: BLE001
        print(f"make_corpus: failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
