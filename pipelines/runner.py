"""The shard runner of every job: each shard not finished in the part store goes through the job's stage (in
this process or on Ray), its result is saved as soon as it finishes, progress is told as work goes.

A stage is `stage(path, *args, on_batch=None, handler=...) -> (summary dict, table)`; the summary counts the
shard's records in `records`. `handler` is the job's error policy for a shard that cannot be read
(`dataaudit.handlers`), passed on to the stage's shard loop.

A stage that can run a shard in pieces (the audit's: a large Parquet shard's row groups, `dataaudit.audit.pieces`)
has `stage.pieces(path, *args, target_bytes)` (each piece's part, or None: whole) and `stage.merge(results)` (the
shard's result from its pieces', or None: run it whole), and takes `piece=part`. Where the job has more lanes
than one (worker processes, Ray), its large shards then run as pieces on every lane; the shard is still the unit
of resume and of the part store.
"""
from __future__ import annotations

from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any, Callable, Sequence

from dataaudit.errors import DataAuditError
from dataaudit.io import fingerprint
from dataaudit.pipelines.engine import EngineOptions, cores, local_workers, piece_bytes, shard_sizes
from dataaudit.pipelines.tasks import run_tasks


class ShardFailed(DataAuditError):
    """A shard's stage failed outside what its shard loop isolates (the job's error policy re-raised, or the stage
    broke before reading): one line naming the shard."""


@dataclass(frozen=True)
class Piece:
    """A part of a shard that its stage runs alone (`part`: what the stage is given as `piece=`), the `number`-th
    of the shard's `count`."""

    path: str
    part: Any
    number: int
    count: int

    def __str__(self) -> str:   # how errors name it
        return f"{self.path} (piece {self.number + 1} of {self.count})"


@dataclass(frozen=True)
class _Unit:
    """The stage as the runner runs it, wherever that is (a class, not a closure: it pickles for worker processes
    and Ray). It records the shard's fingerprint before reading it (unless the stage records its own), so a rerun
    can tell a changed shard from its part, and turns an error that escaped the stage into one line naming the
    shard."""

    stage: Callable
    fingerprints: bool

    def __call__(self, item, *args, **kwargs):
        path, piece = (item.path, item) if isinstance(item, Piece) else (item, None)
        if piece is not None:
            kwargs = {**kwargs, "piece": piece.part}
        fp = None
        if self.fingerprints and (piece is None or piece.number == 0):   # the shard's, once
            try:
                fp = fingerprint(path)
            except OSError:
                fp = None      # the reader says why the shard cannot be read
        try:
            summary, table = self.stage(path, *args, **kwargs)
        except (DataAuditError, OSError):
            raise
        except Exception as exc:   # noqa: BLE001  (one line, never a traceback; the parts finished so far stay)
            text = " ".join(str(exc).split())[:1000]
            raise ShardFailed(f"{path}: {type(exc).__name__}: {text}" if text else f"{path}: {type(exc).__name__}") \
                from None
        if self.fingerprints:
            summary = {**summary, "fingerprint": fp}
        return summary, table


