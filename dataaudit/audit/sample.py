"""`--sample N` / `--sample-fraction F`: a seeded sample of records spread over every shard, the same on every run,
engine and slice.

Each record gets a 64-bit draw from (seed, shard path, record number): splitmix64 of the shard's seeded hash plus the
record number, computed for whole ranges of rows at once. A record is in the sample when its draw is under the
sample's `threshold`: F * 2**64 for a fraction; for N records, the N-th smallest draw of all the input's records, so
exactly N are taken (the records of every shard are counted first: Parquet's footer says it, other formats are
read through once). Whether a record is in depends on its own draw only, never on what was read before it, so a
Parquet shard reads only the row groups that hold a sampled row.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Iterator, Sequence

import numpy as np
import pyarrow as pa

from dataaudit.audit.coalesce import coalesced
from dataaudit.audit.sample_draws import ALL, Z95, draws, wilson  # noqa: F401  (Z95: re-exported)
from dataaudit.sources.base import ROW

_CHUNK = 1 << 22       # rows drawn at once while looking for the N-th smallest draw


def chosen(sample: dict, path: str, rows: np.ndarray) -> np.ndarray:
    """Which of the records `rows` of `path` are in the sample (a bool per record)."""
    if sample.get("design") == "clusters":
        from dataaudit.audit.sample_clusters import in_clusters

        return in_clusters(sample["clusters"].get(path), rows, lambda: draws(sample["seed"], path, rows))
    threshold = sample["threshold"]
    if threshold >= ALL:
        return np.ones(rows.shape, bool)
    return draws(sample["seed"], path, rows) < np.uint64(threshold)


def filtered(sample: dict, path: str, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """The sampled records of each batch (by each record's own number, so the flags keep their rows)."""
    for batch in batches:
        keep = chosen(sample, path, batch.column(ROW).to_numpy(zero_copy_only=False))
        if keep.all():
            yield batch
        elif keep.any():
            yield batch.filter(pa.array(keep))


def parquet_row_groups(sample: dict, path: str, sizes: Sequence[int]) -> list[int]:
    """The row groups (of these sizes, in file order) that hold at least one sampled record."""
    wanted, start = [], 0
    for rg, n in enumerate(sizes):
        if n and chosen(sample, path, np.arange(start, start + n, dtype=np.int64)).any():
            wanted.append(rg)
        start += n
    return wanted


def plan_sample(paths: Sequence[str], seed: int, size: int | None = None, fraction: float | None = None,
                text_unit: str = "line", clusters: int | None = None) -> dict:
    """The sample's settings (what the config carries, so every shard, slice and engine takes the same records):
    seed, the size or fraction asked, the records of the input (`population`, for a size) and the `design`:
    "clusters" for a size when a shard is Parquet (dataaudit.audit.sample_clusters: `clusters` of them at least,
    default CLUSTERS; what saves reading), else "records" (a fraction: each record whose draw is under it; a size:
    the records with the N smallest draws, by `threshold`)."""
    from dataaudit.audit.sample_clusters import CLUSTERS, cluster_sizes, plan_clusters

    if fraction is not None:
        threshold = ALL if fraction >= 1 else int(fraction * ALL)
        return {"seed": seed, "size": None, "fraction": fraction, "threshold": threshold, "population": None,
                "design": "records"}
    with ThreadPoolExecutor(max_workers=min(8, len(paths) or 1)) as pool:
        found = list(pool.map(lambda p: cluster_sizes(p, text_unit), paths))
    sizes = [s for s, _ in found]
    population = sum(map(sum, sizes))
    plan = {"seed": seed, "size": size, "fraction": None, "threshold": ALL, "population": population,
            "design": "records"}
    if size >= population:
        return plan
    if any(parquet for _, parquet in found):      # row groups to skip: a cluster sample reads a few of them
        spans = plan_clusters(list(paths), sizes, seed, size, CLUSTERS if clusters is None else clusters)
        return {**plan, "threshold": None, "design": "clusters", "clusters": spans}
    # the draws are uniform: the N smallest of P lie under ~N/P of the range; 4x that (plus a margin for small N)
    # holds them all but with negligible probability, and when not, the whole range is looked at
    cutoff = min(ALL, int((4 * size / population + 64 / population) * ALL))
    while True:
        drawn = np.concatenate([_smallest(seed, p, sum(n), cutoff) for p, n in zip(paths, sizes)]
                               + [np.zeros(0, np.uint64)])
        if drawn.size >= size or cutoff >= ALL:
            break
        cutoff = ALL
    return {**plan, "threshold": int(np.partition(drawn, size - 1)[size - 1]) + 1}


def read_share(plan: dict) -> float:
    """The share of the input a sample (`plan_sample`'s plan) reads: a cluster sample its clusters' records (their row
    groups), any other every record (each one's draw decides)."""
    if plan.get("design") != "clusters" or not plan.get("population"):
        return 1.0
    rows = sum(stop - start for spans in plan["clusters"].values() for start, stop, _ in spans)
    return min(1.0, rows / plan["population"])


def _smallest(seed: int, path: str, rows: int, cutoff: int) -> np.ndarray:
    """The draws of the shard's records under `cutoff`."""
    kept = []
    for start in range(0, rows, _CHUNK):
        d = draws(seed, path, np.arange(start, min(rows, start + _CHUNK), dtype=np.int64))
        kept.append(d if cutoff >= ALL else d[d < np.uint64(cutoff)])
    return np.concatenate(kept) if kept else np.zeros(0, np.uint64)


def sample_section(report: dict, sample: dict, summaries: list[dict] | None = None) -> dict:
    """report.json's `sample`: what was sampled, how (`design`, `interval`), and each check's rate over the sampled
    records with its 95% interval (what the rate over the whole input lies in, 19 times in 20): Wilson's for a
    sample of records, Wilson's at the effective size for a cluster sample (dataaudit.audit.sample_clusters, with
    the clusters' counts from the shards' summaries); `severities`: the same for the records with a flag of each
    severity (--fail-on error>RATE)."""
    n = report["totals"]["samples"]
    design = sample.get("design", "records")
    interval = _cluster_rates(sample, summaries or []) if design == "clusters" else None

    def rate(name: str, flagged: int) -> dict:
        if interval is not None:
            p, ci, deff = interval(name)
            return {"flagged": flagged, "rate": None if p is None else round(p, 6), "ci95": ci, "deff": deff}
        return {"flagged": flagged, "rate": round(flagged / n, 6) if n else None, "ci95": wilson(flagged, n)}

    rates = {name: rate(name, c["flagged"]) for name, c in report["checks"].items() if c["ran"]}
    severities: dict[str, int] = {}
    for s in summaries or []:
        for sev, k in (s.get("severities") or {}).items():
            severities[sev] = severities.get(sev, 0) + k
    section = {"seed": sample["seed"], "size": sample["size"], "fraction": sample["fraction"],
               "population": sample["population"], "records": n, "design": design,
               "interval": INTERVALS[design], "rates": rates,
               "severities": {sev: rate(sev, severities.get(sev, 0)) for sev in ("error", "warning", "info")}}
    if design == "clusters":
        section["clusters"] = sum(len(v) for v in sample["clusters"].values())
    return {**section, "note": sample_note(section)}


INTERVALS = {"records": "wilson", "clusters": "wilson-deff"}


def _cluster_rates(sample: dict, summaries: list[dict]):
    """name -> (rate, ci95, deff) of a check or severity over the clusters of every shard."""
    from dataaudit.audit.sample_clusters import ratio_interval

    records, flagged = [], []
    for s in summaries:
        spans = sample["clusters"].get(s["path"]) or []
        counts = s.get("sample_clusters") or {}
        records.append(np.asarray(counts.get("records", [0] * len(spans)), np.int64))
        flagged.append(counts.get("flagged", {}))
    n_j = np.concatenate(records + [np.zeros(0, np.int64)])

    def interval(name: str):
        k_j = np.concatenate([np.asarray(f.get(name, [0] * r.size), np.int64) for f, r in zip(flagged, records)]
                             + [np.zeros(0, np.int64)])
        return ratio_interval(k_j, n_j, Z95)
    return interval


def sample_note(sample: dict) -> str:
    """What a sampled report covers, in one line (its first note; the console and the page say it too)."""
    asked = f"{sample['size']} records" if sample["size"] is not None else f"a fraction {sample['fraction']:g}"
    of = f" of {sample['population']}" if sample["population"] is not None else ""
    if sample.get("design") == "clusters":
        return (f"sample: {sample['records']}{of} records ({asked}, seed {sample['seed']}, in {sample['clusters']} "
                "clusters (row groups or blocks of records) spread over the shards): the counts are the sample's; "
                "sample.rates gives each check's rate with its 95% Wilson interval widened by the design effect of "
                "the clusters")
    return (f"sample: {sample['records']}{of} records ({asked}, seed {sample['seed']}, spread over every shard): the "
            "counts are the sample's; sample.rates gives each check's rate with its 95% Wilson interval")


def sampled_batches(sample: dict, path: str, columns: list[str] | None, batch_rows: int, decode_all: bool,
                    text_unit: str) -> Iterator[pa.RecordBatch]:
    """The shard's sampled records: of a Parquet shard, only the row groups holding one are read; other formats
    are read through (their records have no index to seek to)."""
    from dataaudit.formats import format_of, iter_shard
    from dataaudit.sources.parquet import iter_parquet_row_groups, parquet_row_group_sizes

    if format_of(path).name == "parquet":
        groups = parquet_row_groups(sample, path, parquet_row_group_sizes(path))
        batches = iter_parquet_row_groups(path, groups, columns, batch_rows, decode_all=decode_all,
                                          rows_kept=lambda rows: chosen(sample, path, rows))
    else:
        batches = filtered(sample, path, iter_shard(path, columns, batch_rows, decode_all=decode_all,
                                                    text_unit=text_unit))
    # a sample keeps a few records of each batch read (a 1.4% sample of 1 GB in batches of ~60 records: the checks'
    # fixed cost per batch was most of its time)
    yield from coalesced(batches, batch_rows)
