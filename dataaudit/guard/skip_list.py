"""The skip list: samples that `dataaudit replay` confirmed bad, by (shard, key), so that a resumed run drops them.

    dataaudit replay SNAPSHOT --model train:make_loss --skip-list skip-list.parquet    # appends the culprits
    guard = DeviceGuard(loader, "audit.toml", device="cuda", skip_list="skip-list.parquet")

The file is Parquet with the string columns shard, key, reason; one row per (shard, key) (the first reason is
kept). An append rewrites the whole file through dataaudit.io's atomic writer, so a reader (a run resuming on
another node) never sees half of it. Membership is one vectorised Arrow `is_in` over the batch's shard and key
joined by a separator that neither holds (no per-sample Python).
"""
from __future__ import annotations

import logging
import numpy as np

log = logging.getLogger("dataaudit.guard")

COLUMNS = ("shard", "key", "reason")
SEP = "\x1f"   # unit separator: joins shard and key into one string to look up


def _schema():
    import pyarrow as pa
    return pa.schema([(c, pa.string()) for c in COLUMNS])


def read_skip_list(path):
    """The rows of a skip list, an Arrow table (empty when the file does not exist yet). ValueError for a file that is
    not one (other columns)."""
    import pyarrow as pa

    from dataaudit.io import exists, read_parquet

    if not exists(path):
        return pa.table({c: pa.array([], pa.string()) for c in COLUMNS})
    t = read_parquet(path)
    missing = [c for c in COLUMNS if c not in t.column_names]
    if missing:
        raise ValueError(f"{path}: not a skip list (no column {', '.join(missing)})")
    return t.select(list(COLUMNS)).cast(_schema())


def append_skip_list(path, rows: list[dict]) -> int:
    """Add rows ({"shard", "key", "reason"}) to the skip list at `path` (made if absent), dropping (shard, key)
    pairs it already holds; returns how many were added. Rows without a shard or a key are refused (ValueError):
    a sample that cannot be named cannot be skipped."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from dataaudit.io import atomic_path

    for r in rows:
        if r.get("shard") is None or r.get("key") is None:
            raise ValueError(f"skip list: a sample without a shard or a key cannot be listed: {r!r}")
    old = read_skip_list(path)
    seen = set(_joined(old["shard"].to_pylist(), old["key"].to_pylist()))
    new = []
    for r in rows:
        j = f"{r['shard']}{SEP}{r['key']}"
        if j not in seen:
            seen.add(j)
            new.append(r)
    if not new:
        return 0
    add = pa.table({c: pa.array([str(r.get(c) or "") for r in new], pa.string()) for c in COLUMNS})
    table = pa.concat_tables([old, add])
    with atomic_path(path) as tmp:   # makes the folder; readers see the old file or the new one
        pq.write_table(table, str(tmp))
    return len(new)


def _joined(shards, keys) -> list[str]:
    return [f"{s}{SEP}{k}" for s, k in zip(shards, keys)]


class SkipList:
    """The (shard, key) pairs of a skip list, for membership tests on batches."""

    def __init__(self, path):
        import pyarrow.compute as pc

        self.path = path
        t = read_skip_list(path)
        if t.num_rows == 0:
            log.warning("skip list %s is empty or does not exist yet: no sample is skipped", path)
        self.values = pc.binary_join_element_wise(t["shard"], t["key"], SEP).combine_chunks()
        self.size = t.num_rows

    def __len__(self) -> int:
        return self.size

    def mask(self, shards, keys) -> np.ndarray | None:
        """bool [B]: the samples that are listed (None when there is nothing to look up: no list rows, or a
        batch without provenance)."""
        if not self.size or shards is None or keys is None:
            return None
        import pyarrow as pa
        import pyarrow.compute as pc

        s, k = pa.array(list(shards)).cast(pa.string()), pa.array(list(keys)).cast(pa.string())
        joined = pc.binary_join_element_wise(s, k, SEP)   # null where either is missing: never listed
        return pc.is_in(joined, value_set=self.values).fill_null(False).to_numpy(zero_copy_only=False)


def as_skip_list(spec) -> SkipList | None:
    """A SkipList from a path (None: none; a SkipList: as it is)."""
    if spec is None or isinstance(spec, SkipList):
        return spec
    return SkipList(spec)





def take_rows(tree, keep: np.ndarray, n: int, payload: bool = False):
    """`tree` (a batch: dict, tuple or list of entries; or, `payload`, the collate guard's payload) with only the
    rows `keep` of its n-row entries: tensors whose first dimension is n (the payload's [C, n] results along their
    second), and lists of n items inside a dict (e.g. strings). Other entries are kept as they are."""
    import torch

    idx = torch.from_numpy(np.asarray(keep, dtype=np.int64))

    def rows(v, key=None):
        if isinstance(v, torch.Tensor):
            dim = 1 if payload and key in ("flagged", "value") and v.dim() == 2 else 0
            if v.dim() > dim and v.shape[dim] == n:
                return v.index_select(dim, idx.to(v.device, non_blocking=True))
            return v
        if isinstance(v, dict):
            return {k: rows(x, k) for k, x in v.items()}
        if isinstance(v, list) and len(v) == n and not (payload and key in ("calls", "dropped", "listed")):
            return [v[i] for i in keep.tolist()]
        return v

    if isinstance(tree, (tuple, list)):   # positions are entries, not rows
        return type(tree)(rows(v) for v in tree)
    return rows(tree)


__all__ = ["SkipList", "append_skip_list", "read_skip_list", "as_skip_list", "take_rows", "COLUMNS"]
