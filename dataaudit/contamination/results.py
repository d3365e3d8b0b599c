"""Merging per-shard scan results into per-item verdicts, and the outputs: items.parquet, contamination.json,
decontaminate.parquet. Pure functions over small arrays; memory depends on the benchmarks, not on the corpus
(the per-shard match tables are read one at a time)."""
from __future__ import annotations

from typing import Iterable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .config import ContaminationConfig
from .grams import NORMALIZE
from .index import ContaminationIndex
from .load import Benchmark
from .scan import rank_order, top_mask

SCHEMA_VERSION = 1
WORST_ITEMS = 10
MAX_SHORT_LISTED = 50
MATCH_STRUCT = pa.struct([
    ("shard", pa.string()), ("key", pa.string()), ("row", pa.int64()), ("line", pa.int64()), ("shared", pa.int32()),
    ("fraction", pa.float64()), ("exact", pa.bool_()), ("minhash", pa.float32()), ("snippet", pa.string()),
    ("match_start", pa.int32()), ("match_end", pa.int32()), ("longest", pa.int32()), ("answer", pa.bool_()),
    ("choices", pa.bool_())])
RECORD_STRUCT = pa.struct([("shard", pa.string()), ("key", pa.string()), ("row", pa.int64()), ("line", pa.int64())])
ITEMS_SCHEMA = pa.schema([
    ("index", pa.int64()), ("id", pa.string()), ("line", pa.int64()), ("text", pa.string()),
    ("words", pa.int64()), ("empty", pa.bool_()),
    ("ngram_total", pa.int64()), ("ngram_found", pa.int64()), ("ngram_fraction", pa.float64()),
    ("ngram_record_fraction", pa.float64()), ("ngram_contaminated", pa.bool_()),
    ("exact_records", pa.int64()), ("exact_contaminated", pa.bool_()),
    ("minhash_jaccard", pa.float64()), ("minhash_contaminated", pa.bool_()),
    ("contaminated", pa.bool_()), ("input_contaminated", pa.bool_()), ("answer_contaminated", pa.bool_()),
    ("choices_contaminated", pa.bool_()), ("longest_words", pa.int64()), ("longest_record", RECORD_STRUCT),
    ("short", pa.bool_()), ("short_found", pa.bool_()), ("methods", pa.list_(pa.string())), ("train_records", pa.int64()),
    ("matches", pa.list_(MATCH_STRUCT))])
DECON_SCHEMA = pa.schema([("shard", pa.string()), ("key", pa.string()), ("row", pa.int64()), ("line", pa.int64()),
                          ("items", pa.list_(pa.string()))])