def run_units(paths: Sequence[str], store, stage: Callable, args: tuple, *, engine: str,
              options: EngineOptions = EngineOptions(), on_progress: Callable[[int, int], None] | None = None,
              processes: bool = False, only: Sequence[int] | None = None,
              nodes: Counter | None = None) -> tuple[list, int]:
    """Run `stage(path, *args, handler=options.handler)` on every shard not finished in `store`.

    `store.load(index, path)` gives a finished shard's summary (None if unfinished) and `store.save(index, path,
    summary, table)` records one: reruns skip finished shards. `on_progress(shards_done, records)` is told as work
    finishes, `records` summing the summaries' `records` (per batch in-process, per shard on Ray). `options.workers`
    caps the shards in flight on Ray; with `processes` (a stage and args that pickle) it is also how many shards the
    local engine runs at once, in worker processes. `only`: the indexes of the shards to run (an array job's slice,
    `pipelines.slices`; each keeps its index in `paths`, so its part is the one a single job writes). `nodes`
    counts the shards each Ray node ran (`run_tasks`). Returns the
    summaries in shard order (of `only` when given) and how many shards were resumed from `store`.
    """
    summaries: dict[int, dict] = {}
    pending = []
    indexes = list(range(len(paths))) if only is None else list(only)
    # a part is reused only for the same file (store.load compares fingerprints): hashes read in parallel
    with ThreadPoolExecutor(max_workers=min(8, len(indexes) or 1)) as pool:
        loaded = dict(zip(indexes, pool.map(store.load, indexes, [paths[i] for i in indexes])))
    for index in indexes:
        path, done = paths[index], loaded[index]
        if done is None:
            pending.append((index, path))
        else:
            summaries[index] = done
    # Finished shards, plus what the shard under way has counted batch by batch (in-process engine).
    counted = {"finished": sum(s["records"] for s in summaries.values()), "current": 0}

    def tell():
        if on_progress:
            on_progress(len(summaries), counted["finished"] + counted["current"])

    def on_rows(rows):
        counted["current"] += rows
        tell()

    held: dict[int, dict[int, tuple]] = {}   # a shard's pieces finished so far

    def on_done(index, item, result):
        if isinstance(item, Piece):
            got = held.setdefault(index, {})
            got[item.number] = result
            if len(got) < item.count:
                counted["finished"] += result[0]["records"]
                counted["current"] = 0
                tell()
                return
            del held[index]
            counted["finished"] -= sum(r[0]["records"] for n, r in got.items() if n != item.number)
            result = stage.merge([got[n] for n in range(item.count)])
            if result is None:   # the pieces cannot stand for the whole shard: it runs whole, here
                result = unit(item.path, *args, handler=options.handler)
            item = item.path
        path = item
        summary, table = result
        store.save(index, path, summary, table)
        summaries[index] = summary
        counted["finished"] += summary["records"]
        counted["current"] = 0
        tell()

    tell()
    items = pending
    lanes = options.workers or cores()
    pieces = hasattr(stage, "pieces") and lanes > 1 and (engine == "ray" or processes)
    lanes_by_size = engine == "local" and processes and options.workers is None
    # sized once for both decisions (an object in a store is a request)
    sizes = shard_sizes([p for _, p in pending]) if pieces or lanes_by_size else None
    if pieces:
        items = _in_pieces(pending, stage, args, lanes, sizes)
    if lanes_by_size:   # every core, for an input worth it
        options = replace(options, workers=local_workers([p for _, p in pending], len(items), sizes))
        if options.workers < 2:
            items = pending     # one lane after all: the shards run whole
    unit = _Unit(stage, store.fingerprints and not getattr(stage, "fingerprints", False))
    run_tasks(items, unit, args, on_done, engine=engine, options=options, on_batch=on_rows,
              handler=options.handler, processes=processes, nodes=nodes)
    return [summaries[i] for i in indexes], len(indexes) - len(pending)


def _in_pieces(pending: list, stage, args: tuple, lanes: int, sizes: list[int]) -> list:
    """The pending (index, path) items with each shard the stage cuts into pieces (of the job's bytes over
    `engine.PIECES_PER_LANE` per lane) replaced by its pieces, in order. `sizes`: the pending shards' bytes."""
    target = piece_bytes(sum(sizes), lanes)
    large = [path for (_, path), size in zip(pending, sizes) if 2 * size >= 3 * target]   # two pieces or more
    # each decision reads a footer and a few rows (a request or two for an object in a store): in parallel
    with ThreadPoolExecutor(max_workers=min(8, len(large) or 1)) as pool:
        cut = dict(zip(large, pool.map(lambda path: stage.pieces(path, *args, target), large)))
    items = []
    for index, path in pending:
        parts = cut.get(path)
        if parts:
            items += [(index, Piece(path, part, n, len(parts))) for n, part in enumerate(parts)]
        else:
            items.append((index, path))
    return items
