"""Stage 1, signatures: read one shard's text, normalize, shingle, hash, sign.

`SignStage` is a `dataaudit.stage.ShardStage` (the base streams the shard and hands a read failure to the
job's error policy); pipelines/dedup.py runs it in-process or as one Ray task per shard. Its output is one
Arrow table per shard, one row per record, in record order:

    row int64, key string, count int32 (shingles; 0 = empty or unreadable: never clustered),
    exact_hi uint64, exact_lo uint64 (XXH3-128 of the normalized text),
    sig fixed_size_binary[4 * num_perm] (the num_perm uint32 values, little-endian: `signature_matrix` reads
    them back; one Parquet value per row, no list levels: ~6x faster to write and read than a list column)
    [+ shingles large_list<uint64>: the sorted unique shingle hashes, only when candidates are verified; the
    part store keeps them in an Arrow IPC file beside the Parquet part (pipelines/dedup.py)]
"""
from __future__ import annotations

import os
import time
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import pyarrow as pa

from dataaudit.handlers import report_unreadable
from dataaudit.formats import read_schema
from dataaudit.sources import ERROR, KEY, LINE, ROW
from dataaudit.stage import ShardStage
from dataaudit.texts import DocumentText
from dataaudit.textops import char_ngram_hashes, normalize, word_ngram_hashes

from .config import DedupSpec
from .exact import exact_hashes
from .minhash import signatures_u32, word_signatures
from .repeats import Repeats
from .signature_columns import signature_array


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
    fields = [pa.field("row", pa.int64()), pa.field("line", pa.int64()), pa.field("key", pa.string()),
              pa.field("count", pa.int32()),
              pa.field("exact_hi", pa.uint64()), pa.field("exact_lo", pa.uint64()),
              pa.field("sig", pa.binary(4 * num_perm))]
    if with_shingles:
        fields.append(pa.field("shingles", pa.large_list(pa.uint64())))
    return pa.schema(fields)


def sign_batch(text: pa.Array, spec: DedupSpec, with_shingles: bool = False,
               images: tuple[np.ndarray, np.ndarray] | None = None) -> dict[str, pa.Array]:
    """Columns count, exact_hi, exact_lo, sig (+ shingles) for one array of texts; `images`: each record's images
    key (`--with-images`, dataaudit.dedup.joint), folded into its exact hash and signature."""
    n = len(text)
    norm = normalize(text, **spec.normalization())
    fused = word_signatures(norm, spec.ngram, spec.num_perm, spec.seed, with_shingles) \
        if spec.shingles == "word" else None
    if fused is not None:                    # one pass: no flat shingle arrays
        sig, count, sets = fused
    else:
        shingle = word_ngram_hashes if spec.shingles == "word" else char_ngram_hashes
        sh = shingle(norm, spec.ngram)
        sig, count = signatures_u32(sh.hash, sh.offsets(), spec.num_perm, spec.seed), sh.count
        sets = _unique_shingles(sh.doc, sh.hash, n) if with_shingles else None
    hi, lo = exact_hashes(norm)
    empty = count == 0
    hi[empty] = 0
    lo[empty] = 0
    if images is not None:
        from .joint import fold          # (--with-images only: the image readers load with it)

        hi, lo, sig = fold(count, hi, lo, sig, *images)
    out = {"count": pa.array(count.astype(np.int32)), "exact_hi": pa.array(hi), "exact_lo": pa.array(lo),
           "sig": signature_array(sig)}
    if with_shingles:
        out["shingles"] = sets if isinstance(sets, pa.Array) else \
            pa.LargeListArray.from_arrays(pa.array(sets[0]), pa.array(sets[1], pa.uint64()))
    return out


def warm_kernels(spec: DedupSpec, with_shingles: bool = False) -> None:
    """Sign one tiny batch: numba's first call sets up its registries (importing scipy.linalg for its BLAS check)
    and loads the cached kernels, ~0.5-0.7 s that a thread can spend while another opens and decodes the first
    shard. A failure here is left to the real batches to report."""
    try:
        sign_batch(pa.array(["a b c d e f"], pa.string()), spec, with_shingles)
    except Exception:       # noqa: BLE001 - only a warm-up
        pass


@dataclass
class _SignState:
    summary: dict
    started: float
    text: DocumentText         # each record's text under the field rule
    pool: ThreadPoolExecutor | None
    repeats: Repeats | None                           # texts seen in the shard (None: every record signed)
    tables: list[pa.Table] = field(default_factory=list)
    pending: deque = field(default_factory=deque)     # (row, line, key, errors, future, plan) of batches being signed


