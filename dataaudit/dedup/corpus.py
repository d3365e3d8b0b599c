"""The documents of one side of a dedup run (train or validation) as global indices over its signature parts.

A document is known by its global index (gid): train shards in the order given, rows in shard order, then
the validation shards. `Corpus` maps gids back to (shard, row) and reads any column of the shards' signature
parts (row, key, ...) for a set of gids, one read per shard involved; the shingle sets (with verification) are
in an Arrow IPC file beside each part (`shingles_file`), read memory-mapped.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from dataaudit.io import open_arrow, read_parquet


def shingles_file(part: str) -> str:
    """The Arrow IPC file of a signature part's shingle sets (one `shingles` column, rows as in the part)."""
    return part.removesuffix(".sig.parquet") + ".shingles.arrow"


class Corpus:
    """The shards of one side and their signature parts: gid <-> (shard, row, key)."""

    def __init__(self, paths: list[str], parts: list[str], summaries: list[dict], base0: int):
        self.paths = paths
        self.parts = parts            # the signature part (Parquet) of each shard
        self.summaries = summaries
        counts = np.array([s["records"] for s in summaries], np.int64)
        self.base = base0 + np.concatenate(([0], np.cumsum(counts)[:-1])).astype(np.int64) if len(counts) \
            else np.zeros(0, np.int64)
        self.total = int(counts.sum())
        self.base0 = base0

    def read(self, shard: int, columns: list[str]) -> pa.Table:
        """Columns of one shard's signature part (memory-mapped)."""
        return read_parquet(self.parts[shard], columns)

    def shard_of(self, gid: np.ndarray) -> np.ndarray:
        return np.searchsorted(self.base, gid, side="right") - 1

    def take(self, gids: np.ndarray, name: str) -> pa.Array:
        """Column `name` of the parts for the given gids (any order, repeats allowed), in that order."""
        gids = np.asarray(gids, np.int64)
        if len(gids) == 0:
            return pa.array([], pa.string()) if name == "key" else pa.array([], pa.int64())
        uniq, inv = np.unique(gids, return_inverse=True)
        sh = self.shard_of(uniq)
        pieces = []
        for s in np.unique(sh):
            sel = uniq[sh == s]
            col = self.read(int(s), [name]).column(name)
            pieces.append(col.take(pa.array(sel - self.base[s])).combine_chunks())
        return pa.concat_arrays(pieces).take(pa.array(inv.astype(np.int64)))

    def column(self, gids: np.ndarray, name: str) -> dict[int, object]:
        """{gid: value of column `name` of its part} for the given gids (one read per shard involved)."""
        gids = np.unique(np.asarray(gids, np.int64))
        out: dict[int, object] = {}
        if len(gids) == 0:
            return out
        sh = self.shard_of(gids)
        for s in np.unique(sh):
            sel = gids[sh == s]
            col = self.read(int(s), [name]).column(name)
            vals = col.take(pa.array(sel - self.base[s])).to_pylist()
            out.update(zip(sel.tolist(), vals))
        return out


def shingle_sets(gids: np.ndarray, corpora: list[Corpus]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(sorted gids, offsets, values): the unique shingle hashes of each gid, from the parts. Corpora and
    their shards are visited in gid order, so the lists come out in gid order."""
    gids = np.unique(gids)
    values, lens = [], []
    for c in corpora:
        mine = gids[(gids >= c.base0) & (gids < c.base0 + c.total)]
        if len(mine) == 0:
            continue
        sh = c.shard_of(mine)
        for s in np.unique(sh):
            with open_arrow(shingles_file(c.parts[s])) as source:     # only the pages of these documents
                col = pa.ipc.open_file(source).read_all().column("shingles")
                lists = (col.chunk(0) if col.num_chunks == 1 else col.combine_chunks()).take(
                    pa.array(mine[sh == s] - c.base[s]))               # a copy: outlives the map
            lens.append(np.diff(lists.offsets.to_numpy()))
            values.append(lists.flatten().to_numpy(zero_copy_only=False))
    offsets = np.zeros(len(gids) + 1, np.int64)
    if lens:
        np.cumsum(np.concatenate(lens), out=offsets[1:])
    flat = np.concatenate(values).astype(np.uint64) if values else np.zeros(0, np.uint64)
    return gids, offsets, flat
