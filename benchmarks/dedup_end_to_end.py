#!/usr/bin/env python
"""`dataaudit dedup` end to end (a child process: start-up, read, sign, LSH, clusters, every output) vs rensa
in-process, datasketch for reference; agreement of each with the exact Jaccard of the same shingles.

Corpus: benchmarks/dedup_e2e_corpus.py (lines of tinyshakespeare and of installed Python sources, 4% exact and
8% near copies planted), --docs documents (100,000: ~70 MB) in Parquet shards of --shard-docs, cached in
bench-data/dedup-e2e-<docs>/. All tools see word 5-grams of the NFC + lowercased + whitespace-split text, 128
permutations, seed 1, threshold --threshold. Bands: ours and datasketch's choose 9 x 13 at 0.8 (datasketch's
optimum); rensa needs bands dividing 128: --rensa-bands 16 (16 x 8: more candidates than 9 x 13).

(a) dataaudit: `python -m dataaudit.cli dedup SHARDS --out DIR --engine local` (this checkout), wall, CPU and
    peak RSS of the child (os.wait4), with the default threads (both cores), with NUMBA_NUM_THREADS=1 (one
    core), with --estimate (recall-oriented bands, candidates checked by estimated Jaccard) and with --estimate
    --verify (the same bands, candidates checked by exact Jaccard); stage times from dedup.json's `run`.
(b) rensa (in this process, texts already in memory, not counted): Python shingles + `RMinHash.update` per
    document, `RMinHashLSH.insert` of all, then `query` of each: its candidates are its duplicate pairs, or
    (the usual rensa recipe) those whose estimated Jaccard `RMinHash.jaccard` is >= the threshold.
(c) datasketch `MinHash` (its default scheme and SHA-1 shingle hash) + `MinHashLSH` on the first
    --datasketch-docs documents (it signs ~2k docs/s).

Agreement: the pairs judged are the planted (copy, original) pairs plus a sample of each tool's own duplicate
claims (ours: (representative, member) of each cluster; rensa and datasketch: LSH candidates); truth is exact
Jaccard >= threshold of the two documents' shingle sets (Python strings). A tool says "duplicates" for a pair
when the two are in one cluster (ours) or one is the other's candidate (peers). Precision and recall of each
tool on that pair set. (Same-cluster is transitive: two near copies of one original are in one cluster even
when their own Jaccard is below the threshold, which counts against our precision.) Per document too: a
document flagged (ours: in a cluster; peers: it has a candidate) vs it has a partner at exact Jaccard >= the
threshold among the judged pairs (the duplicate flags dataaudit's dedup_signatures benchmark compares).

--corpus short / long: instead, the first --docs rows of benchmarks/make_real_corpus.py's real records (`short`:
--short, chat turns, instructions, questions and speeches, median ~132 bytes; `long`: its default mix of code,
English prose and Chinese, ~1.6 KB a row), cached in bench-data/dedup-real-<kind>-<docs>/. Nothing is planted:
their rows repeat real texts (exact duplicates) and agreement is judged on each tool's own claims.

--rounds N runs this checkout's CLI (default settings) and rensa in turn N times and prints each round's ratio and
the load: a comparison that holds under a changing load (the machine is shared). --baseline CHECKOUT adds the CLI
of another checkout (a copy or worktree of the previous version) to each round (--repeats rounds without --rounds).
The header says whether the CLI finds dedup's kernels compiled ahead of time (`dataaudit build-kernels`).

--docs-1m also builds 1,000,000 documents (~700 MB) and runs the CLI on them (wall, peak RSS, recall of the
planted pairs). rensa is installed by benchmarks/setup_dedup_bench.sh into .bench-deps/.

    .venv/bin/python benchmarks/dedup_end_to_end.py                 # 100k
    .venv/bin/python benchmarks/dedup_end_to_end.py --docs-1m       # + 1M (CLI only)
    .venv/bin/python benchmarks/dedup_end_to_end.py --corpus short --default-only --rounds 5 --datasketch-docs 0
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402
sys.path.insert(0, str(_common.REPO))   # the data generators live in fixtures/ (not installed)
from fixtures import chat_data  # noqa: E402
import dedup_e2e_corpus  # noqa: E402

import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
import time  # noqa: E402
import unicodedata  # noqa: E402

import numpy as np  # noqa: E402



def shingles(text: str, n: int) -> list[str]:
    words = unicodedata.normalize("NFC", text).lower().split()
    if not words:
        return []
    return [" ".join(words)] if len(words) < n else [" ".join(words[i:i + n]) for i in range(len(words) - n + 1)]


def _cached(out: Path, params: dict) -> tuple[Path, list[str], dict] | None:
    """A corpus built before with the same params: its folder, shards and manifest; None otherwise."""
    mpath = out / "manifest.json"
    if mpath.exists():
        manifest = json.loads(mpath.read_text())
        if manifest.get("params") == params:
            return out, sorted(str(p) for p in out.glob("train-*.parquet")), manifest
    return None


def corpus_dir(docs: int, args) -> tuple[Path, list[str], dict]:
    """Shards and manifest of the corpus of `docs` documents (built once, then reused)."""
    out = Path(args.data) / f"dedup-e2e-{docs}"
    params = {"docs": docs, "seed": args.seed, "shard_docs": args.shard_docs, "version": 1}
    mpath = out / "manifest.json"
    if (cached := _cached(out, params)) is not None:
        return cached
    shutil.rmtree(out, ignore_errors=True)
    t0 = time.perf_counter()
    c = dedup_e2e_corpus.build(docs, chat_data.shared_data_dir(), seed=args.seed)
    dedup_e2e_corpus.write(c, out, args.shard_docs)
    manifest = json.loads(mpath.read_text())
    manifest["params"] = params
    mpath.write_text(json.dumps(manifest))
    print(f"corpus: built {out} in {time.perf_counter() - t0:.1f} s")
    return out, sorted(str(p) for p in out.glob("train-*.parquet")), manifest


def real_corpus_dir(kind: str, docs: int, args) -> tuple[Path, list[str], dict]:
    """Shards and manifest of the first `docs` rows of make_real_corpus.py's corpus (`short`: --short, chat turns and
    instructions, median ~132 bytes; `long`: its default mix of code, prose and Chinese, ~1.6 KB a row), built once
    and cached; nothing planted (its rows repeat real texts: those are its exact duplicates)."""
    import make_real_corpus

    out = Path(args.data) / f"dedup-real-{kind}-{docs}"
    params = {"docs": docs, "kind": kind, "shard_docs": args.shard_docs, "version": 1}
    mpath = out / "manifest.json"
    if (cached := _cached(out, params)) is not None:
        return cached
    shutil.rmtree(out, ignore_errors=True)
    t0 = time.perf_counter()
    mb = docs * (300 if kind == "short" else 1700) / 1e6       # about the mean row of each kind
    while True:
        opts = make_real_corpus.parser().parse_args((["--short"] if kind == "short" else []) + ["--mb", f"{mb:g}"])
        rows, kinds, sources = make_real_corpus.build_rows(opts)
        if len(rows) >= docs:
            break
        mb *= 1.1 * docs / max(1, len(rows))
    rows, kinds = rows[:docs], kinds[:docs]
    digest = make_real_corpus_digest(rows)
    dedup_e2e_corpus.write({"texts": rows, "origin": np.full(docs, -1, np.int64), "kind": kinds,
                            "pool_lines": sum(len(v) for v in sources.values()), "pool_digest": digest},
                           out, args.shard_docs)
    manifest = json.loads(mpath.read_text())
    manifest["params"] = params
    manifest["median_record_bytes"] = int(np.median([len(r.encode("utf-8")) for r in rows]))
    mpath.write_text(json.dumps(manifest))
    print(f"corpus: built {out} in {time.perf_counter() - t0:.1f} s (make_real_corpus.py"
          f"{' --short' if kind == 'short' else ''} --mb {mb:g}, first {docs:,} rows)")
    return out, sorted(str(p) for p in out.glob("train-*.parquet")), manifest


def make_real_corpus_digest(rows: list[str]) -> str:
    import hashlib

    h = hashlib.sha256()
    for r in rows:
        h.update(r.encode("utf-8", "surrogatepass") + b"\0")
    return h.hexdigest()[:16]


def kernels_line() -> str:
    """Whether the CLI finds dedup's kernels compiled ahead of time (`dataaudit build-kernels`) or uses numba's JIT."""
    code = ("from dataaudit.textops.compiled import compiled_kernels, kernels_folder, key\n"
            "print(kernels_folder() / key() if compiled_kernels('dataaudit.dedup._kernels') else '')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=_common.child_env(),
                         cwd=_common.REPO).stdout.strip()
    return f"kernels compiled ahead of time ({out})" if out else \
        "kernels: numba's JIT (no `dataaudit build-kernels` build for these sources)"


def run_cli(paths: list[str], out: Path, threshold: float, threads: int | None, extra: tuple = (),
            root: str | None = None) -> dict:
    """The dedup CLI as a child (of this checkout, or of the checkout at `root`): wall and CPU seconds, peak
    RSS (MiB), its dedup.json."""
    shutil.rmtree(out, ignore_errors=True)
    env = _common.child_env()
    if root:
        env["PYTHONPATH"] = os.pathsep.join([root, env["PYTHONPATH"]])
    if threads:
        env["NUMBA_NUM_THREADS"] = str(threads)
    cmd = _common.dataaudit_cli() + ["dedup", *paths, "--out", str(out), "--engine", "local",
                                     "--threshold", str(threshold), *extra]
    t0 = time.perf_counter()
    # run in `root`: `python -m` puts the working folder first on sys.path, before PYTHONPATH
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, cwd=root)
    output = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"dedup CLI failed ({proc.returncode}):\n{output.decode(errors='replace')[-2000:]}")
    return {"wall": wall, "cpu": usage.ru_utime + usage.ru_stime, "rss_mib": usage.ru_maxrss / 1024,
            "report": json.loads((out / "dedup.json").read_text())}


def our_clusters(out: Path, paths: list[str], shard_docs: int) -> np.ndarray:
    """cluster id of every document (-1: in no cluster), from clusters.parquet."""
    import pyarrow.parquet as pq

    t = pq.read_table(out / "clusters.parquet", columns=["shard", "row", "cluster_id"]).to_pydict()
    index = {p: i for i, p in enumerate(paths)}
    gid = np.array([index[s] * shard_docs + r for s, r in zip(t["shard"], t["row"])], np.int64)
    n = len(paths) * shard_docs
    cid = np.full(n + 1, -1, np.int64)
    cid[gid] = t["cluster_id"]
    return cid


def cluster_pairs(cid: np.ndarray, cap: int, rng, every: bool = False) -> set:
    """What our output claims: (representative, member) for every other member of a cluster (every: all pairs
    of clusters up to 8 members)."""
    order = np.argsort(cid, kind="stable")
    order = order[cid[order] >= 0]
    pairs = []
    bounds = np.flatnonzero(np.r_[True, np.diff(cid[order]) != 0, True])
    for a, b in zip(bounds[:-1], bounds[1:]):
        m = order[a:b].tolist()
        if every and len(m) <= 8:
            pairs += [(m[i], m[k]) for i in range(len(m)) for k in range(i + 1, len(m))]
        else:
            pairs += [(m[0], x) for x in m[1:]]
    return _sample(pairs, cap, rng)


def _sample(pairs, cap, rng) -> set:
    pairs = sorted({(min(a, b), max(a, b)) for a, b in pairs})
    if len(pairs) > cap:
        pairs = [pairs[i] for i in sorted(rng.choice(len(pairs), cap, replace=False).tolist())]
    return set(pairs)


def run_rensa(texts: list[str], threshold: float, num_perm: int, bands: int) -> tuple[dict, set]:
    import rensa

    t0 = time.perf_counter()
    c0 = time.process_time()
    mhs = []
    for t in texts:
        m = rensa.RMinHash(num_perm=num_perm, seed=1)
        m.update(shingles(t, 5))
        mhs.append(m)
    t1 = time.perf_counter()
    lsh = rensa.RMinHashLSH(threshold=threshold, num_perm=num_perm, num_bands=bands)
    for i, m in enumerate(mhs):
        lsh.insert(i, m)
    t2 = time.perf_counter()
    pairs, close = set(), set()
    for i, m in enumerate(mhs):
        for j in lsh.query(m):
            if j > i:
                pairs.add((i, j))
                if m.jaccard(mhs[j]) >= threshold:
                    close.add((i, j))
    t3 = time.perf_counter()
    return ({"sign": t1 - t0, "insert": t2 - t1, "query": t3 - t2, "total": t3 - t0, "cpu": time.process_time() - c0},
            pairs, close)


def run_datasketch(texts: list[str], threshold: float, num_perm: int) -> tuple[dict, set]:
    import datasketch

    t0 = time.perf_counter()
    mhs = []
    for t in texts:
        m = datasketch.MinHash(num_perm=num_perm, seed=1)
        m.update_batch([s.encode("utf-8") for s in shingles(t, 5)])
        mhs.append(m)
    lsh = datasketch.MinHashLSH(threshold=threshold, num_perm=num_perm)
    for i, m in enumerate(mhs):
        lsh.insert(i, m)
    pairs = {(min(i, j), max(i, j)) for i, m in enumerate(mhs) for j in lsh.query(m) if j != i}
    return {"total": time.perf_counter() - t0}, pairs


def exact_jaccard(texts: list[str], pairs: list[tuple[int, int]]) -> np.ndarray:
    sets: dict[int, set] = {}
    out = np.empty(len(pairs))
    for k, (a, b) in enumerate(pairs):
        for d in (a, b):
            if d not in sets:
                sets[d] = set(shingles(texts[d], 5))
        sa, sb = sets[a], sets[b]
        out[k] = len(sa & sb) / len(sa | sb) if sa or sb else 0.0
    return out


def scores(said: np.ndarray, truth: np.ndarray, result: dict | None = None, name: str = "") -> str:
    tp = int((said & truth).sum())
    p = tp / max(1, int(said.sum()))
    r = tp / max(1, int(truth.sum()))
    if result is not None:
        result.setdefault("agreement", {})[name] = {"precision": round(p, 4), "recall": round(r, 4)}
    return f"precision {p:.4f}, recall {r:.4f} ({tp} of {int(said.sum())} said, {int(truth.sum())} true)"


def main(args) -> int:
    print(_common.machine_line())
    print(f"dataaudit from {_common.dataaudit_origin()}; {kernels_line()}")
    rng = np.random.default_rng(1)
    out_root = Path(args.data) / "dedup-e2e-out"
    if args.corpus == "e2e":
        folder, paths, manifest = corpus_dir(args.docs, args)
    else:
        folder, paths, manifest = real_corpus_dir(args.corpus, args.docs, args)
    n = manifest["documents"]
    if args.corpus == "e2e":
        print(f"corpus: {n:,} documents, {manifest['text_bytes'] / 1e6:.1f} MB of text, {len(paths)} shards; text "
              f"pool {manifest['pool_lines']:,} lines (tinyshakespeare + Python sources), digest "
              f"{manifest['pool_digest']}")
    else:
        print(f"corpus: {n:,} {args.corpus} real records of make_real_corpus.py, {manifest['text_bytes'] / 1e6:.1f} MB "
              f"of text (median record {manifest['median_record_bytes']} bytes), {len(paths)} shards, from "
              f"{manifest['pool_lines']:,} source texts; digest {manifest['pool_digest']}")
    import pyarrow.parquet as pq
    texts = [t for p in paths for t in pq.read_table(p, columns=["text"]).column("text").to_pylist()]
    origin = np.asarray(manifest["origin"], np.int64)
    result: dict = {"corpus": args.corpus, "documents": n, "text_mb": round(manifest["text_bytes"] / 1e6, 1),
                    "threshold": args.threshold, "load": list(os.getloadavg())}
    rows = []
    cli, cids = {}, {}
    settings = (("2 cores", None, ()), ("1 core", 1, ()), ("2 cores, --estimate", None, ("--estimate",)),
                ("2 cores, --estimate --verify", None, ("--estimate", "--verify")))
    if args.default_only:
        settings = settings[:1]
    for label, threads, extra in settings:
        best = None
        for _ in range(args.repeats):
            r = run_cli(paths, out_root / "ours", args.threshold, threads, extra)
            best = r if best is None or r["wall"] < best["wall"] else best
        cli[label] = best
        cids[label] = our_clusters(out_root / "ours", paths, args.shard_docs)
        run = best["report"]["run"]["seconds"]
        result.setdefault("cli", {})[label] = {"wall": round(best["wall"], 3), "cpu": round(best["cpu"], 3),
                                               "rss_mib": round(best["rss_mib"]), "stages": run}
        rows.append([f"dataaudit dedup CLI ({label})", f"{best['wall']:.2f}", _common.human_rate(n / best["wall"]),
                     f"start-up+imports {best['wall'] - run['total']:.2f}, sign {run['sign']:.2f}, lsh {run['lsh']:.2f}, "
                     f"cluster {run['cluster']:.2f}, outputs {run['outputs']:.2f}; CPU {best['cpu']:.2f} s; "
                     f"peak RSS {best['rss_mib']:.0f} MiB"])
    cid = cids["2 cores"]

    peers = {}
    try:
        rt, rensa_pairs, rensa_close = run_rensa(texts, args.threshold, 128, args.rensa_bands)
        peers["rensa (LSH candidate)"] = rensa_pairs
        peers["rensa (candidate, estimated J >= t)"] = rensa_close
        rows.append(["rensa in-process (shingles+RMinHash, LSH insert+query)", f"{rt['total']:.2f}",
                     _common.human_rate(n / rt["total"]),
                     f"sign {rt['sign']:.2f}, insert {rt['insert']:.2f}, query {rt['query']:.2f}; CPU {rt['cpu']:.2f} s"])
        result["rensa"] = {k: round(v, 3) for k, v in rt.items()}
    except ImportError:
        rt = None
        print("rensa not found: run `bash benchmarks/setup_dedup_bench.sh` and put .bench-deps on PYTHONPATH")
    nd = min(args.datasketch_docs, n)
    ds_pairs: set = set()
    if nd:
        dt, ds_pairs = run_datasketch(texts[:nd], args.threshold, 128)
        rows.append([f"datasketch MinHash+MinHashLSH (first {nd:,} docs)", f"{dt['total']:.2f}",
                     _common.human_rate(nd / dt["total"]), ""])
        result["datasketch"] = {"documents": nd, "seconds": round(dt["total"], 3)}
    print(_common.fmt_table(["what", "seconds", "docs/s", "inside"], rows,
                            f"\n{n:,} documents, threshold {args.threshold}"))
    if rt:
        for label, r in cli.items():
            print(f"ratio: rensa in-process / dataaudit CLI ({label}) = {rt['total'] / r['wall']:.2f}x wall, "
                  f"{rt['cpu'] / r['cpu']:.2f}x CPU")
            result.setdefault("ratio_vs_rensa", {})[label] = round(rt["total"] / r["wall"], 3)

    rounds = args.rounds or (args.repeats if args.baseline else 0)
    if rounds and rt:
        # (another version's CLI,) this one's and rensa in turn: ratios from the same rounds, whatever the load
        print(f"\nalternating rounds: {'the CLI of ' + args.baseline + ', ' if args.baseline else ''}this "
              f"checkout's CLI (default settings), rensa in-process")
        ratios = []
        for k in range(rounds):
            base = run_cli(paths, out_root / "baseline", args.threshold, None, root=args.baseline)["wall"] \
                if args.baseline else None
            ours = run_cli(paths, out_root / "ours", args.threshold, None)["wall"]
            rr = run_rensa(texts, args.threshold, 128, args.rensa_bands)[0]["total"]
            ratios.append(rr / ours)
            load = os.getloadavg()[0]
            print(f"  round {k + 1}: this {ours:.2f} s, rensa {rr:.2f} s: rensa / this {rr / ours:.2f}x"
                  + (f"; baseline {base:.2f} s, rensa / baseline {rr / base:.2f}x, baseline / this "
                     f"{base / ours:.2f}x" if base else "") + f" (load {load:.2f})")
            result.setdefault("alternating", []).append({"baseline": base and round(base, 3), "this": round(ours, 3),
                                                         "rensa": round(rr, 3), "load": round(load, 2)})
        print(f"  rensa / this over {rounds} rounds: min {min(ratios):.2f}x, median {float(np.median(ratios)):.2f}x, "
              f"max {max(ratios):.2f}x")

    # agreement with exact Jaccard
    planted = [(min(i, int(o)), max(i, int(o))) for i in np.flatnonzero(origin >= 0).tolist() for o in [origin[i]]]
    judged = set(planted)
    for c in cids.values():
        judged |= cluster_pairs(c, args.sample_pairs, rng)
    for p in peers.values():
        judged |= _sample(p, args.sample_pairs, rng)
    judged |= ds_pairs
    judged = sorted(judged)
    pool = set(judged)                      # + the pairs inside our clusters, for the per-document truth
    for c in cids.values():
        pool |= cluster_pairs(c, args.sample_pairs, rng, every=True)
    pool = sorted(pool)
    jp = exact_jaccard(texts, pool)
    pa_, pb_ = np.array([x for x, _ in pool]), np.array([y for _, y in pool])
    at = {pr: k for k, pr in enumerate(pool)}
    j = jp[[at[pr] for pr in judged]]
    truth = j >= args.threshold
    a = np.array([x for x, _ in judged])
    b = np.array([y for _, y in judged])
    print(f"\nagreement with exact Jaccard >= {args.threshold} on {len(judged):,} pairs ({len(planted):,} planted, "
          f"{int(truth.sum()):,} truly >= threshold):")
    for label, c in cids.items():
        if label != "1 core":
            said = (c[a] >= 0) & (c[a] == c[b])
            print(f"  dataaudit {label} (same cluster): {scores(said, truth, result, 'dataaudit ' + label)}")
    ours = (cid[a] >= 0) & (cid[a] == cid[b])
    for name, p in peers.items():
        said = np.array([pr in p for pr in judged])
        print(f"  {name}: {scores(said, truth, result, name)}")
    if nd:
        sub = b < nd
        said = np.array([pr in ds_pairs for pr in judged])
        print(f"  datasketch (first {nd:,} docs, {int(sub.sum())} pairs): {scores(said[sub], truth[sub])}")
        print(f"  dataaudit on the same pairs: {scores(ours[sub], truth[sub])}")

    # per document: flagged (in a cluster / has a candidate) vs truly has a partner at exact Jaccard >= t
    has_dup = np.zeros(n, bool)
    has_dup[pa_[jp >= args.threshold]] = True
    has_dup[pb_[jp >= args.threshold]] = True
    print(f"\nduplicate flags per document vs having a partner at exact Jaccard >= {args.threshold} among "
          f"{len(pool):,} pairs (the judged ones and all pairs inside our clusters; {int(has_dup.sum()):,} "
          f"documents):")
    for label, c in cids.items():
        if label != "1 core":
            print(f"  dataaudit {label} (in a cluster): "
                  f"{scores(c[:n] >= 0, has_dup, result, 'flags dataaudit ' + label)}")
    for name, p in peers.items():
        flag = np.zeros(n, bool)
        if p:
            ends = np.array(sorted(p))
            flag[ends.reshape(-1)] = True
        print(f"  {name}: {scores(flag, has_dup, result, 'flags ' + name)}")

    if args.docs_1m:
        texts = None
        folder, paths, manifest = corpus_dir(1_000_000, args)
        r = run_cli(paths, out_root / "ours-1m", args.threshold, None, ("--estimate",) if args.estimate_1m else ())
        run = r["report"]["run"]["seconds"]
        cid = our_clusters(out_root / "ours-1m", paths, args.shard_docs)
        origin = np.asarray(manifest["origin"], np.int64)
        copies = np.flatnonzero(origin >= 0)
        found = (cid[copies] >= 0) & (cid[copies] == cid[origin[copies]])
        kinds = np.array(manifest["kind"])[copies]
        print(f"\n1,000,000 documents ({manifest['text_bytes'] / 1e6:.0f} MB, {len(paths)} shards): CLI "
              f"{r['wall']:.1f} s ({_common.human_rate(1e6 / r['wall'])} docs/s), peak RSS {r['rss_mib']:.0f} MiB; "
              f"start-up+imports {r['wall'] - run['total']:.2f}, sign {run['sign']:.1f}, lsh {run['lsh']:.1f}, "
              f"cluster {run['cluster']:.1f}, outputs {run['outputs']:.1f}; planted copies in their original's "
              f"cluster: exact {found[kinds == 'exact'].mean():.4f}, near {found[kinds == 'near'].mean():.4f} "
              f"(near copies span Jaccard ~0.7-0.95 around the 0.8 threshold)")
        result["1m"] = {"wall": round(r["wall"], 2), "cpu": round(r["cpu"], 2), "rss_mib": round(r["rss_mib"]),
                        "stages": run, "recall_exact": round(float(found[kinds == "exact"].mean()), 4),
                        "recall_near": round(float(found[kinds == "near"].mean()), 4)}
    _common.write_json_result(args.json, result)
    return 0


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--docs", type=int, default=100_000)
    ap.add_argument("--corpus", choices=("e2e", "short", "long"), default="e2e",
                    help="e2e: dedup_e2e_corpus.py (planted copies); short / long: the first --docs rows of "
                         "make_real_corpus.py --short (chat turns, instructions: median ~132 bytes) / without "
                         "--short (code, prose, Chinese: ~1.6 KB a row)")
    ap.add_argument("--rounds", type=int, default=0,
                    help="alternating rounds of this CLI (default settings) and rensa (and --baseline's CLI), "
                         "each round's ratio printed (default: --repeats with --baseline, else none)")
    ap.add_argument("--default-only", action="store_true",
                    help="time only the default CLI settings (not 1 core, --estimate, --estimate --verify)")
    ap.add_argument("--docs-1m", action="store_true", help="also 1,000,000 documents (CLI only)")
    ap.add_argument("--estimate-1m", action="store_true", help="run the 1M CLI with --estimate")
    ap.add_argument("--shard-docs", type=int, default=25_000)
    ap.add_argument("--threshold", type=float, default=0.8)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeats", type=int, default=1, help="CLI runs per setting (best kept)")
    ap.add_argument("--rensa-bands", type=int, default=16,
                    help="rensa's LSH bands (it needs a divisor of 128: 9 x 13, datasketch's optimum, is refused)")
    ap.add_argument("--datasketch-docs", type=int, default=10_000, help="0: no datasketch")
    ap.add_argument("--sample-pairs", type=int, default=200_000,
                    help="pairs judged at most from each tool's duplicate claims (a random sample beyond)")
    ap.add_argument("--data", default=str(_common.REPO / "bench-data"))
    ap.add_argument("--baseline", default=None, metavar="CHECKOUT",
                    help="also run the CLI of this other checkout (e.g. a `git worktree` of the previous version), "
                         "this one's and rensa in turn, --repeats rounds: same-round ratios")
    ap.add_argument("--json", default=None, help="write the figures to this JSON file")
    if str(_common.BENCH_DEPS) not in sys.path and _common.BENCH_DEPS.is_dir():
        sys.path.insert(0, str(_common.BENCH_DEPS))
    sys.exit(_common.run_guarded("dedup_end_to_end", main, ap.parse_args()))