class Accumulator:
    """Folds shard results (in shard order) into per-item counters and a bounded table of best matches."""

    def __init__(self, index: ContaminationIndex, config: ContaminationConfig):
        self.index, self.config = index, config
        n = index.num_items
        self.found = {k: np.zeros(len(t.set), bool) for k, t in index.tables.items()}
        self.records = np.zeros(n, np.int64)
        self.exact_records = np.zeros(n, np.int64)
        self.shared_max = np.zeros(n, np.int64)
        self.minhash_max = np.full(n, np.nan)
        self.longest = np.zeros(n, np.int64)
        self.longest_at: dict[int, dict] = {}     # item -> the record holding its longest run (first found)
        self.top: pa.Table | None = None
        self.shards: list[dict] = []

    def add(self, shard_index: int, summary: dict, matches: pa.Table) -> None:
        self.shards.append(summary)
        for k, idx in summary.get("found", {}).items():
            if int(k) in self.found and idx:
                self.found[int(k)][np.asarray(idx, np.int64)] = True
        if not matches.num_rows:
            return
        n = self.index.num_items
        item = matches.column("item").to_numpy()
        exact = matches.column("exact").to_numpy(zero_copy_only=False)
        shared = matches.column("shared").to_numpy()
        mh = matches.column("minhash").to_numpy(zero_copy_only=False).astype(np.float64)
        self.records += np.bincount(item, minlength=n)
        self.exact_records += np.bincount(item[exact], minlength=n)
        np.maximum.at(self.shared_max, item, shared)
        np.fmax.at(self.minhash_max, item, mh)
        longest = matches.column("longest").to_numpy().astype(np.int64)
        best = np.zeros(n, np.int64)
        np.maximum.at(best, item, longest)
        better = np.flatnonzero(best > self.longest)
        if len(better):
            # the first row (shard order, then row order) holding each item's new longest run
            hit = np.flatnonzero((longest == best[item]) & (best[item] > self.longest[item]))
            _, first = np.unique(item[hit], return_index=True)
            rows_ = matches.column("row").to_numpy()
            keys = matches.column("key")
            lines = matches.column("line")
            for j in hit[first]:
                self.longest_at[int(item[j])] = {"shard": summary["path"], "key": keys[int(j)].as_py(),
                                                 "row": int(rows_[j]), "line": lines[int(j)].as_py()}
            self.longest[better] = best[better]
        cand = matches.filter(pc.is_valid(matches.column("snippet")))
        cand = cand.append_column("shard_index", pa.array(np.full(cand.num_rows, shard_index, np.int64)))
        cand = cand.append_column("shard", pa.array([summary["path"]] * cand.num_rows, pa.string()))
        self.top = cand if self.top is None else pa.concat_tables([self.top, cand])
        self._trim()

    def _trim(self) -> None:
        t = self.top
        item = t.column("item").to_numpy()
        order = rank_order(item, t.column("exact").to_numpy(zero_copy_only=False), t.column("shared").to_numpy(),
                           t.column("minhash").to_numpy(zero_copy_only=False).astype(np.float64),
                           [t.column("shard_index").to_numpy(), t.column("row").to_numpy()])
        keep = top_mask(item, order, self.config.max_matches)
        self.top = t.take(pa.array(order[keep[order]]))

    def verdicts(self) -> dict[str, np.ndarray]:
        """Per item: scores and contamination per method."""
        idx, cfg = self.index, self.config
        n = idx.num_items
        found = np.zeros(n, np.int64)
        for k, t in idx.tables.items():
            hit = self.found[k][t.entry_key]
            found += np.bincount(t.items[hit], minlength=n)
        total = idx.total
        with np.errstate(divide="ignore", invalid="ignore"):
            frac = np.where(total > 0, found / np.maximum(total, 1), 0.0)
            rec_frac = np.where(total > 0, self.shared_max / np.maximum(total, 1), 0.0)
        empty = total == 0
        if cfg.ngram.score == "longest":     # one contiguous copy of at least `threshold` of the item's words
            ngram = (cfg.ngram.enabled & (self.longest > 0)
                     & (self.longest >= cfg.ngram.threshold * idx.words - 1e-9)) & ~empty
        else:
            ngram = (cfg.ngram.enabled & (found > 0) & (frac >= cfg.ngram.threshold - 1e-12)) & ~empty
        exact = (cfg.exact.enabled & (self.exact_records > 0)) & ~empty
        mh = np.nan_to_num(self.minhash_max, nan=-1.0)
        minhash = (cfg.minhash.enabled & (mh >= cfg.minhash.threshold)) & ~empty
        leaked = ngram | exact | minhash
        short = idx.short
        return {"found": found, "total": total, "fraction": frac, "record_fraction": rec_frac,
                "ngram": ngram, "exact_records": self.exact_records, "exact": exact,
                "minhash_jaccard": self.minhash_max, "minhash": minhash,
                # short items found go to their own table; they count only with count_short_items
                "contaminated": leaked & (~short | cfg.count_short_items), "short": short,
                "short_found": leaked & short, "counted": ~short | cfg.count_short_items,
                "longest": self.longest, "empty": empty, "records": self.records}


def matches_by_item(top: pa.Table | None, index: ContaminationIndex) -> dict[int, list[dict]]:
    out: dict[int, list[dict]] = {}
    if top is None or not top.num_rows:
        return out
    total = index.total
    for r in top.to_pylist():
        it = r["item"]
        out.setdefault(it, []).append({
            "shard": r["shard"], "key": r["key"], "row": r["row"], "line": r["line"], "shared": r["shared"],
            "fraction": (r["shared"] / total[it]) if total[it] else 0.0, "exact": r["exact"],
            "minhash": r["minhash"], "snippet": r["snippet"], "match_start": r["match_start"],
            "match_end": r["match_end"], "longest": r["longest"], "answer": r["answer"],
            "choices": r["choices"]})
    return out


