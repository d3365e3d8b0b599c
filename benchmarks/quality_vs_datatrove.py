#!/usr/bin/env python
"""Parity and throughput per core: dataaudit's gopher_quality, c4_quality and fineweb_quality vs datatrove's own
GopherQualityFilter, C4QualityFilter and FineWebQualityFilter (default settings), on the same real documents.

Documents: distinct real texts of ../shared/data and the installed packages, as make_real_corpus.py gathers them
(English prose: tinyshakespeare pieces, GSM8K, ARC, WebDataset passages, SFT turns, package docs; Python/C source
files; Chinese tool-calling conversations), shuffled with --seed, the first --docs of them.

Decisions compared per document: keep or drop. datatrove's C4QualityFilter also *edits* a kept document (it keeps
only the lines that pass its line rules); dataaudit never edits, so the comparison is of the document-level
decision only: datatrove's filter() returning True (kept, perhaps edited) vs our check not flagging it, and of the
reason when both drop (datatrove's reason name vs the rule our detail names).

Timing: ours, each check's function over record batches of --batch-rows documents, with the tokenizer's memo
cleared first (a cold start); datatrove, filter(doc) per document (each filter on its own copy of the document),
after one warm-up call that loads spaCy. datatrove's decisions on all documents come from --workers processes,
each one thread: docs/s per core = documents / the sum of the workers' busy seconds. Everything is pinned to one
thread (_common.single_core_env). datatrove and spaCy come from .bench-deps (benchmarks/setup_bench.sh).

    .venv/bin/python benchmarks/quality_vs_datatrove.py --docs 20000 --workers 2
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402

_common.single_core_env()

import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import random  # noqa: E402
import time  # noqa: E402
from concurrent.futures import ProcessPoolExecutor  # noqa: E402

import pyarrow as pa  # noqa: E402

CHECKS = ("gopher_quality", "c4_quality", "fineweb_quality")
FILTERS = {"gopher_quality": "GopherQualityFilter", "c4_quality": "C4QualityFilter",
           "fineweb_quality": "FineWebQualityFilter"}
TARGET_RATIO = 20.0


def load_documents(shared: Path, n: int, seed: int) -> tuple[list[str], list[str]]:
    import make_real_corpus
    docs = make_real_corpus.sources(shared)
    items = [(kind, d) for kind in sorted(docs) for d in dict.fromkeys(docs[kind])]     # distinct, in order
    random.Random(seed).shuffle(items)
    items = items[:n] if n > 0 else items
    return [d for _, d in items], [k for k, _ in items]


def _datatrove_filters(bench_deps: str):
    sys.path.insert(0, bench_deps)
    from loguru import logger
    logger.remove()
    from datatrove.data import Document
    from datatrove.pipeline.filters import C4QualityFilter, FineWebQualityFilter, GopherQualityFilter
    return Document, {"gopher_quality": GopherQualityFilter(), "c4_quality": C4QualityFilter(),
                      "fineweb_quality": FineWebQualityFilter()}


def _datatrove_part(job):
    """One worker: datatrove's decision and reason per document of its slice, and its busy seconds per filter."""
    bench_deps, texts = job
    Document, filters = _datatrove_filters(bench_deps)
    for f in filters.values():                       # warm-up: loads spaCy's tokenizer
        f.filter(Document(text="Warm up the tokenizer with one sentence. And another one.", id="w"))
    out = {}
    for name, f in filters.items():
        reasons = []
        t0 = time.process_time()
        for i, text in enumerate(texts):
            r = f.filter(Document(text=text, id=str(i)))
            reasons.append(None if r is True else (r[1] if isinstance(r, tuple) else "dropped"))
        out[name] = (reasons, time.process_time() - t0)
    return out


def run_datatrove(texts: list[str], bench_deps: str, workers: int):
    parts = [texts[i::workers] for i in range(workers)]
    with ProcessPoolExecutor(workers) as ex:
        results = list(ex.map(_datatrove_part, [(bench_deps, p) for p in parts]))
    out = {}
    for name in CHECKS:
        reasons = [None] * len(texts)
        for w, res in enumerate(results):
            reasons[w::workers] = res[name][0]
        out[name] = (reasons, sum(res[name][1] for res in results))
    return out


def our_reason(name: str, detail: str | None) -> str | None:
    """The rule our detail names: the last '(...)' of gopher/c4/fineweb details."""
    if detail is None:
        return None
    if name == "fineweb_quality" and detail.endswith("(empty)"):
        return "empty"
    head = detail.split(";")[0]
    return head[head.rfind("(") + 1: head.rfind(")")] if "(" in head else detail


