"""Image dedup, stage 1 (per shard): each record's image hashed twice: the xxh3-64 digest of its bytes (exact
copies) and its 64-bit perceptual hash (near copies: re-encodes, resizes, small crops and colour shifts).

The images are the image fields of the field rule (dataaudit.fields), probed exactly as the audit probes them
(dataaudit.images: bounded decode, paths inside the shard's folder only). A record's image is its first image
(in field order, then list order); a record without one (or with a zero-byte one) is counted and kept, never
clustered; an image that does not decode is compared by its bytes only.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import pyarrow as pa

from dataaudit.fields import FieldSpec, resolve_schema
from dataaudit.handlers import report_unreadable
from dataaudit.images.batch import ImageBatch, Limits
from dataaudit.images.phash import phash64
from dataaudit.sources import ERROR, KEY, LINE, ROW
from dataaudit.stage import ShardStage

PART_SCHEMA = pa.schema([("row", pa.int64()), ("line", pa.int64()), ("key", pa.string()), ("has_image", pa.bool_()),
                         ("decoded", pa.bool_()), ("digest", pa.uint64()), ("phash", pa.uint64()),
                         ("field", pa.string())])


@dataclass(frozen=True)
class ImageDedupSpec:
    """Every setting of an image dedup run (parts are reused by a rerun with the same `hash_fingerprint`)."""

    image_field: tuple[str, ...] | None = None   # default: every image field of the rule
    max_distance: int = 6                        # Hamming distance of near copies (of 64 bits)
    limits: Limits = Limits()
    batch_rows: int = 1024

    def hash_fingerprint(self) -> dict:
        return {"kind": "image", "version": 2, "image_field": list(self.image_field or []),
                "max_pixels": self.limits.max_pixels, "max_bytes": self.limits.max_bytes}


def first_images(ib: ImageBatch, n: int) -> np.ndarray:
    """The index in `ib` of each record's first image (-1: the record has none)."""
    first = np.full(n, -1, np.int64)
    order = np.lexsort((np.maximum(ib.pos, 0), ib.field, ib.rows))[::-1]
    first[ib.rows[order]] = order
    return first


def hash_batch(batch: pa.RecordBatch, spec: ImageDedupSpec, folder: str) -> tuple[pa.Table, list[str]]:
    """The part rows of one batch, and the image fields it used."""
    names = batch.schema.names
    fields = resolve_schema(batch.schema, FieldSpec(image=spec.image_field), batch).images
    n = batch.num_rows
    usable = batch.column(names.index(ERROR)).is_null().to_numpy(zero_copy_only=False)
    ib = ImageBatch.of(batch, fields, folder, spec.limits)
    first = first_images(ib, n) if len(ib) else np.full(n, -1, np.int64)
    has = (first >= 0) & usable
    pick = np.maximum(first, 0)
    has &= ib.nbytes[pick] > 0 if len(ib) else False     # zero bytes: nothing to compare (the audit flags it)
    decoded = has & (ib.decoded()[pick] if len(ib) else False)
    phash = np.zeros(n, np.uint64)
    if decoded.any():
        phash[decoded] = phash64(ib.grey32[pick[decoded]])
    digest = np.where(has, ib.digest[pick] if len(ib) else 0, 0).astype(np.uint64)
    where = ib.paths(pick[has]) if len(ib) else []
    field_names = np.full(n, None, object)
    field_names[np.flatnonzero(has)] = where
    table = pa.table({"row": batch.column(names.index(ROW)), "line": batch.column(names.index(LINE)),
                      "key": batch.column(names.index(KEY)),
                      "has_image": pa.array(has), "decoded": pa.array(decoded), "digest": pa.array(digest),
                      "phash": pa.array(phash), "field": pa.array(field_names.tolist(), pa.string())},
                     schema=PART_SCHEMA)
    return table, [c.name for c in fields]


@dataclass
class _HashState:
    summary: dict
    started: float
    tables: list[pa.Table] = field(default_factory=list)
    fields: dict[str, None] = field(default_factory=dict)


class ImageHashStage(ShardStage):
    """(summary, part table) of one shard; a shard that breaks part way keeps the records read before it."""

    def __init__(self, spec: ImageDedupSpec):
        self.spec = spec
        self.batch_rows = spec.batch_rows

    def start(self, path: str) -> _HashState:
        return _HashState({"path": path, "records": 0, "images": 0, "no_image": 0, "undecodable": 0,
                           "status": "ok", "error": None, "image_field": None}, time.time())

    def add(self, state: _HashState, batch: pa.RecordBatch) -> None:
        table, fields = hash_batch(batch, self.spec, os.path.dirname(state.summary["path"]))
        has = table.column("has_image").to_numpy(zero_copy_only=False)
        decoded = table.column("decoded").to_numpy(zero_copy_only=False)
        s = state.summary
        s["records"] += batch.num_rows
        s["images"] += int(has.sum())
        s["no_image"] += int((~has).sum())
        s["undecodable"] += int((has & ~decoded).sum())
        state.fields.update(dict.fromkeys(fields))
        state.tables.append(table)

    def finish(self, state: _HashState, error: str | None) -> tuple[dict, pa.Table]:
        s = state.summary
        if error is not None:
            s["status"], s["error"] = "unreadable", error
        s["image_field"] = ", ".join(state.fields) or None
        if s["status"] == "ok" and s["records"] and not state.fields:
            s["error"] = "no image field in this shard"
        s["seconds"] = round(time.time() - state.started, 3)
        return s, pa.concat_tables(state.tables) if state.tables else PART_SCHEMA.empty_table()


def hash_shard(path: str, spec: ImageDedupSpec, on_batch: Callable[[int], None] | None = None,
               handler: Callable[[BaseException, str], str] = report_unreadable) -> tuple[dict, pa.Table]:
    """(summary, part) of one shard (see `ImageHashStage`)."""
    return ImageHashStage(spec)(path, on_batch, handler)
