"""Array jobs on any scheduler: one job split into N slices of its shards (`--shard-index I --num-shards N`, or
Slurm's / a Kubernetes indexed job's variables), each run as its own process into the same --out, then merged.

A slice runs the job's own units on its shards only: each part is the one a single job writes for that shard (same
index, same name), so the merge is the single job's report step over parts that are all there. Each slice writes a
manifest last (OUT/<parts>/slices/IIIII-of-NNNNN.json): the job digest, every shard and the slice each one belongs
to, so the merge can name the shards of a slice that never finished, and refuse parts written under other settings.
"""
from __future__ import annotations

import json
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Mapping, Sequence

from dataaudit.atomic import write_json
from dataaudit.errors import DataAuditError
from dataaudit.io import join, read_text, stat, walk

SLICES = "slices"    # the manifests' folder, inside the job's parts folder


class SliceError(DataAuditError):
    """A slice that cannot be run or merged as asked (exit 2, one line)."""


@dataclass(frozen=True)
class ShardSlice:
    """Slice `index` (0-based) of `count`; `source` says where the numbers came from (for messages)."""

    index: int
    count: int
    source: str = "--shard-index/--num-shards"

    def __post_init__(self):
        if self.count < 1:
            raise SliceError(f"{self.source}: the number of slices must be at least 1, got {self.count}")
        if not 0 <= self.index < self.count:
            raise SliceError(f"{self.source}: slice index {self.index} is not in 0..{self.count - 1}")

    @property
    def name(self) -> str:
        return f"{self.index:05d}-of-{self.count:05d}"


def _env_int(env: Mapping[str, str], name: str) -> int | None:
    value = env.get(name)
    if value is None or value == "":
        return None
    try:
        return int(value)
    except ValueError:
        raise SliceError(f"{name}={value!r} is not an integer") from None


def slice_from(shard_index: int | None, num_shards: int | None, env: Mapping[str, str] = os.environ
               ) -> ShardSlice | None:
    """The slice this process runs: the options first, else a Slurm array task (SLURM_ARRAY_TASK_ID minus
    SLURM_ARRAY_TASK_MIN, of SLURM_ARRAY_TASK_COUNT), else a Kubernetes indexed job's JOB_COMPLETION_INDEX with
    --num-shards (Kubernetes gives no count). None: the whole job."""
    if shard_index is not None:
        if num_shards is None:
            raise SliceError("--shard-index needs --num-shards")
        return ShardSlice(shard_index, num_shards)
    task, count = _env_int(env, "SLURM_ARRAY_TASK_ID"), _env_int(env, "SLURM_ARRAY_TASK_COUNT")
    if task is not None and count is not None:
        first = _env_int(env, "SLURM_ARRAY_TASK_MIN") or 0   # `--array=1-4` numbers its tasks from 1
        if num_shards is not None and num_shards != count:
            raise SliceError(f"--num-shards {num_shards} disagrees with SLURM_ARRAY_TASK_COUNT={count}")
        return ShardSlice(task - first, count, "SLURM_ARRAY_TASK_ID/SLURM_ARRAY_TASK_COUNT")
    k8s = _env_int(env, "JOB_COMPLETION_INDEX")
    if num_shards is not None:
        if k8s is None:
            raise SliceError("--num-shards needs --shard-index (or SLURM_ARRAY_TASK_ID, or a Kubernetes "
                             "indexed job's JOB_COMPLETION_INDEX)")
        return ShardSlice(k8s, num_shards, "JOB_COMPLETION_INDEX/--num-shards")
    return None


def _size(path: str) -> int:
    try:
        return stat(path).size
    except OSError:
        return 0     # the job reports the shard unreadable; it still belongs to one slice


def assign(paths: Sequence[str], count: int) -> list[int]:
    """The slice of each shard: balanced by size (largest first, each to the slice with the fewest bytes so far,
    ties to the lower index), the same in every process for the same paths and sizes."""
    sizes = [_size(p) for p in paths]
    load = [0] * count
    out = [0] * len(paths)
    for i in sorted(range(len(paths)), key=lambda i: (-sizes[i], paths[i], i)):
        target = min(range(count), key=lambda s: (load[s], s))
        out[i] = target
        load[target] += sizes[i]
    return out


