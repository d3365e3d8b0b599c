"""`--sample N` as a two-stage cluster sample: what makes a sample of a large Parquet corpus cheap, and its intervals.

A record-level sample of 10,000 records lands in every row group of a 1 GB corpus, so every row group is decoded
(23% of the full audit's time). Here the first stage picks `m` clusters (a Parquet row group; in other formats a
block of BLOCK consecutive records) with probability proportional to their records, systematically over every
shard in the order given (one seeded random start, a step of population / m records: every shard at least a step
long gets a cluster, the others with a chance proportional to their size); the second stage takes N / m records of
each hit cluster, the ones with the smallest draws (dataaudit.audit.sample.draws). Every record is in the sample
with the same probability N / population, so the sample's rate estimates the whole input's rate without weights;
only the clusters hit are read.

The interval accounts for the clustering: the rate is the ratio estimator sum(k_j) / sum(n_j) over the clusters,
its variance the between-cluster (ultimate cluster, with replacement) estimate m / (m - 1) * sum((k_j - p n_j)^2) /
(sum n_j)^2; the design effect is that over the binomial variance p (1 - p) / n (floored at 1: a sample never claims
more than records drawn one by one), and the interval is Wilson's score interval at the effective size n / deff, with
Student's t quantile for m - 1 degrees of freedom in place of the normal's when the design effect is over 1 (the
variance was measured between m clusters).
"""
from __future__ import annotations

import numpy as np

# clusters a sample of N records is drawn from (more when there are more shards): each costs a row group's decode
# (on the 1 GB benchmark corpus, 16 instead of 32 saved ~0.5 s of a ~5 s sample), and its interval has m - 1 degrees
# of freedom
CLUSTERS = 16
BLOCK = 10_000         # records per cluster in formats without row groups (make_corpus writes 10,000-row groups)


def cluster_sizes(path: str, text_unit: str = "line") -> tuple[list[int], bool]:
    """The records of each cluster of a shard: its row groups (Parquet's footer), else blocks of BLOCK records
    (read through once; a shard that breaks counts the records before the break); and whether it is Parquet."""
    from dataaudit.audit.sample_draws import count_records
    from dataaudit.formats import format_of
    from dataaudit.sources.base import READ_ERRORS
    from dataaudit.sources.parquet import parquet_row_group_sizes

    try:
        if format_of(path).name == "parquet":
            return parquet_row_group_sizes(path), True
    except READ_ERRORS:
        return [], True
    n = count_records(path, text_unit)
    return [min(BLOCK, n - start) for start in range(0, n, BLOCK)], False