def leak_forms(v: dict[str, np.ndarray], matches: dict[int, list[dict]], index: ContaminationIndex) -> None:
    """Per item, what leaked (into `v`): the input (the item is contaminated), the answer and the choices (after
    the input in one of the reported records; None: nothing to look for, the preset has no reader or the item
    no answer or choices)."""
    n = index.num_items
    answer = np.zeros(n, np.int8)      # 0 none checked, 1 checked and absent, 2 found
    choices = np.zeros(n, np.int8)
    for g in range(n):
        for m in matches.get(g, []):
            for arr, key in ((answer, "answer"), (choices, "choices")):
                if m[key] is not None:
                    arr[g] = max(arr[g], 2 if m[key] else 1)
    has_answer = np.array([bool(a) for a in index.answers] or [False] * n, bool)[:n]
    has_choices = np.array([bool(c) for c in index.choices] or [False] * n, bool)[:n]
    v["input_contaminated"] = v["contaminated"]
    v["answer_contaminated"] = np.where(has_answer, v["contaminated"] & (answer == 2), False)
    v["choices_contaminated"] = np.where(has_choices, v["contaminated"] & (choices == 2), False)
    v["has_answer"], v["has_choices"] = has_answer, has_choices


def items_table(bench_no: int, bench: Benchmark, index: ContaminationIndex, v: dict[str, np.ndarray],
                matches: dict[int, list[dict]], longest_at: dict[int, dict]) -> pa.Table:
    lo, hi = int(index.offsets[bench_no]), int(index.offsets[bench_no + 1])
    sl = slice(lo, hi)
    methods = [[m for m in ("ngram", "exact", "minhash") if v[m][g]] for g in range(lo, hi)]
    mj = v["minhash_jaccard"][sl]
    return pa.table({
        "index": pa.array(np.arange(hi - lo, dtype=np.int64)), "id": pa.array(bench.ids, pa.string()),
        "line": pa.array(bench.lines, pa.int64()), "text": pa.array(bench.texts, pa.string()),
        "words": pa.array(index.words[sl]), "empty": pa.array(v["empty"][sl]),
        "ngram_total": pa.array(v["total"][sl]), "ngram_found": pa.array(v["found"][sl]),
        "ngram_fraction": pa.array(v["fraction"][sl]), "ngram_record_fraction": pa.array(v["record_fraction"][sl]),
        "ngram_contaminated": pa.array(v["ngram"][sl]),
        "exact_records": pa.array(v["exact_records"][sl]), "exact_contaminated": pa.array(v["exact"][sl]),
        "minhash_jaccard": pa.array(mj, pa.float64(), mask=np.isnan(mj)),
        "minhash_contaminated": pa.array(v["minhash"][sl]),
        "contaminated": pa.array(v["contaminated"][sl]),
        "input_contaminated": pa.array(v["input_contaminated"][sl]),
        "answer_contaminated": pa.array(v["answer_contaminated"][sl], mask=~v["has_answer"][sl]),
        "choices_contaminated": pa.array(v["choices_contaminated"][sl], mask=~v["has_choices"][sl]),
        "longest_words": pa.array(v["longest"][sl]),
        "longest_record": pa.array([longest_at.get(g) for g in range(lo, hi)], RECORD_STRUCT),
        "short": pa.array(v["short"][sl]),
        "short_found": pa.array(v["short_found"][sl]), "methods": pa.array(methods, pa.list_(pa.string())),
        "train_records": pa.array(v["records"][sl]),
        "matches": pa.array([matches.get(g, []) for g in range(lo, hi)], pa.list_(MATCH_STRUCT)),
    }, schema=ITEMS_SCHEMA)


def _short(text: str, limit: int = 1200) -> str:
    return text if len(text) <= limit else text[:limit] + "…"


def worst_items(bench: Benchmark, lo: int, v: dict[str, np.ndarray], matches: dict[int, list[dict]],
                limit: int = WORST_ITEMS) -> list[dict]:
    """The most contaminated items first (contaminated, exact, highest score), with their best match."""
    hi = lo + len(bench)
    score = np.maximum(v["fraction"][lo:hi], np.nan_to_num(v["minhash_jaccard"][lo:hi], nan=0.0))
    order = np.lexsort((np.arange(hi - lo), -score, ~(v["exact_records"][lo:hi] > 0), ~v["contaminated"][lo:hi]))
    listed = ~(v["short"][lo:hi] & ~v["contaminated"][lo:hi])     # uncounted short items: their own table
    out = []
    for i in order[listed[order]][:limit]:
        g = lo + int(i)
        if not v["records"][g]:
            break
        best = (matches.get(g) or [None])[0]
        out.append({"id": bench.ids[i], "index": int(i), "line": bench.lines[i], "text": _short(bench.texts[i]),
                    "contaminated": bool(v["contaminated"][g]),
                    "methods": [m for m in ("ngram", "exact", "minhash") if v[m][g]],
                    "ngram_fraction": round(float(v["fraction"][g]), 4), "exact_records": int(v["exact_records"][g]),
                    "minhash_jaccard": None if np.isnan(v["minhash_jaccard"][g])
                    else round(float(v["minhash_jaccard"][g]), 4),
                    "input_contaminated": bool(v["input_contaminated"][g]),
                    "answer_contaminated": bool(v["answer_contaminated"][g]) if v["has_answer"][g] else None,
                    "choices_contaminated": bool(v["choices_contaminated"][g]) if v["has_choices"][g] else None,
                    "longest_words": int(v["longest"][g]),
                    "train_records": int(v["records"][g]), "match": best})
    return out


