#!/usr/bin/env python
"""MinHash signatures per core, end to end from text: dataaudit vs datasketch vs rensa; LSH agreement; recall.

Corpus: fixtures/dedup_corpus.py (--docs documents of ~1 KB, planted exact copies (5%) and near copies (8%,
5-10% of words edited in 1-3 places)), no empty documents. All three compute the same shingles: word
--ngram-grams of the NFC + lowercased + whitespace-collapsed text, --num-perm permutations, seed 1.

(a) dataaudit: `dataaudit.dedup.sign_batch` on Arrow batches of --batch-rows texts (normalize, shingle
    hashes, signatures, exact XXH3-128 hash: the whole per-shard stage minus reading the file).
(b) datasketch `MinHash(num_perm, scheme=...).update_batch([s.encode() ...])` per document (its default
    SHA-1 shingle hash), normalization and shingles built in Python; on the first --datasketch-docs docs.
(c) rensa `RMinHash(num_perm, seed).update(shingles)` + `digest()` per document, same Python shingles.

Agreement: the documents flagged as duplicates (in a cluster of >= 2) by `dataaudit dedup` (the real
pipeline on Parquet shards, no verification) vs by datasketch `MinHashLSH(threshold, num_perm)` (insert all,
then flagged = its query returns another document), both (i) on datasketch's own signatures (its hash
function: statistical agreement) and (ii) on our signatures (the same sketches: banding and clustering
alone; should be 100%). Recall: planted copies found in their original's cluster.

Everything runs in this process on one thread. rensa is installed by benchmarks/setup_dedup_bench.sh into
.bench-deps/ (not a project dependency).

    .venv/bin/python benchmarks/dedup_signatures.py --docs 50000 --threshold 0.5
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402

_common.single_core_env()

import argparse  # noqa: E402
import gc  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import unicodedata  # noqa: E402

import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402

sys.path.insert(0, str(_common.REPO))


def py_shingles(text: str, n: int) -> list[str]:
    words = unicodedata.normalize("NFC", text).lower().split()
    if not words:
        return []
    return [" ".join(words)] if len(words) < n else [" ".join(words[i:i + n]) for i in range(len(words) - n + 1)]


def run_ours(texts: list[str], spec, batch_rows: int, repeats: int):
    from dataaudit.dedup import sign_batch
    from dataaudit.dedup.minhash import backend
    from dataaudit.textops import normalize, word_ngram_hashes
    from dataaudit.dedup import signatures_u32
    batches = [pa.array(texts[i:i + batch_rows], pa.string()) for i in range(0, len(texts), batch_rows)]
    sign_batch(batches[0].slice(0, 10), spec)                       # JIT / caches warm
    best = None
    for _ in range(repeats):
        gc.collect()
        t0 = time.perf_counter()
        sigs = [sign_batch(b, spec)["sig"] for b in batches]
        dt = time.perf_counter() - t0
        best = dt if best is None else min(best, dt)
    # breakdown of one pass
    parts = {"normalize": 0.0, "shingle hashes": 0.0, "signatures": 0.0}
    for b in batches:
        t0 = time.perf_counter()
        norm = normalize(b, **spec.normalization())
        t1 = time.perf_counter()
        sh = word_ngram_hashes(norm, spec.ngram)
        t2 = time.perf_counter()
        signatures_u32(sh.hash, sh.offsets(), spec.num_perm, spec.seed)
        t3 = time.perf_counter()
        parts["normalize"] += t1 - t0
        parts["shingle hashes"] += t2 - t1
        parts["signatures"] += t3 - t2
    from dataaudit.dedup.signature_columns import signature_matrix
    sig = np.concatenate([signature_matrix(s) for s in sigs])
    return best, parts, sig, backend()


def run_datasketch(texts, n, num_perm, scheme):
    import datasketch
    t0 = time.perf_counter()
    out = []
    for t in texts:
        m = datasketch.MinHash(num_perm=num_perm, seed=1, scheme=scheme)
        m.update_batch([s.encode("utf-8") for s in py_shingles(t, n)])
        out.append(m)
    return time.perf_counter() - t0, out


def run_rensa(texts, n, num_perm):
    import rensa
    t0 = time.perf_counter()
    for t in texts:
        m = rensa.RMinHash(num_perm=num_perm, seed=1)
        m.update(py_shingles(t, n))
        m.digest()
    return time.perf_counter() - t0


def lsh_flags(minhashes, threshold, num_perm) -> np.ndarray:
    import datasketch
    lsh = datasketch.MinHashLSH(threshold=threshold, num_perm=num_perm)
    with lsh.insertion_session() as s:
        for i, m in enumerate(minhashes):
            s.insert(i, m, check_duplication=False)
    return np.array([len(lsh.query(m)) > 1 for m in minhashes]), (lsh.b, lsh.r)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--docs", type=int, default=50_000, help="documents in the generated corpus")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--ngram", type=int, default=5)
    ap.add_argument("--num-perm", type=int, default=128)
    ap.add_argument("--threshold", type=float, default=0.5,
                    help="LSH threshold for agreement and recall (planted near copies have Jaccard 0.67-0.9)")
    ap.add_argument("--batch-rows", type=int, default=4096)
    ap.add_argument("--repeats", type=int, default=3, help="passes of ours (best is reported)")
    ap.add_argument("--datasketch-docs", type=int, default=5000, help="documents timed for datasketch")
    ap.add_argument("--datasketch-scheme", default="legacy", choices=["legacy", "affine32"],
                    help="legacy: the same mod-(2^61-1) permutations as ours; affine32: datasketch 2.x default")
    ap.add_argument("--rensa-docs", type=int, default=None, help="documents timed for rensa (default: all)")
    ap.add_argument("--agree-docs", type=int, default=None,
                    help="documents for the MinHashLSH agreement with datasketch's own signatures (default: "
                         "all; this is the slow part: datasketch signs ~1-2k docs/s)")
    ap.add_argument("--bench-deps", default=str(_common.BENCH_DEPS))
    ap.add_argument("--json", default=None)
    ap.add_argument("--min-ratio", type=float, default=None, help="exit 3 if ours/datasketch is below this")
    args = ap.parse_args(argv)
    return _common.run_guarded("dedup_signatures", run, args)


def run(args) -> int:
    sys.path.insert(0, args.bench_deps)
    from dataaudit.dedup import DedupSpec
    from fixtures.dedup_corpus import make_corpus, write_corpus
    from dataaudit.pipelines.dedup import run_dedup
    from dataaudit.pipelines.engine import EngineOptions

    _common.single_core_libs()
    print(_common.machine_line())
    t0 = time.perf_counter()
    corpus = make_corpus(args.docs, seed=args.seed, empty_docs=0, one_word_docs=0)
    texts = corpus.texts
    mb = sum(len(t.encode()) for t in texts) / 1e6
    print(f"corpus: {len(texts)} documents, {mb:.1f} MB, {mb * 1e6 / len(texts):.0f} bytes/doc "
          f"(generated in {time.perf_counter() - t0:.1f} s)")
    spec = DedupSpec(ngram=args.ngram, num_perm=args.num_perm, threshold=args.threshold, batch_rows=args.batch_rows)

    ours_s, parts, our_sig, backend = run_ours(texts, spec, args.batch_rows, args.repeats)
    ours_rate = len(texts) / ours_s
    rows = [["dataaudit sign_batch (" + backend + ")", len(texts), f"{ours_s:.2f}", _common.human_rate(ours_rate), "1.00x"]]
    nd = min(args.datasketch_docs, len(texts))
    ds_s, _ = run_datasketch(texts[:nd], args.ngram, args.num_perm, args.datasketch_scheme)
    ds_rate = nd / ds_s
    rows.append([f"datasketch MinHash.update_batch ({args.datasketch_scheme})", nd, f"{ds_s:.2f}",
                 _common.human_rate(ds_rate), f"{ours_rate / ds_rate:.1f}x"])
    rensa_rate = None
    try:
        import rensa  # noqa: F401
        nr = min(args.rensa_docs or len(texts), len(texts))
        rs = run_rensa(texts[:nr], args.ngram, args.num_perm)
        rensa_rate = nr / rs
        rows.append(["rensa RMinHash.update + digest", nr, f"{rs:.2f}", _common.human_rate(rensa_rate),
                     f"{ours_rate / rensa_rate:.2f}x"])
    except ImportError:
        print(f"rensa not found in {args.bench_deps}: run `bash benchmarks/setup_dedup_bench.sh` (skipped)")
    print()
    print(_common.fmt_table(["signatures, end to end from text", "docs", "seconds", "docs/s/core", "ours vs it"],
                            rows, title=f"word {args.ngram}-grams, num_perm={args.num_perm}, one thread"))
    print("ours, by step (one pass): " + ", ".join(f"{k} {v:.2f} s" for k, v in parts.items()))

    # --- the real pipeline on Parquet shards, then agreement with datasketch MinHashLSH
    tmp = Path(tempfile.mkdtemp(prefix="dedup-bench-", dir=_common.REPO / "bench-data" if
                                (_common.REPO / "bench-data").is_dir() else None))
    man = write_corpus(tmp / "corpus", corpus, shards=4)
    t0 = time.perf_counter()
    rep = run_dedup([str(tmp / "corpus" / f) for f in man["train"]], spec, tmp / "out", options=EngineOptions("local"))
    pipe_s = time.perf_counter() - t0
    import pyarrow.parquet as pq
    cl = pq.read_table(tmp / "out" / "clusters.parquet").to_pylist()
    shard_base = {f: int(b) for f, b in zip(man["train"], np.cumsum([0] + [pq.ParquetFile(tmp / "corpus" / f)
                                                                          .metadata.num_rows for f in man["train"]])[:-1])}
    ours_flag = np.zeros(len(texts), bool)
    cluster_of = {}
    for r in cl:
        i = shard_base[os.path.basename(r["shard"])] + r["row"]
        ours_flag[i] = True
        cluster_of[i] = r["cluster_id"]
    found = total = 0
    for o, g in corpus.planted_groups().items():
        for c in g[1:]:
            total += 1
            found += cluster_of.get(c, -1) == cluster_of.get(o, -2)
    recall = found / total if total else 1.0
    planted = corpus.origin >= 0
    print(f"\npipeline `run_dedup` (4 Parquet shards, local, threshold {args.threshold}): {pipe_s:.1f} s "
          f"({rep['run']['seconds']}); {rep['duplicates']} duplicates removed, {rep['clusters']['count']} clusters")
    print(f"recall on planted copies: {found}/{total} = {recall:.4f}; flagged documents that are not planted "
          f"copies or originals: {int((ours_flag & ~planted & (np.array(corpus.kind) != 'original')).sum())}")

    na = min(args.agree_docs or len(texts), len(texts))
    import datasketch
    t0 = time.perf_counter()
    _, ds_mh = run_datasketch(texts[:na], args.ngram, args.num_perm, "legacy")
    ds_flags, br = lsh_flags(ds_mh, args.threshold, args.num_perm)
    t_ds = time.perf_counter() - t0
    same_sig = [datasketch.MinHash(hashvalues=s.astype(np.uint64), scheme="legacy") for s in our_sig[:na]]
    ds_flags_same, _ = lsh_flags(same_sig, args.threshold, args.num_perm)
    ours_sub = ours_flag[:na]
    if na < len(texts):
        # agreement on a prefix: recompute our flags on the same prefix with our own LSH
        from dataaudit.dedup import band_hashes, cluster_table
        from dataaudit.dedup.lsh import runs, star_edges
        b, r = spec.bands()
        bh = band_hashes(our_sig[:na], b, r)
        src, dst = [], []
        for j in range(b):
            order = np.argsort(bh[:, j], kind="stable")
            s, d = star_edges(order, runs(bh[order, j]))
            src.append(s)
            dst.append(d)
        ct = cluster_table(np.concatenate(src), np.concatenate(dst))
        ours_sub = np.zeros(na, bool)
        ours_sub[ct["gid"]] = True
    agree = float((ours_sub == ds_flags).mean())
    agree_same = float((ours_sub == ds_flags_same).mean())
    print()
    print(_common.fmt_table(
        ["duplicate flags vs datasketch MinHashLSH", "docs", "flagged ours", "flagged datasketch", "agreement"],
        [["datasketch's own signatures (SHA-1 shingles)", na, int(ours_sub.sum()), int(ds_flags.sum()), f"{agree:.4%}"],
         ["our signatures in MinHashLSH", na, int(ours_sub.sum()), int(ds_flags_same.sum()), f"{agree_same:.4%}"]],
        title=f"threshold {args.threshold}: datasketch picks b={br[0]}, r={br[1]}; ours {spec.bands()} "
              f"(datasketch side took {t_ds:.0f} s)"))
    figures = {"docs": len(texts), "mb": mb, "ours_docs_per_s": ours_rate, "ours_backend": backend,
               "ours_parts_s": parts, "datasketch_docs_per_s": ds_rate, "datasketch_scheme": args.datasketch_scheme,
               "rensa_docs_per_s": rensa_rate, "ratio_datasketch": ours_rate / ds_rate,
               "ratio_rensa": (ours_rate / rensa_rate) if rensa_rate else None, "recall": recall,
               "agreement_datasketch_signatures": agree, "agreement_same_signatures": agree_same,
               "agree_docs": na, "threshold": args.threshold, "pipeline_s": pipe_s}
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2))
    import shutil
    shutil.rmtree(tmp, ignore_errors=True)
    if args.min_ratio is not None and ours_rate / ds_rate < args.min_ratio:
        print(f"dedup_signatures: ratio {ours_rate / ds_rate:.1f}x below --min-ratio {args.min_ratio}")
        return 3
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