def manifest_path(parts_dir: str, piece: ShardSlice) -> str:
    return join(parts_dir, SLICES, piece.name + ".json")


def write_manifest(parts_dir: str, piece: ShardSlice, digest: str, paths: Sequence[str], slices: list[int],
                   fingerprint: dict, extra: dict) -> None:
    """The slice's record, written after its parts: it finished."""
    write_json(manifest_path(parts_dir, piece), {
        "job": digest, "shard_index": piece.index, "num_shards": piece.count, "paths": list(paths),
        "slices": slices, "config": fingerprint, **extra})


def read_manifests(parts_dir: str) -> dict:
    """Every slice's manifest, checked against the others: the merged job's manifest (one of them) and the shards
    of each slice. SliceError (exit 2) when there is none, when they disagree (other settings, other shards, another
    slicing), or when a slice has none (naming its shards)."""
    folder = join(parts_dir, SLICES)
    try:
        _, _, files = next(walk(folder), (None, None, []))
    except OSError:
        files = []
    names = sorted(n for n in files if n.endswith(".json"))
    if not names:
        raise SliceError(f"{folder}: no slice manifest: run `dataaudit audit ... --shard-index I --num-shards N "
                         "--out OUT` for every slice first")
    found = {}
    for name in names:
        try:
            found[name] = json.loads(read_text(join(folder, name)))
        except (OSError, json.JSONDecodeError) as exc:
            raise SliceError(f"{join(folder, name)}: not a slice manifest ({exc})") from None
    first_name, first = next(iter(found.items()))
    for name, m in found.items():
        if m["num_shards"] != first["num_shards"]:
            raise SliceError(f"{folder}: slices of {first['num_shards']} ({first_name}) and of {m['num_shards']} "
                             f"({name}) in one folder: merge the slices of one array job")
        if m["job"] != first["job"]:
            raise SliceError(f"{folder}: {name} was run with other settings than {first_name} (config, read mode or "
                             "sample differ): rerun it with the same options")
        if m["paths"] != first["paths"] or m["slices"] != first["slices"]:
            raise SliceError(f"{folder}: {name} was run on other shards than {first_name} (other inputs, or shard "
                             "sizes changed between the slices): rerun the slices on the same input")
    done = {m["shard_index"] for m in found.values()}
    missing = [p for p, s in zip(first["paths"], first["slices"]) if s not in done]
    if missing:
        absent = sorted(set(range(first["num_shards"])) - done)
        shown = ", ".join(missing[:5]) + (f", ... ({len(missing) - 5} more)" if len(missing) > 5 else "")
        raise SliceError(f"{folder}: slice(s) {', '.join(map(str, absent))} of {first['num_shards']} not finished: "
                         f"{len(missing)} shard(s) missing: {shown}")
    return first



def read_parts(store, paths: Sequence[str], manifest: dict, digest: str) -> list[dict]:
    """Every shard's summary from the part its slice wrote (`store`: the job's PartStore; `digest`: what this
    version computes for the slices' settings), read in parallel and without the shards (the merge may run where
    the data is not). SliceError when the slices were written by another version or a part is missing."""
    if digest != manifest["job"]:
        raise SliceError(f"{store.dir}: the slices were written by another version of dataaudit: run them again")
    with ThreadPoolExecutor(max_workers=8) as pool:
        summaries = list(pool.map(lambda ip: store.load(*ip, check_input=False), enumerate(paths)))
    lost = [p for p, s in zip(paths, summaries) if s is None]
    if lost:
        raise SliceError(f"{store.dir}: {len(lost)} part(s) missing although their slice finished: {lost[0]}"
                         + (f", ... ({len(lost) - 1} more)" if len(lost) > 1 else "") + ": rerun its slice")
    return summaries