def plan_clusters(paths: list[str], sizes: list[list[int]], seed: int, size: int, clusters: int = CLUSTERS) -> dict:
    """The clusters of the sample and the records taken from each: {path: [[start, stop, limit], ...]}, a cluster
    being records [start, stop) of which those whose draw is <= limit are taken."""
    from dataaudit.audit.sample_draws import draws

    lengths = np.array([n for s in sizes for n in s], dtype=np.int64)
    owner = np.array([i for i, s in enumerate(sizes) for _ in s], dtype=np.int64)
    starts = np.concatenate([np.concatenate([[0], np.cumsum(s)[:-1]]).astype(np.int64) if s else
                             np.zeros(0, np.int64) for s in sizes] + [np.zeros(0, np.int64)])
    population = int(lengths.sum())
    m = int(min(size, max(clusters, sum(1 for s in sizes if sum(s)))))
    step = population / m
    # the random start: a draw of its own (no shard is named "" with a NUL in front)
    start = int(draws(seed, "\0clusters", np.zeros(1, np.int64))[0]) / 2.0 ** 64 * step
    hits = np.searchsorted(np.cumsum(lengths), start + step * np.arange(m), side="right")
    takes = np.full(m, size // m, dtype=np.int64)
    takes[: size % m] += 1
    per_cluster = np.bincount(hits, weights=takes, minlength=lengths.size).astype(np.int64)
    plan: dict[str, list] = {p: [] for p in paths}
    for c in np.flatnonzero(per_cluster):
        path, lo, n = paths[owner[c]], int(starts[c]), int(lengths[c])
        take = min(int(per_cluster[c]), n)
        d = draws(seed, path, np.arange(lo, lo + n, dtype=np.int64))
        plan[path].append([lo, lo + n, int(np.partition(d, take - 1)[take - 1])])
    return {p: spans for p, spans in plan.items() if spans}


def in_clusters(spans: list, rows: np.ndarray, row_draws) -> np.ndarray:
    """Which records `rows` are taken by a shard's cluster `spans` ([start, stop, limit] each); `row_draws()`: the
    records' draws (computed only when some record is in a cluster)."""
    if not spans or not rows.size:
        return np.zeros(rows.shape, bool)
    lo = np.array([s[0] for s in spans], dtype=np.int64)
    hi = np.array([s[1] for s in spans], dtype=np.int64)
    limit = np.array([s[2] for s in spans], dtype=np.uint64)
    at = np.searchsorted(lo, rows, side="right") - 1
    inside = (at >= 0) & (rows < hi[np.maximum(at, 0)])
    if not inside.any():
        return inside
    return inside & (row_draws() <= limit[np.maximum(at, 0)])


def cluster_of(spans: list, rows: np.ndarray) -> np.ndarray:
    """The index (in `spans`) of the cluster each record of `rows` is in (records of the sample only)."""
    return np.searchsorted(np.array([s[0] for s in spans], dtype=np.int64), rows, side="right") - 1


def ratio_interval(k: np.ndarray, n: np.ndarray, z: float) -> tuple[float | None, list[float] | None, float | None]:
    """The rate sum(k) / sum(n) of a cluster sample (k_j flagged of n_j records in cluster j), its 95% interval
    (Wilson at the effective size) and the design effect (see the module's docstring); (None, None, None) with no
    record, a design effect of 1 with fewer than two clusters (no between-cluster variance to measure)."""
    from dataaudit.audit.sample_draws import wilson

    k, n = np.asarray(k, np.float64), np.asarray(n, np.float64)
    total = n.sum()
    if total <= 0:
        return None, None, None
    p = k.sum() / total
    m = int(np.count_nonzero(n))
    binomial = p * (1 - p) / total
    deff = 1.0
    if m >= 2 and binomial > 0:
        var = m / (m - 1) * float(((k - p * n) ** 2).sum()) / total ** 2
        deff = max(1.0, var / binomial)
    effective = total / deff
    # a variance measured between m clusters has m - 1 degrees of freedom: Student's quantile instead of the normal's
    quantile = t975(m - 1) if deff > 1 else z
    return float(p), [float(x) for x in wilson(p * effective, effective, quantile)], round(float(deff), 4)


# Student's t 0.975 quantiles for 1..29 degrees of freedom (beyond: the Cornish-Fisher expansion, within 2e-4)
_T975 = (12.7062, 4.3027, 3.1824, 2.7764, 2.5706, 2.4469, 2.3646, 2.3060, 2.2622, 2.2281, 2.2010, 2.1788, 2.1604,
         2.1448, 2.1314, 2.1199, 2.1098, 2.1009, 2.0930, 2.0860, 2.0796, 2.0739, 2.0687, 2.0639, 2.0595, 2.0555,
         2.0518, 2.0484, 2.0452)


def t975(df: int) -> float:
    """Student's t 0.975 quantile for `df` degrees of freedom (scipy.special.stdtrit would cost 0.4 s of import)."""
    if df < len(_T975):
        return _T975[df - 1]
    z = 1.959963984540054
    return z + (z ** 3 + z) / (4 * df) + (5 * z ** 5 + 16 * z ** 3 + 3 * z) / (96 * df ** 2)


def records_per_cluster(spans: list, rows: np.ndarray) -> np.ndarray:
    """How many of the records `rows` (all in the sample) each cluster of `spans` holds."""
    return np.bincount(cluster_of(spans, rows), minlength=len(spans)).astype(np.int64)


def flagged_per_cluster(spans: list, flags) -> dict[str, list[int]]:
    """Check or severity -> the records it flags in each cluster of `spans` (a record counted once per name), from a
    shard's flags table (`row`, `check`, `severity`); names that flag nothing are left out."""
    out: dict[str, list[int]] = {}
    if not flags.num_rows:
        return out
    rows = flags.column("row").to_numpy(zero_copy_only=False).astype(np.int64)
    for column in ("check", "severity"):
        names = np.asarray(flags.column(column).to_pylist(), dtype=object)
        for name in sorted(set(names.tolist())):
            mine = np.unique(rows[names == name])
            out[name] = records_per_cluster(spans, mine).tolist()
    return out