class SignStage(ShardStage):
    """(summary, table) for one shard. A shard that breaks part way keeps the records read before the break
    and is reported `unreadable` with the reader's error, as in the audit.

    With threads > 1 the batches of the shard are signed on a thread pool while the next ones are read (the
    kernels and pyarrow.compute release the GIL), at most 2 per thread in flight; tables stay in batch order.
    A text repeated in the shard is signed once (`repeats`), except with shingle sets or images (`--verify`,
    `--with-images`), where every record is signed."""

    def __init__(self, spec: DedupSpec, with_shingles: bool = False, threads: int = 1):
        self.spec = spec
        self.with_shingles = with_shingles
        self.threads = max(1, int(threads))
        self.batch_rows = spec.batch_rows
        self.text_unit = spec.text_unit
        self.table_schema = output_schema(spec.num_perm, with_shingles)

    def start(self, path: str) -> _SignState:
        pool = ThreadPoolExecutor(self.threads, thread_name_prefix="dedup-sign") if self.threads > 1 else None
        images = {"images": 0, "images_unread": 0} if self.spec.with_images else {}
        return _SignState({"path": path, "records": 0, "empty": 0, "unreadable_records": 0, "shingles": 0,
                           "status": "ok", "error": None, "text_field": None, **images}, time.time(),
                          DocumentText(self.spec.text_field), pool,
                          None if self.with_shingles or self.spec.with_images else Repeats())

    def schema(self, state: _SignState, path: str) -> pa.Schema | None:
        return read_schema(path)    # Parquet's footer names the text columns before reading

    def columns(self, state: _SignState, schema: pa.Schema | None) -> list[str] | None:
        if self.spec.with_images:
            return None     # the image columns too, whichever the field rule finds
        return state.text.columns(schema)

    def images(self, state: _SignState, batch: pa.RecordBatch) -> tuple[np.ndarray, np.ndarray] | None:
        """Each record's images key (`--with-images`), its images counted in the summary."""
        if not self.spec.with_images:
            return None
        from .joint import image_digests, images_key

        rows, order, digest, unread = image_digests(batch, os.path.dirname(state.summary["path"]))
        state.summary["images"] += len(rows)
        state.summary["images_unread"] += unread
        return images_key(batch.num_rows, rows, order, digest)

    def add(self, state: _SignState, batch: pa.RecordBatch) -> None:
        text = state.text(batch)
        row = batch.column(batch.schema.get_field_index(ROW))
        line = batch.column(batch.schema.get_field_index(LINE))
        key = batch.column(batch.schema.get_field_index(KEY))
        errors = batch.column(batch.schema.get_field_index(ERROR))
        images = self.images(state, batch)
        plan = state.repeats.plan(text) if state.repeats is not None else None
        if plan is not None and len(plan[0]) < len(text):
            text = text.take(pa.array(plan[0]))       # the texts not seen before in the shard
        if state.pool is None:
            self._collect(state, row, line, key, errors, sign_batch(text, self.spec, self.with_shingles, images), plan)
            return
        future = state.pool.submit(sign_batch, text, self.spec, self.with_shingles, images)
        state.pending.append((row, line, key, errors, future, plan))
        while len(state.pending) > 2 * self.threads:
            self._collect(state, *state.pending.popleft())

    def _collect(self, state: _SignState, row: pa.Array, line: pa.Array, key: pa.Array, errors: pa.Array,
                 cols: dict[str, pa.Array] | Future, plan: tuple[np.ndarray, np.ndarray] | None) -> None:
        if isinstance(cols, Future):
            cols = cols.result()
        if plan is not None:
            cols = state.repeats.fill(cols, *plan)
        count = cols["count"].to_numpy()
        summary = state.summary
        summary["records"] += len(row)
        summary["empty"] += int((count == 0).sum())
        summary["unreadable_records"] += len(errors) - errors.null_count
        summary["shingles"] += int(count.sum())
        state.tables.append(pa.table({"row": row, "line": line, "key": key, **cols}, schema=self.table_schema))

    def close(self, state: _SignState) -> None:
        if state.pool is not None:   # the shard ended without finish: stop signing the batches still queued
            state.pool.shutdown(wait=True, cancel_futures=True)

    def finish(self, state: _SignState, error: str | None) -> tuple[dict, pa.Table]:
        try:
            while state.pending:
                self._collect(state, *state.pending.popleft())
        finally:
            if state.pool is not None:
                state.pool.shutdown(cancel_futures=True)
        summary = state.summary
        if error is not None:
            summary["status"] = "unreadable"
            summary["error"] = error
        summary["text_field"] = state.text.label
        if summary["status"] == "ok" and summary["records"] and state.text.label is None:
            summary["error"] = "no text field in this shard"
        summary["seconds"] = round(time.time() - state.started, 3)
        table = pa.concat_tables(state.tables) if state.tables else self.table_schema.empty_table()
        return summary, table


def sign_shard(path: str, spec: DedupSpec, with_shingles: bool = False, threads: int = 1,
               on_batch: Callable[[int], None] | None = None,
               handler: Callable[[BaseException, str], str] = report_unreadable) -> tuple[dict, pa.Table]:
    """(summary, signature table) of one shard (see `SignStage`; `threads` sign its batches at once)."""
    return SignStage(spec, with_shingles, threads)(path, on_batch, handler)