def run_ours(texts: list[str], batch_rows: int, repeats: int):
    from dataaudit.checks import REGISTRY
    from dataaudit.textops import spacy_en
    arrays = [pa.array(texts[i:i + batch_rows], pa.string()) for i in range(0, len(texts), batch_rows)]
    out = {}
    for name in CHECKS:
        spec = REGISTRY[name]
        best = None
        for _ in range(max(repeats, 1)):
            spacy_en.clear_memo()
            spacy_en.tables()._split_memo.clear()
            t0 = time.process_time()
            outs = [spec.fn(a, **spec.params) for a in arrays]
            dt = time.process_time() - t0
            if best is None or dt < best[1]:
                best = (outs, dt)
        outs, dt = best
        reasons = []
        for o in outs:
            for i in range(len(o.flagged)):
                reasons.append(our_reason(name, o.detail[i]) if o.flagged[i] else None)
        out[name] = (reasons, dt)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--docs", type=int, default=20_000, help="documents (0: all distinct ones)")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--batch-rows", type=int, default=4096)
    ap.add_argument("--repeats", type=int, default=1, help="passes of our checks (best is reported)")
    ap.add_argument("--workers", type=int, default=max(1, min(2, os.cpu_count() or 1)),
                    help="processes running datatrove (each one thread)")
    ap.add_argument("--show", type=int, default=10, help="disagreements listed per filter")
    ap.add_argument("--shared", default=str(_common.REPO.parent / "shared" / "data"))
    ap.add_argument("--bench-deps", default=str(_common.BENCH_DEPS))
    ap.add_argument("--json", default=None, help="also write the figures to this JSON file")
    args = ap.parse_args(argv)
    if not (Path(args.bench_deps) / "datatrove").is_dir():
        raise SystemExit(f"datatrove not found in {args.bench_deps}: run `bash benchmarks/setup_bench.sh` first")
    import dataaudit.checks  # noqa: F401  (loaded before the long datatrove phase)
    _common.single_core_libs()
    texts, kinds = load_documents(Path(args.shared), args.docs, args.seed)
    n = len(texts)
    mb = sum(len(t.encode("utf-8")) for t in texts) / 1e6
    print(_common.machine_line())
    mix = {k: kinds.count(k) for k in sorted(set(kinds))}
    print(f"documents: {n} distinct real documents ({mb:.1f} MB): " + ", ".join(f"{k} {v}" for k, v in mix.items()))
    t0 = time.time()
    theirs = run_datatrove(texts, args.bench_deps, args.workers)
    print(f"datatrove: decisions in {time.time() - t0:.0f}s wall on {args.workers} worker(s)")
    ours = run_ours(texts, args.batch_rows, args.repeats)
    rows, result = [], {"docs": n, "mb": mb, "mix": mix, "filters": {}}
    for name in CHECKS:
        r_t, s_t = theirs[name]
        r_o, s_o = ours[name]
        same = [(a is None) == (b is None) for a, b in zip(r_t, r_o)]
        same_reason = [a == b for a, b in zip(r_t, r_o)]
        agree = 100.0 * sum(same) / n
        rate_o, rate_t = n / s_o, n / s_t
        rows.append([name, FILTERS[name], f"{agree:.3f}%", f"{n - sum(same)}", f"{sum(b is not None for b in r_t)}",
                     f"{sum(b is not None for b in r_o)}", f"{100.0 * sum(same_reason) / n:.3f}%",
                     f"{rate_t:,.1f}", f"{rate_o:,.1f}", f"{rate_o / rate_t:.1f}x"])
        result["filters"][name] = {"agreement_pct": agree, "disagreements": n - sum(same),
                                   "reason_agreement_pct": 100.0 * sum(same_reason) / n,
                                   "datatrove_docs_per_s_per_core": rate_t, "ours_docs_per_s_per_core": rate_o,
                                   "ratio": rate_o / rate_t, "datatrove_cpu_s": s_t, "ours_cpu_s": s_o}
        # per rule: documents datatrove drops for it, and how many we flag for the same rule
        per_rule = {}
        for a, b in zip(r_t, r_o):
            if a is not None:
                d = per_rule.setdefault(a, [0, 0])
                d[0] += 1
                d[1] += a == b
        result["filters"][name]["per_rule"] = per_rule
        print()
        print(_common.fmt_table(["rule (datatrove's reason)", "datatrove drops", "ours: same rule", "agreement"],
                                [[k, v[0], v[1], f"{100.0 * v[1] / v[0]:.2f}%"] for k, v in sorted(per_rule.items())],
                                title=f"{name} vs datatrove {FILTERS[name]}, per rule:"))
        diff = [i for i in range(n) if r_t[i] != r_o[i]]
        for i in diff[: args.show]:
            print(f"  DIFF doc {i} ({kinds[i]}): datatrove {r_t[i] or 'keep'}, ours {r_o[i] or 'keep'}: "
                  f"{texts[i][:80]!r}")
    print()
    print(_common.fmt_table(["check", "datatrove filter", "keep/drop agreement", "disagreements", "datatrove drops",
                             "ours flags", "same reason", "datatrove docs/s/core", "ours docs/s/core", "speed ratio"],
                            rows, title=f"parity and per-core throughput on {n} documents:"))
    worst = min(f["ratio"] for f in result["filters"].values())
    print(f"slowest ratio {worst:.1f}x ({'meets' if worst >= TARGET_RATIO else 'BELOW'} the {TARGET_RATIO:g}x target)")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1))
    return 0 if all(f["disagreements"] == 0 for f in result["filters"].values()) else 3


if __name__ == "__main__":
    sys.exit(main())