def short_items(bench: Benchmark, lo: int, v: dict[str, np.ndarray], matches: dict[int, list[dict]],
                limit: int = MAX_SHORT_LISTED) -> list[dict]:
    """The short items found (under min_item_words), in file order, with their best match."""
    found = np.flatnonzero(v["short_found"][lo:lo + len(bench)])
    out = []
    for i in found[:limit]:
        g = lo + int(i)
        out.append({"id": bench.ids[i], "index": int(i), "line": bench.lines[i], "text": _short(bench.texts[i]),
                    "methods": [m for m in ("ngram", "exact", "minhash") if v[m][g]],
                    "counted": bool(v["contaminated"][g]), "train_records": int(v["records"][g]),
                    "match": (matches.get(g) or [None])[0]})
    return out


def benchmark_summary(bench_no: int, bench: Benchmark, index: ContaminationIndex, v: dict[str, np.ndarray],
                      config: ContaminationConfig, matches: dict[int, list[dict]], files: list[str]) -> dict:
    lo, hi = int(index.offsets[bench_no]), int(index.offsets[bench_no + 1])
    n = hi - lo
    contaminated = int(v["contaminated"][lo:hi].sum())
    methods = config.methods()
    return {
        **bench.describe(),
        "items": n, "empty": int(v["empty"][lo:hi].sum()), "contaminated": contaminated,
        "clean": n - contaminated, "rate": round(contaminated / n, 6) if n else 0.0,
        "leaks": {"input": contaminated,
                  "answer": int(v["answer_contaminated"][lo:hi].sum()) if v["has_answer"][lo:hi].any() else None,
                  "choices": int(v["choices_contaminated"][lo:hi].sum()) if v["has_choices"][lo:hi].any() else None},
        "methods": {m: int((v[m] & v["counted"])[lo:hi].sum()) if methods[m]["enabled"] else None
                    for m in ("ngram", "exact", "minhash")},
        "parameters": {"methods": methods, "normalization": NORMALIZE},
        "short_items": {"min_item_words": index.min_item_words, "items": int(v["short"][lo:hi].sum()),
                        "found": int(v["short_found"][lo:hi].sum()), "counted": config.count_short_items,
                        "listed": short_items(bench, lo, v, matches)},
        "train_records_matched": int(v["records"][lo:hi].sum()),
        "files": [f"{bench.name}/{f}" for f in files],
        "warnings": list(bench.warnings),
        "worst": worst_items(bench, lo, v, matches),
    }


def decontaminate_tables(contaminated: np.ndarray, index: ContaminationIndex, item_labels: np.ndarray,
                         parts: Iterable[tuple[str, pa.Table]]) -> Iterable[pa.Table]:
    """Per shard: the training records matching a contaminated item, one row each with the items' labels."""
    for path, matches in parts:
        if not matches.num_rows:
            continue
        item = matches.column("item").to_numpy()
        sel = np.flatnonzero(contaminated[item])
        if not len(sel):
            continue
        rows = matches.column("row").to_numpy()[sel]
        item = item[sel]
        keys = matches.column("key").take(pa.array(sel))
        lines = matches.column("line").take(pa.array(sel))
        order = np.lexsort((item, rows))
        rows, item = rows[order], item[order]
        keys, lines = keys.take(pa.array(order)), lines.take(pa.array(order))
        start = np.ones(len(rows), bool)
        start[1:] = rows[1:] != rows[:-1]
        firsts = np.flatnonzero(start)
        offsets = np.append(firsts, len(rows)).astype(np.int32)
        labels = pa.array(item_labels[item], pa.string())
        yield pa.table({"shard": pa.array([path] * len(firsts), pa.string()),
                        "key": keys.take(pa.array(firsts)), "row": pa.array(rows[firsts]),
                        "line": lines.take(pa.array(firsts)),
                        "items": pa.ListArray.from_arrays(pa.array(offsets), labels)}, schema=DECON_SCHEMA)

