"""Stage 2, buckets (map): one unit per shard's signature part.

The band hashes of its non-empty documents and their exact (XXH3-128) hashes, each with the document's gid,
hash-partitioned into P partitions: one Arrow IPC file per kind whose record batch p holds partition p (read
back memory-mapped, batch by batch, by stage 3). P grows with the corpus, so a reduce unit stays small.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from dataaudit.io import atomic_path, join, read_parquet

from .corpus import Corpus
from .lsh import band_hashes
from .signature_columns import signature_matrix

PARTITION_BYTES = 64 << 20       # auto partitions: about this much band/exact entries per reduce unit


@dataclass(frozen=True)
class MapUnit:
    """One shard's map work: its signature part, the gid of its first row, and the two files it writes."""
    signatures: str
    base: int
    band_file: str
    exact_file: str


def partition_count(nonempty_docs: int, bands: int, partitions: int | str) -> int:
    """P: as given, or ("auto") enough partitions for about PARTITION_BYTES of entries each."""
    if partitions == "auto":
        return max(1, math.ceil(nonempty_docs * (16 * bands + 24) / PARTITION_BYTES))
    parts = int(partitions)
    if parts < 1:
        raise ValueError(f"partitions must be >= 1, got {partitions}")
    return parts


def map_units(corpora: dict[str, Corpus], work: str | os.PathLike) -> list[MapUnit]:
    """The map units of every shard of every side ({"train": ..., "val": ...}), in gid order."""
    return [MapUnit(c.parts[i], int(c.base[i]), join(work, f"bands-{side}-{i:05d}.arrow"),
                    join(work, f"exact-{side}-{i:05d}.arrow"))
            for side, c in corpora.items() for i in range(len(c.paths))]


def _partition_of(keys: np.ndarray, parts: int) -> np.ndarray:
    # the narrowest integer type: numpy's stable argsort is a radix sort for 8- and 16-bit ones (~3x faster)
    kind = np.uint8 if parts <= 1 << 8 else np.uint16 if parts <= 1 << 16 else np.int64
    return (keys % np.uint64(parts)).astype(kind) if parts > 1 else np.zeros(len(keys), kind)


def _write_partitioned(path: str, columns: dict[str, np.ndarray], part: np.ndarray, parts: int) -> None:
    if parts > 1:
        order = np.argsort(part, kind="stable")
        bounds = np.searchsorted(part[order], np.arange(parts + 1))
        columns = {k: v[order] for k, v in columns.items()}
    else:                                   # one partition: already in order
        bounds = np.array([0, len(part)])
    table = pa.table({k: pa.array(v) for k, v in columns.items()})
    with atomic_path(path) as tmp, pa.OSFile(str(tmp), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
        for p in range(parts):
            writer.write_batch(table.slice(bounds[p], bounds[p + 1] - bounds[p]).to_batches(max_chunksize=None)[0]
                               if bounds[p + 1] > bounds[p] else pa.RecordBatch.from_pylist([], table.schema))


def map_shard(unit: MapUnit, bands: int, rows: int, parts: int) -> int:
    """Partitioned (band hash, gid) and (exact hash, gid) entries of one shard's non-empty documents.
    Returns the number of documents entered."""
    table = read_parquet(unit.signatures, ["count", "exact_hi", "exact_lo", "sig"])
    count = table.column("count").to_numpy()
    keep = np.flatnonzero(count > 0)
    gid = (unit.base + keep).astype(np.int64)
    hi = table.column("exact_hi").to_numpy()[keep]
    lo = table.column("exact_lo").to_numpy()[keep]
    sig = signature_matrix(table.column("sig"))[keep]
    bh = band_hashes(sig, bands, rows)                              # (n, bands)
    keys = bh.reshape(-1)
    bgid = np.repeat(gid, bands)
    _write_partitioned(unit.band_file, {"key": keys, "gid": bgid}, _partition_of(keys, parts), parts)
    _write_partitioned(unit.exact_file, {"hi": hi, "lo": lo, "gid": gid}, _partition_of(hi, parts), parts)
    return len(keep)
