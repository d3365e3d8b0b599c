"""Image dedup, stage 1 (per shard): every image of each record hashed three times: the xxh3-64 digest of its
bytes (exact copies), its 64-bit perceptual hash (near copies: re-encodes, resizes, small crops and colour shifts)
and the perceptual hash of its mirror image (horizontally flipped copies, for `--against`).

The images are the image fields of the field rule (dataaudit.fields), probed exactly as the audit probes them
(dataaudit.images: bounded decode, paths inside the shard's folder only). A record's images are all of them, in
field order then list order (`images`, one struct per image); a record without one, or with one that holds no bytes
(missing, zero-byte), is counted and kept, never clustered; an image that does not decode is compared by its bytes
only.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dataaudit.fields import FieldSpec, resolve_schema
from dataaudit.handlers import report_unreadable
from dataaudit.images.batch import ImageBatch, Limits
from dataaudit.images.phash import phash64
from dataaudit.sources import ERROR, KEY, LINE, ROW
from dataaudit.stage import ShardStage

IMAGE = pa.struct([("digest", pa.uint64()), ("phash", pa.uint64()), ("flipped", pa.uint64()),
                   ("decoded", pa.bool_()), ("nbytes", pa.int64()), ("path", pa.string())])
PART_SCHEMA = pa.schema([("row", pa.int64()), ("line", pa.int64()), ("key", pa.string()), ("has_image", pa.bool_()),
                         ("images", pa.list_(IMAGE)), ("field", pa.string())])


@dataclass(frozen=True)
class ImageDedupSpec:
    """Every setting of an image dedup run (parts are reused by a rerun with the same `hash_fingerprint`)."""

    image_field: tuple[str, ...] | None = None   # default: every image field of the rule
    max_distance: int = 6                        # Hamming distance of near copies (of 64 bits)
    limits: Limits = Limits()
    batch_rows: int = 1024

    def hash_fingerprint(self) -> dict:
        # 3: every image of a record (a list of structs), with the hash of its mirror image; 4: its size and path
        return {"kind": "image", "version": 4, "image_field": list(self.image_field or []),
                "max_pixels": self.limits.max_pixels, "max_bytes": self.limits.max_bytes}


def image_order(ib: ImageBatch) -> np.ndarray:
    """The images of `ib` in record order, then field order, then list order."""
    return np.lexsort((np.maximum(ib.pos, 0), ib.field, ib.rows))


def hash_images(ib: ImageBatch) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(pHash, pHash of the mirror image, decoded) of every image of `ib` (0 where it does not decode)."""
    decoded = ib.decoded() & (ib.nbytes > 0)
    phash, flipped = np.zeros(len(ib), np.uint64), np.zeros(len(ib), np.uint64)
    if decoded.any():
        grey = ib.grey32[decoded]
        phash[decoded] = phash64(grey)
        flipped[decoded] = phash64(grey[:, :, ::-1])   # the reduced image mirrored: the mirror image's reduction
    return phash, flipped, decoded


def hash_batch(batch: pa.RecordBatch, spec: ImageDedupSpec, folder: str) -> tuple[pa.Table, list[str]]:
    """The part rows of one batch, and the image fields it used."""
    names = batch.schema.names
    fields = resolve_schema(batch.schema, FieldSpec(image=spec.image_field), batch).images
    n = batch.num_rows
    usable = batch.column(names.index(ERROR)).is_null().to_numpy(zero_copy_only=False)
    ib = ImageBatch.of(batch, fields, folder, spec.limits)
    order = image_order(ib) if len(ib) else np.zeros(0, np.int64)
    rows = ib.rows[order] if len(ib) else np.zeros(0, np.int64)
    count = np.bincount(rows, minlength=n)
    empty = np.bincount(rows, weights=(ib.nbytes[order] <= 0), minlength=n) if len(ib) else np.zeros(n)
    has = (count > 0) & (empty == 0) & usable   # an image without bytes: nothing to compare (the audit flags it)
    phash, flipped, decoded = hash_images(ib) if len(ib) else (np.zeros(0, np.uint64),) * 2 + (np.zeros(0, bool),)
    offsets = np.zeros(n + 1, np.int32)
    np.cumsum(count, out=offsets[1:])
    images = pa.ListArray.from_arrays(pa.array(offsets), pa.StructArray.from_arrays(
        [pa.array(ib.digest[order] if len(ib) else np.zeros(0, np.uint64), pa.uint64()),
         pa.array(phash[order], pa.uint64()), pa.array(flipped[order], pa.uint64()),
         pa.array(decoded[order], pa.bool_()), pa.array(ib.nbytes[order] if len(ib) else np.zeros(0, np.int64)),
         pa.array(ib.paths(order) if len(ib) else [], pa.string())], fields=list(IMAGE)))
    first = np.full(n, -1, np.int64)
    with_images, at = np.unique(rows, return_index=True)
    first[with_images] = order[at]             # each record's first image, for its field name
    field_names = np.full(n, None, object)
    field_names[np.flatnonzero(has)] = ib.paths(first[has]) if has.any() else []
    table = pa.table({"row": batch.column(names.index(ROW)), "line": batch.column(names.index(LINE)),
                      "key": batch.column(names.index(KEY)), "has_image": pa.array(has), "images": images,
                      "field": pa.array(field_names.tolist(), pa.string())}, schema=PART_SCHEMA)
    return table, [c.name for c in fields]


def record_images(table: pa.Table) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """(the record of each image, {digest, phash, flipped, decoded} per image) of the records of a part table that
    have an image (`has_image`), records numbered by their row in `table`."""
    has = table.column("has_image").to_numpy(zero_copy_only=False).astype(bool)
    lists = table.column("images").combine_chunks()
    lengths = pc.fill_null(pc.list_value_length(lists), 0).to_numpy(zero_copy_only=False)
    owner = np.repeat(np.arange(len(lists), dtype=np.int64), lengths)
    flat = lists.flatten()
    keep = has[owner] if len(owner) else np.zeros(0, bool)
    cols = {name: flat.field(name).to_numpy(zero_copy_only=False)[keep] for name in ("digest", "phash", "flipped",
                                                                                     "decoded")}
    cols["decoded"] = cols["decoded"].astype(bool)
    return owner[keep], cols


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
        _, images = record_images(table)
        s = state.summary
        s["records"] += batch.num_rows
        s["images"] += len(images["decoded"])
        s["no_image"] += int((~has).sum())
        s["undecodable"] += int((~images["decoded"]).sum())
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
