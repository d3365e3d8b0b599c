"""The per-shard signature stage: read one shard's text, normalize, shingle, hash, sign.

Engine-free (pipelines/dedup.py runs it in-process or as one Ray task per shard). Its output is one Arrow
table per shard, one row per record, in record order:

    row int64, key string, count int32 (shingles; 0 = empty or unreadable: never clustered),
    exact_hi uint64, exact_lo uint64 (XXH3-128 of the normalized text), sig fixed_size_list<uint32>[num_perm]
    [+ shingles large_list<uint64>: the sorted unique shingle hashes, only when candidates are verified]
"""
from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from typing import Callable

import numpy as np
import pyarrow as pa

from dataaudit.sources import ERROR, KEY, ROW, ShardReadError, iter_shard, read_schema
from dataaudit.sources.base import TEXT_NAMES
from dataaudit.textops import char_ngram_hashes, normalize, word_ngram_hashes

from .exact import exact_hashes
from .lsh import optimal_params
from .minhash import signatures_u32

SHINGLE_KINDS = ("word", "char")


@dataclass(frozen=True)
class DedupSpec:
    """Every setting of a dedup run. Signature parts depend only on `signature_fingerprint()`, so a rerun
    with another threshold (or with verification turned on) reuses the signatures already computed."""
    text_field: str | None = None      # default: "text", else "content", else the first string column
    nfc: bool = True
    lowercase: bool = True
    strip_punct: bool = False
    collapse_ws: bool = True
    shingles: str = "word"             # "word": word n-grams; "char": character n-grams
    ngram: int = 5
    num_perm: int = 128
    seed: int = 1
    threshold: float = 0.8
    verify: bool = False               # exact Jaccard of candidate pairs before clustering
    batch_rows: int = 4096

    def __post_init__(self):
        if self.shingles not in SHINGLE_KINDS:
            raise ValueError(f"shingles must be one of {', '.join(SHINGLE_KINDS)}, got {self.shingles!r}")
        if self.ngram < 1:
            raise ValueError(f"ngram must be >= 1, got {self.ngram}")
        if not 1 <= self.num_perm <= 1024:
            raise ValueError(f"num_perm must be between 1 and 1024, got {self.num_perm}")
        if not 0.0 < self.threshold < 1.0:
            raise ValueError(f"threshold must be between 0 and 1 (exclusive), got {self.threshold}")
        if self.batch_rows < 1:
            raise ValueError(f"batch_rows must be >= 1, got {self.batch_rows}")

    def bands(self) -> tuple[int, int]:
        return optimal_params(self.threshold, self.num_perm)

    def normalization(self) -> dict:
        return {"nfc": self.nfc, "lowercase": self.lowercase, "strip_punct": self.strip_punct,
                "collapse_ws": self.collapse_ws}

    def signature_fingerprint(self) -> dict:
        d = asdict(self)
        for k in ("threshold", "verify", "batch_rows"):
            d.pop(k)
        d["version"] = 1
        return d

    def as_dict(self) -> dict:
        b, r = self.bands()
        return {**asdict(self), "bands": b, "rows": r}


def _is_string(t: pa.DataType) -> bool:
    return pa.types.is_string(t) or pa.types.is_large_string(t)


def pick_text_field(schema: pa.Schema, configured: str | None = None) -> str | None:
    """The audit's rule: the configured name, else "text", else "content", else the first string column."""
    cols = {f.name: f.type for f in schema if f.name not in (KEY, ROW, ERROR, "__warning__")}
    if configured is not None:
        return configured
    for name in TEXT_NAMES:
        if name in cols:
            return name
    return next((n for n, t in cols.items() if _is_string(t) and not n.endswith(".dtype")), None)


def _initial_field(path: str, configured: str | None) -> tuple[str | None, bool]:
    """(field, final): Parquet knows its columns from the footer; JSONL and tar records are read with all
    their columns and the field is picked from the first batch that has a candidate."""
    if configured is not None:
        return configured, True
    schema = read_schema(path)
    if schema is None:
        return None, False
    return pick_text_field(schema), True


def _text_column(batch: pa.RecordBatch, field: str | None) -> pa.Array:
    idx = batch.schema.get_field_index(field) if field else -1
    if idx < 0:
        return pa.nulls(batch.num_rows, pa.string())
    col = batch.column(idx)
    if pa.types.is_null(col.type):
        return pa.nulls(batch.num_rows, pa.string())
    if pa.types.is_dictionary(col.type):
        col = col.dictionary_decode()
    if not _is_string(col.type):
        if hasattr(pa.types, "is_string_view") and pa.types.is_string_view(col.type):
            return col.cast(pa.large_string())
        return pa.nulls(batch.num_rows, pa.string())   # not text: nothing to compare
    return col


