"""What both sample designs (records: dataaudit.audit.sample; clusters: sample_clusters) are made of: each
record's seeded 64-bit draw, a shard's record count, and the Wilson score interval."""
from __future__ import annotations

import math

import numpy as np

from dataaudit.sources.base import READ_ERRORS

ALL = 1 << 64          # a threshold every draw is under: the whole input
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
Z95 = 1.959963984540054


def _shard_key(seed: int, path: str) -> np.uint64:
    import xxhash

    return np.uint64(xxhash.xxh3_64_intdigest(path.encode("utf-8", "surrogatepass"), seed=seed & (ALL - 1)))


def draws(seed: int, path: str, rows: np.ndarray) -> np.ndarray:
    """The uint64 draw of each record number in `rows` of the shard `path` (splitmix64: a bijection of its input, so
    two records of a shard never share a draw)."""
    with np.errstate(over="ignore"):
        z = _shard_key(seed, path) + rows.astype(np.uint64) * _GOLDEN
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def count_records(path: str, text_unit: str = "line") -> int:
    """The records of a shard: Parquet's footer, else a read through it (a shard that breaks counts the records
    read before the break; the audit reports it unreadable)."""
    from dataaudit.formats import format_of, iter_shard
    from dataaudit.sources.parquet import parquet_row_group_sizes

    try:
        if format_of(path).name == "parquet":
            return sum(parquet_row_group_sizes(path))
    except READ_ERRORS:
        return 0
    n = 0
    try:
        for batch in iter_shard(path, batch_rows=65536, text_unit=text_unit):
            n += batch.num_rows
    except READ_ERRORS:
        pass
    return n


def wilson(k: int, n: int, z: float = Z95) -> list[float] | None:
    """The Wilson score interval of a rate of k in n (None for n = 0), rounded to 6 decimals."""
    if n <= 0:
        return None
    p = k / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return [round(max(0.0, centre - half), 6), round(min(1.0, centre + half), 6)]
