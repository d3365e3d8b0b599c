"""Where a job's units run: the options every job takes (EngineOptions) and the engine they choose for an input."""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Callable, Sequence

from dataaudit.extras import available
from dataaudit.handlers import report_unreadable
from dataaudit.io import is_uri, stored_size

# auto engine, a job without local lanes (one shard at a time here): below this much input, starting Ray costs more
# than it saves; and on fewer cores than LOCAL_RAY_MIN_CORES a Ray of its own (driver, GCS, raylet and workers on the
# same cores, ~4 s of start) loses whatever the size. On 2 cores, 1 GB in 16 shards, auto's local Ray against
# --engine local: clean 12.9-15.4 s against 9.3-10.0 s, dedup 24.7 s against 17.8 s. A job with local lanes (the
# audit) starts no Ray of its own: the lanes take every core already.
LOCAL_MAX_BYTES = 512 * 2**20
LOCAL_RAY_MIN_CORES = 4
# Local engine, no --workers: below this much input still to run, one process (a worker process spends about a
# second importing before its first shard); from it on, a lane per core. Measured on 2 cores (short real records):
# two lanes 0.79x one at 6.9 MiB, 1.04x at 10.4, 1.19x at 13.9, 1.30x at 20.9, 1.46x at 27.9, 1.57x at 57.
LOCAL_PARALLEL_BYTES = 16 * 2**20
# A shard a stage can cut into pieces (`dataaudit.audit.pieces`) is cut into pieces of the job's bytes over
# PIECES_PER_LANE per lane, within these bounds: a piece pays a plan, a hand-off to a lane and a summary, and the
# lanes end within a piece of each other.
PIECES_PER_LANE = 8
MIN_PIECE_BYTES = 8 * 2**20
MAX_PIECE_BYTES = 256 * 2**20
ENGINES = ("auto", "local", "ray")
# objects in a store sized at once (a HEAD each) when a job plans its lanes and pieces
SIZE_REQUESTS = 16


@dataclass(frozen=True)
class EngineOptions:
    """engine: "local" (this process, and worker processes with `workers` > 1 where the job allows), "ray" (one
    task per unit) or "auto". address: a running Ray cluster to join (default: start a local one). workers: the
    units in flight (Ray: default as many as it has CPUs for; local: default `local_workers`). handler: the policy for a shard
    that cannot be read (`dataaudit.handlers`; default: reported unreadable, the job goes on)."""

    engine: str = "auto"
    address: str | None = None
    workers: int | None = None
    handler: Callable[[BaseException, str], str] = report_unreadable

    def __post_init__(self):
        if self.engine not in ENGINES:
            raise ValueError(f"engine must be one of {', '.join(ENGINES)}, got {self.engine!r}")


def _size(path: str) -> int:
    try:
        return stored_size(path)   # a sparse file's allocated bytes, not the size it claims
    except OSError:
        return 0


def shard_sizes(paths: Sequence[str]) -> list[int]:
    """Each shard's stored bytes (0 when it cannot be read: its reader says why). An object in a store is a request
    each (a HEAD): those are asked SIZE_REQUESTS at a time (one by one, 10,000 objects at ~30 ms a request would be
    5 minutes before the job's first shard)."""
    if len(paths) < 2 or not any(is_uri(p) for p in paths):
        return [_size(p) for p in paths]
    from concurrent.futures import ThreadPoolExecutor

    first = _size(paths[0])   # alone: its store's client is made once, not by each thread at the same time
    with ThreadPoolExecutor(max_workers=min(SIZE_REQUESTS, len(paths) - 1)) as pool:
        return [first, *pool.map(_size, paths[1:])]


def choose_engine(paths: Sequence[str], options: EngineOptions, share: float = 1.0, lanes: bool = False) -> str:
    """"local" or "ray": as asked, else Ray when a running cluster is named (`options.address`: --ray-address) or,
    for a job without local lanes on LOCAL_RAY_MIN_CORES cores or more, when the input is large and in several
    shards (and Ray is installed: `pip install 'dataaudit[ray]'`). `share`: the share of the input's bytes the job
    reads (a cluster sample reads a few row groups: starting Ray for them cost 3x the whole sample). `lanes`: the job
    runs a lane per core locally (the audit), where a Ray started for the command runs the same cores after seconds
    of start-up (1 GB in 16 shards on 2 cores: 14.1-16.6 s against 8.3-8.9 s)."""
    if options.engine != "auto":
        return options.engine
    if not available("ray"):
        return "local"
    if options.address:
        return "ray"
    if lanes or cores() < LOCAL_RAY_MIN_CORES:
        return "local"
    total = sum(_size(p) for p in paths) * share
    return "local" if total < LOCAL_MAX_BYTES or len(paths) < 2 else "ray"


def cores() -> int:
    """The CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:   # not Linux
        return os.cpu_count() or 1


def local_workers(paths: Sequence[str], units: int | None = None, sizes: Sequence[int] | None = None) -> int:
    """The local engine's lanes when --workers is not given: one per core (at most one per unit: `units`, the shards
    and pieces of shards to run, default one per shard) when the shards still to run hold LOCAL_PARALLEL_BYTES or
    more, else 1 (this process alone). `sizes`: the shards' `shard_sizes`, when the caller has them."""
    n = min(cores(), len(paths) if units is None else units)
    if n < 2:
        return 1
    return n if sum(shard_sizes(paths) if sizes is None else sizes) >= LOCAL_PARALLEL_BYTES else 1


def planned_lanes(paths: Sequence[str], options: EngineOptions, units: int | None = None,
                  sizes: Sequence[int] | None = None) -> int:
    """The lanes a job that uses worker processes (the audit) will run `paths` in with every shard still to run: 1 on
    Ray, else `options.workers` or `local_workers`, at most one per unit (`units`: the shards and the pieces large
    shards will be cut into; default one per shard; `sizes`: the shards' `shard_sizes`, when the caller has them). A
    resumed job may use fewer."""
    if choose_engine(paths, options, lanes=True) != "local":
        return 1
    units = len(paths) if units is None else units
    if options.workers is not None:
        return max(1, min(options.workers, units))
    return local_workers(paths, units, sizes)


def piece_bytes(total: int, lanes: int) -> int:
    """The bytes of a piece for a job of `total` bytes on `lanes` lanes."""
    return min(MAX_PIECE_BYTES, max(MIN_PIECE_BYTES, total // max(1, lanes * PIECES_PER_LANE)))
