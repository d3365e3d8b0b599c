#!/usr/bin/env python
"""Throughput per core: dataaudit's contamination `ngram` method vs lm-evaluation-harness's decontamination Janitor.

Both check the same training documents against the same benchmark, GSM8K's test questions, with word 13-grams:

(a) dataaudit: the benchmark index (`build_index`, ngram method only: exact and MinHash off) built once, then
    every record batch of the corpus through the per-batch stage (`match_texts`: normalize, split, hash, look
    up; plus `matches_table`: the match rows, their snippets and answer leak flags). Best of --repeats passes.
(b) lm_eval: `Janitor(ngram_n=13)` with every question registered (`register_contaminant_python`), then
    `clean_python(doc)` on each of the first --janitor-docs documents, as lm_eval's decontamination uses it.
    (The optional C++ `janitor_util` is not on PyPI; the Janitor runs in its Python mode, as pip installs it.)

The corpus is make_corpus.py's synthetic English-like prose with GSM8K questions planted in it (every
--plant-every documents, a question is inserted mid-document: verbatim, upper-cased, re-spaced, or only its first
15 words), so both tools have something to find. A training document is "flagged" when it shares at least one
13-gram with a benchmark question: for dataaudit, a document with any ngram match row; for the Janitor, one where
`clean_python` found a contaminated 13-gram. The script prints both flagged sets on the documents both timed,
and whether they are the same.

Everything runs in this one process on one thread (OMP/BLAS env vars, pa.set_cpu_count(1); the numba kernels are
single-threaded), so documents/s is a per-core figure. lm_eval is installed by
benchmarks/setup_contamination_bench.sh into .bench-deps/lm-eval/ (not a project dependency).

    .venv/bin/python benchmarks/contamination_vs_janitor.py --mb 200 --janitor-docs 20000
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402

_common.single_core_env()

import contextlib  # noqa: E402
import gc  # noqa: E402
import io  # noqa: E402
import time  # noqa: E402
from dataclasses import replace  # noqa: E402

import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402
import pyarrow.compute as pc  # noqa: E402

TARGET_RATIO = 5.0
GSM8K = _common.REPO.parent / "shared" / "data" / "benchmarks" / "gsm8k_test.jsonl"
VARIANTS = ("verbatim", "upper", "respaced", "first15")


def load_texts(paths: list[str], batch_rows: int) -> tuple[list[str | None], float]:
    from dataaudit.formats import iter_shard
    texts: list[str | None] = []
    t0 = time.perf_counter()
    for p in paths:
        for batch in iter_shard(p, columns=["text"], batch_rows=batch_rows):
            texts.extend(batch.column(batch.schema.get_field_index("text")).to_pylist())
    return texts, time.perf_counter() - t0


def plant(texts: list[str | None], questions: list[str], every: int) -> dict[int, tuple[int, str]]:
    """Insert questions mid-document in every `every`-th document; returns {doc index: (question, variant)}."""
    planted = {}
    if every <= 0:
        return planted
    for j, i in enumerate(range(every // 2, len(texts), every)):
        q = j % len(questions)
        variant = VARIANTS[j % len(VARIANTS)]
        words = questions[q].split()
        if variant == "upper":
            piece = questions[q].upper()
        elif variant == "respaced":
            piece = "  ".join(words[:len(words) // 2]) + "\n\n" + "\t".join(words[len(words) // 2:])
        elif variant == "first15":
            piece = " ".join(words[:15])
        else:
            piece = questions[q]
        doc = texts[i] or ""
        cut = doc.find(" ", len(doc) // 2)
        cut = len(doc) if cut < 0 else cut
        texts[i] = doc[:cut] + " " + piece + " " + doc[cut:]
        planted[i] = (q, variant)
    return planted


def run_ours(batches: list[pa.Array], index, config, repeats: int):
    from dataaudit.contamination.scan import match_texts, matches_table
    keys = [pa.array([str(i) for i in range(len(b))], pa.string()) for b in batches]
    best = None
    for _ in range(max(repeats, 1)):
        gc.collect()
        flagged: list[np.ndarray] = []
        rows_out = 0
        start = 0
        t0 = time.perf_counter()
        for b, k in zip(batches, keys):
            m = match_texts(b, index, config)
            t = matches_table(m, b, np.arange(len(b), dtype=np.int64), k, config.max_matches, index=index)
            rows_out += t.num_rows
            flagged.append(np.unique(m.doc) + start)
            start += len(b)
        s = time.perf_counter() - t0
        if best is None or s < best[0]:
            best = (s, np.concatenate(flagged) if flagged else np.zeros(0, np.int64), rows_out)
    return best


def import_janitor(deps: Path):
    if not (deps / "lm_eval" / "decontamination" / "janitor.py").is_file():
        raise SystemExit(f"lm_eval not found in {deps}: run `bash benchmarks/setup_contamination_bench.sh` first")
    sys.path.insert(0, str(deps))
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        from lm_eval.decontamination import janitor         # warns on stdout/stderr without the C++ helper
    import lm_eval
    return janitor, lm_eval.__version__


def run_janitor(texts: list[str], questions: list[str], deps: Path):
    janitor, version = import_janitor(deps)

    class RecordingJanitor(janitor.Janitor):
        """Records whether clean_python found a contaminated 13-gram (its own result is a list of chunks)."""

        def _split_chunks(self, dirty_string, dirty_parts):
            parts = list(dirty_parts)
            self.last_dirty = bool(parts)
            return super()._split_chunks(dirty_string, parts)

    jan = RecordingJanitor(ngram_n=13)
    t0 = time.perf_counter()
    for q in questions:
        jan.register_contaminant_python(q)
    t_reg = time.perf_counter() - t0
    flagged = np.zeros(len(texts), bool)
    gc.collect()
    t0 = time.perf_counter()
    for i, doc in enumerate(texts):
        jan.clean_python(doc)
        flagged[i] = jan.last_dirty
    return time.perf_counter() - t0, t_reg, np.flatnonzero(flagged), version, janitor.JANITOR_CPP


def main(argv=None) -> int:
    ap = _common.base_parser(__doc__.split("\n\n")[0], default_mb=200.0)
    ap.add_argument("--janitor-docs", type=int, default=20_000,
                    help="time the Janitor on this prefix of the corpus (0 = all documents)")
    ap.add_argument("--plant-every", type=int, default=500,
                    help="insert a GSM8K question into every N-th document (0 = none)")
    ap.add_argument("--benchmark-file", default=str(GSM8K), help="GSM8K test JSONL (questions are matched)")
    ap.add_argument("--batch-rows", type=int, default=2048, help="rows per record batch given to our stage")
    ap.add_argument("--repeats", type=int, default=3, help="passes of our method (best is reported)")
    ap.add_argument("--skip-janitor", action="store_true", help="time only our method")
    ap.add_argument("--bench-deps", default=str(_common.BENCH_DEPS / "lm-eval"),
                    help="folder lm_eval is installed in")
    ap.add_argument("--json", default=None, help="also write the figures to this JSON file")
    ap.add_argument("--min-ratio", type=float, default=None,
                    help=f"exit 3 when ours/Janitor is below this (target is {TARGET_RATIO:g}x; off by default)")
    args = ap.parse_args(argv)
    return _common.run_guarded("contamination_vs_janitor", run, args)


def run(args) -> int:
    manifest = _common.ensure_corpus(args)
    _common.single_core_libs()
    from dataaudit.contamination import ContaminationConfig, build_index, load_benchmark
    from dataaudit.contamination.config import ExactSettings, MinhashSettings
    from dataaudit.contamination.grams import kernels

    paths = _common.shard_paths(manifest, args.corpus)
    texts, t_read = load_texts(paths, args.batch_rows)
    bench = load_benchmark("gsm8k", args.benchmark_file)
    planted = plant(texts, bench.texts, args.plant_every)
    n = len(texts)
    batches = [pa.array(texts[s:s + args.batch_rows], pa.string()) for s in range(0, n, args.batch_rows)]
    text_bytes = sum(int(pc.sum(pc.binary_length(b)).as_py() or 0) for b in batches)
    print(_common.machine_line())
    print(f"corpus: {args.corpus}: {len(paths)} shards, {n} documents, {text_bytes / 1e6:.1f} MB text "
          f"(read in {t_read:.2f}s, untimed); {len(planted)} documents with a planted GSM8K question "
          f"(every {args.plant_every}: {', '.join(VARIANTS)})")
    print(f"benchmark: {args.benchmark_file}: {len(bench)} questions; word 13-grams; "
          f"numba kernels: {'yes' if kernels() is not None else 'NO (numpy twins)'}")

    config = replace(ContaminationConfig(), exact=ExactSettings(False), minhash=MinhashSettings(enabled=False),
                     batch_rows=args.batch_rows)
    build_index([bench], ContaminationConfig())     # warm-up (untimed): loads the compiled kernels, LSH params
    t0 = time.perf_counter()
    index = build_index([bench], config)
    t_index = time.perf_counter() - t0
    ours_s, ours_flag, ours_rows = run_ours(batches, index, config, args.repeats)
    ours_rate = n / ours_s
    full = ContaminationConfig()
    full_index = build_index([bench], full)
    full_s, full_flag, _ = run_ours(batches, full_index, full, 1)
    rows = [["dataaudit ngram (13-grams)", n, f"{ours_s:.3f}", f"{ours_rate:,.0f}", f"{text_bytes / 1e6 / ours_s:.1f}",
             len(ours_flag), f"{t_index:.3f}"],
            ["  (for reference: ngram + exact + minhash)", n, f"{full_s:.3f}", f"{n / full_s:,.0f}",
             f"{text_bytes / 1e6 / full_s:.1f}", len(full_flag), "-"]]
    result = {"documents": n, "text_bytes": text_bytes, "planted": len(planted), "ours_s": ours_s,
              "ours_docs_per_s": ours_rate, "ours_mb_per_s": text_bytes / 1e6 / ours_s, "ours_index_s": t_index,
              "ours_flagged": int(len(ours_flag)), "ours_all_methods_docs_per_s": n / full_s,
              "numba": kernels() is not None}
    status = 0
    if args.skip_janitor:
        print(_common.fmt_table(["method", "docs", "seconds", "docs/s/core", "MB/s/core", "flagged docs",
                                 "index s"], rows, title="per-core throughput:"))
    else:
        m = n if args.janitor_docs <= 0 else min(args.janitor_docs, n)
        sub = [t or "" for t in texts[:m]]
        m_bytes = sum(len(t.encode("utf-8")) for t in sub)
        jan_s, jan_reg, jan_flag, version, cpp = run_janitor(sub, bench.texts, Path(args.bench_deps))
        jan_rate = m / jan_s
        ratio = ours_rate / jan_rate
        rows.append([f"lm_eval {version} Janitor.clean_python ({'C++' if cpp else 'python mode'})", m,
                     f"{jan_s:.2f}", f"{jan_rate:,.0f}", f"{m_bytes / 1e6 / jan_s:.2f}", len(jan_flag),
                     f"{jan_reg:.3f}"])
        print()
        print(_common.fmt_table(["method", "docs", "seconds", "docs/s/core", "MB/s/core", "flagged docs",
                                 "index s"], rows, title="per-core throughput (one process, one thread):"))
        ours_sub = set(ours_flag[ours_flag < m].tolist())
        jan_set = set(jan_flag.tolist())
        planted_sub = {i for i in planted if i < m}
        same = ours_sub == jan_set
        print()
        print(f"flagged training documents among the first {m}: dataaudit {len(ours_sub)}, Janitor {len(jan_set)}, "
              f"both {len(ours_sub & jan_set)}, only dataaudit {len(ours_sub - jan_set)}, only Janitor "
              f"{len(jan_set - ours_sub)} -> {'the SAME set' if same else 'DIFFERENT sets'}")
        print(f"planted documents among them: {len(planted_sub)}; found by dataaudit {len(planted_sub & ours_sub)}, "
              f"by the Janitor {len(planted_sub & jan_set)}; flagged but not planted: dataaudit "
              f"{len(ours_sub - planted_sub)}, Janitor {len(jan_set - planted_sub)}")
        for label, extra in (("only dataaudit", sorted(ours_sub - jan_set)),
                             ("only Janitor", sorted(jan_set - ours_sub))):
            for i in extra[:5]:
                print(f"  {label}: document {i} (planted: {planted.get(i)})")
        verdict = "meets" if ratio >= TARGET_RATIO else "BELOW"
        print(f"ratio dataaudit / Janitor (documents/s per core): {ratio:.1f}x  ({verdict} the {TARGET_RATIO:g}x "
              "target)")
        result.update({"janitor_docs": m, "janitor_s": jan_s, "janitor_docs_per_s": jan_rate,
                       "janitor_mb_per_s": m_bytes / 1e6 / jan_s, "janitor_register_s": jan_reg,
                       "janitor_flagged": len(jan_set), "ours_flagged_in_prefix": len(ours_sub),
                       "same_flagged_set": same, "only_ours": len(ours_sub - jan_set),
                       "only_janitor": len(jan_set - ours_sub), "planted_in_prefix": len(planted_sub),
                       "ratio": ratio, "lm_eval": version, "janitor_cpp": bool(cpp)})
        if args.min_ratio is not None and ratio < args.min_ratio:
            print(f"contamination_vs_janitor: ratio {ratio:.1f}x < --min-ratio {args.min_ratio:g}", file=sys.stderr)
            status = 3
    _common.write_json_result(args.json, result)
    return status


if __name__ == "__main__":
    sys.exit(main())
