"""A large Parquet shard audited in pieces (runs of its row groups) on several cores at once, merged into exactly
the summary and flags the whole shard gives.

One shard on one core left the others idle: a corpus of one 5 GB file, or of 4 shards on 3 cores, waited on its
last shard. A piece is a unit of the job's engine like a shard (a lane or a Ray task); the runner
(`pipelines.runner`) merges a shard's pieces when the last one finishes, and saves the shard's part as before.

The audit of a shard is sequential in three ways; a shard is split only where none applies, and the merge checks:
- the plan (the shard's fields) comes from its first batch: each piece resolves its own from its first batch, and
  the merge takes the pieces only when their plans are all the first piece's (a string column that reads as
  identifiers in one part of the file and as text in another makes the plans differ);
- a stateful check (duplicate ids, contradictory preferences, tokenizer drift on the first N records, ...) carries
  what earlier batches saw: a shard on which one would run is not split (decided from its footer and its first
  rows), and a piece on which one ran makes the merge refuse;
- a read failure ends a shard, and checks failing on records are counted per shard: a piece that met either makes
  the merge refuse.
A refused merge has the runner audit the shard whole: the outputs are the whole shard's in every case.
"""
from __future__ import annotations

from collections import Counter
from hashlib import blake2b

import numpy as np
import pyarrow as pa

_PROBE_ROWS = 256         # rows of the first row group the split decision resolves the plan from
# Summary entries every piece must share with the first (what its plan made of the shard).
_SAME = ("path", "fields", "skipped", "problems", "formats", "unchecked", "not_decoded")


def split_parquet(path: str, config, target: int) -> list[tuple[int, ...]] | None:
    """The row groups of each piece of the Parquet shard `path`: round(compressed bytes / `target`) runs of
    consecutive row groups, of about equal bytes. None when it is not split: not Parquet, less than two pieces,
    tiny row groups (read in batches across them), a sample, or a stateful check that would run on its fields.
    Anything unreadable: None (the whole shard's audit reports it)."""
    from dataaudit.formats import format_of
    from dataaudit.sources.base import READ_ERRORS
    from dataaudit.sources.parquet import parquet_layout

    try:
        if config.sample is not None or format_of(path).name != "parquet":
            return None
        layout = parquet_layout(path)
    except (*READ_ERRORS, ValueError):
        return None
    count = 0 if layout is None else min(len(layout), round(sum(layout) / max(1, target)))
    if count < 2 or _stateful(path, config):
        return None
    # cut where the bytes before a row group's middle pass each k / count of the shard's
    ends = np.cumsum(layout)
    which = np.minimum((ends - np.asarray(layout) / 2) * count // ends[-1], count - 1).astype(np.int64)
    return [tuple(np.flatnonzero(which == k).tolist()) for k in range(count) if (which == k).any()]


def likely_units(paths, sizes: list[int], min_piece: int) -> int:
    """About how many units `paths` (of stored `sizes`) make: a Parquet shard as many as pieces of twice `min_piece`
    it holds, any other one. For the workers a command starts before planning (a guess: reading every footer to know
    is the job's own work)."""
    from dataaudit.formats import format_of

    def parquet(path: str) -> bool:
        try:
            return format_of(path).name == "parquet"
        except ValueError:     # not a shard format: the job says so
            return False

    return sum(max(1, size // (2 * min_piece)) if parquet(p) else 1 for p, size in zip(paths, sizes))


def _stateful(path: str, config) -> bool:
    """Whether a stateful check would run on the shard, by the plan of its footer and first rows."""
    from dataaudit.audit.plan import resolve_plan
    from dataaudit.dataset_info import entry_for
    from dataaudit.sources.parquet import parquet_first_rows

    try:
        pairs = entry_for(path, config.data.get("dataset_info"))
        first = parquet_first_rows(path, _PROBE_ROWS,
                                   lambda schema: resolve_plan(schema, config, pairs=pairs).columns())
        return bool(ran_stateful(resolve_plan(first.schema, config, first, pairs), config))
    except Exception:   # noqa: BLE001  (only a decision to split: the whole shard's audit says what is wrong)
        return True


def ran_stateful(plan, config) -> list[str]:
    """The stateful checks configured and not skipped on `plan`."""
    from dataaudit.checks import REGISTRY
    from dataaudit.checks.runnable import configured

    return [name for name, spec in REGISTRY.items()
            if spec.state is not None and configured(spec, config.check(name)) and name not in plan.skipped]


def plan_digest(plan) -> str:
    """A plan's fingerprint: equal for equal plans, in any process."""
    return blake2b(repr(plan).encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def merge_pieces(results: list[tuple[dict, pa.Table]], examples_per_check: int) -> tuple[dict, pa.Table] | None:
    """One shard's (summary, flags) from its pieces' in row order, or None when the pieces cannot stand for the
    whole shard (see the module's docstring). The flags are each piece's in the audit's order (row, check, field);
    the pieces' rows follow each other, so their concatenation is in that order too."""
    from dataaudit.stats.images import ImageStats
    from dataaudit.stats.lengths import LengthStats
    from dataaudit.stats.media import MediaStats

    summaries = [dict(s) for s, _ in results]
    marks = [s.pop("piece", None) for s in summaries]
    first = summaries[0]
    if any(m is None or not m["mergeable"] or m["plans"] != marks[0]["plans"] for m in marks) or \
            any(s["status"] != "ok" or any(s[k] != first[k] for k in (*_SAME, *_state_keys())) for s in summaries):
        return None
    out = dict(first)
    out["records"] = sum(s["records"] for s in summaries)
    out["flagged"] = sum(s["flagged"] for s in summaries)
    for key in ("checks", "severities"):
        out[key] = dict(sorted(sum((Counter(s[key]) for s in summaries), Counter()).items()))
    out["lengths"] = _merged(summaries, "lengths", LengthStats)
    out["images"] = _merged(summaries, "images", ImageStats)
    out["media"] = _merged(summaries, "media", MediaStats)
    for name, stat in out["media"].items():   # a whole shard keeps the kind its last files had
        stat["kind"] = next((s["media"][name]["kind"] for s in reversed(summaries)
                             if s["media"].get(name, {}).get("kind")), stat["kind"])
    examples: dict[str, list] = {}
    for s in summaries:
        for name, found in s["examples"].items():
            kept = examples.setdefault(name, [])
            kept.extend(found[: examples_per_check - len(kept)])
    out["examples"] = examples
    out["trained_example"] = next((s["trained_example"] for s in summaries if s["trained_example"] is not None),
                                  None)
    return out, pa.concat_tables([t for _, t in results])


def _merged(summaries: list[dict], key: str, kind) -> dict:
    """The per-field statistics `key` of the pieces, folded in order (sums, minima and maxima: exact)."""
    merged: dict = {}
    for s in summaries:
        for name, state in s[key].items():
            stat = kind.from_state(state)
            merged[name] = merged[name].merge(stat) if name in merged else stat
    return {name: stat.state() for name, stat in sorted(merged.items())}


def _state_keys() -> list[str]:
    from dataaudit.checks import REGISTRY

    return [name for name, spec in REGISTRY.items() if spec.state is not None]