def _unique_shingles(doc: np.ndarray, h: np.ndarray, num_docs: int) -> pa.Array:
    order = np.lexsort((h, doc))
    d, v = doc[order], h[order]
    keep = np.ones(len(v), bool)
    if len(v) > 1:
        keep[1:] = (v[1:] != v[:-1]) | (d[1:] != d[:-1])
    d, v = d[keep], v[keep]
    offsets = np.zeros(num_docs + 1, np.int64)
    np.cumsum(np.bincount(d, minlength=num_docs), out=offsets[1:])
    return pa.LargeListArray.from_arrays(pa.array(offsets), pa.array(v, pa.uint64()))


def output_schema(num_perm: int, with_shingles: bool) -> pa.Schema:
    fields = [pa.field("row", pa.int64()), pa.field("key", pa.string()), pa.field("count", pa.int32()),
              pa.field("exact_hi", pa.uint64()), pa.field("exact_lo", pa.uint64()),
              pa.field("sig", pa.list_(pa.uint32(), num_perm))]
    if with_shingles:
        fields.append(pa.field("shingles", pa.large_list(pa.uint64())))
    return pa.schema(fields)


def sign_batch(text: pa.Array, spec: DedupSpec, with_shingles: bool = False) -> dict[str, pa.Array]:
    """Columns count, exact_hi, exact_lo, sig (+ shingles) for one array of texts."""
    n = len(text)
    norm = normalize(text, **spec.normalization())
    shingle = word_ngram_hashes if spec.shingles == "word" else char_ngram_hashes
    sh = shingle(norm, spec.ngram)
    sig = signatures_u32(sh.hash, sh.offsets(), spec.num_perm, spec.seed)
    hi, lo = exact_hashes(norm)
    empty = sh.count == 0
    hi[empty] = 0
    lo[empty] = 0
    out = {"count": pa.array(sh.count.astype(np.int32)), "exact_hi": pa.array(hi), "exact_lo": pa.array(lo),
           "sig": pa.FixedSizeListArray.from_arrays(pa.array(sig.reshape(-1)), spec.num_perm)}
    if with_shingles:
        out["shingles"] = _unique_shingles(sh.doc, sh.hash, n)
    return out


def sign_shard(path: str, spec: DedupSpec, with_shingles: bool = False,
               on_batch: Callable[[int], None] | None = None) -> tuple[dict, pa.Table]:
    """(summary, table) for one shard. A shard that breaks part way keeps the records read before the break
    and is reported `unreadable` with the reader's error, as in the audit."""
    started = time.time()
    schema = output_schema(spec.num_perm, with_shingles)
    tables: list[pa.Table] = []
    field = None
    summary = {"path": path, "samples": 0, "empty": 0, "unreadable_records": 0, "shingles": 0,
               "status": "ok", "error": None, "text_field": None}
    try:
        field, final = _initial_field(path, spec.text_field)
        columns = None if not final else [field] if field else []
        for batch in iter_shard(path, columns, batch_rows=spec.batch_rows):
            if not final:
                field = pick_text_field(batch.schema)
                final = field is not None
            cols = sign_batch(_text_column(batch, field), spec, with_shingles)
            errors = batch.column(batch.schema.get_field_index(ERROR))
            count = cols["count"].to_numpy()
            summary["samples"] += batch.num_rows
            summary["empty"] += int((count == 0).sum())
            summary["unreadable_records"] += len(errors) - errors.null_count
            summary["shingles"] += int(count.sum())
            tables.append(pa.table({"row": batch.column(batch.schema.get_field_index(ROW)),
                                    "key": batch.column(batch.schema.get_field_index(KEY)), **cols},
                                   schema=schema))
            if on_batch:
                on_batch(batch.num_rows)
    except ShardReadError as exc:
        summary["status"] = "unreadable"
        summary["error"] = str(exc)
    summary["text_field"] = field
    if summary["status"] == "ok" and summary["samples"] and field is None:
        summary["error"] = "no text field in this shard"
    summary["seconds"] = round(time.time() - started, 3)
    table = pa.concat_tables(tables) if tables else schema.empty_table()
    return summary, table
