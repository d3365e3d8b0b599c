"""The unit of `clean`: one shard written again without its dropped records, by its format's writer, with the
files its kept records reference copied beside it; and whether a finished shard's output is still the one it
wrote (what a rerun checks before it trusts it)."""
from __future__ import annotations

from typing import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dataaudit.formats import BY_NAME
from dataaudit.handlers import reraise
from dataaudit.io import stat
from dataaudit.sources.fingerprint import content_hash
from dataaudit.writers.base import WriteOptions

from .plan import CleanJob, ShardPlan
from .referenced import copy_referenced
from .selection import DROPPED_SCHEMA


def output_fingerprint(path: str) -> dict:
    """{"bytes", "xxh3_128"} of a written shard (hashed on a URI too: clean wrote it, and a rerun checks its bytes)."""
    return {"bytes": stat(path).size, "xxh3_128": content_hash(path)}


def output_intact(plan: ShardPlan, done: dict) -> bool:
    """Whether a finished shard's part still describes its output: the same drops, the same file, its size and
    hash unchanged since it was written."""
    if "failed" in done or done.get("drops") != plan.digest or done.get("output") != plan.relative:
        return False
    try:
        if stat(plan.output).size != done["bytes"]:
            return False
        return output_fingerprint(plan.output)["xxh3_128"] == done["xxh3_128"]
    except OSError:
        return False


def clean_shard(path: str, job: CleanJob, on_batch: Callable[[int], None] | None = None,
                handler: Callable = reraise) -> tuple[dict, pa.Table]:
    """Write one shard's cleaned copy; returns its summary and its dropped rows. A shard the writer cannot get
    through (anything but an OSError: the input was read at plan time, so that is the output's, a job error) goes to
    `handler`: its summary is then {"path", "output", "records", "failed": the error} with no dropped rows, and no
    output is committed for it (the writers commit atomically)."""
    plan = job.shards[path]
    fmt = BY_NAME[plan.format]
    try:
        wrote = fmt.write(path, plan.output, plan.drop, plan.rows, WriteOptions(row_group_rows=job.row_group_rows,
                                                                               text_unit=job.text_unit))
        referenced = {} if fmt.embeds_media else copy_referenced(path, plan.output, plan.drop,
                                                                 protected=job.protected, text_unit=job.text_unit)
    except OSError:
        raise
    except Exception as exc:   # noqa: BLE001  (a hostile record may cost its shard, never the job)
        error = handler(exc, path)
        return {"path": path, "output": plan.relative, "records": plan.rows, "failed": error}, \
            DROPPED_SCHEMA.empty_table()
    keys = pa.array(wrote["dropped_keys"], pa.string()) if "dropped_keys" in wrote else None
    if keys is None:
        keys = pc.cast(pa.array(plan.drop, pa.int64()), pa.string())
    reasons = pa.ListArray.from_arrays(pa.array(plan.offsets, pa.int32()),
                                       pa.array(job.reasons, pa.string()).take(pa.array(plan.codes, pa.int32())))
    n = len(plan.drop)
    lines = pa.array(wrote.get("dropped_lines", [None] * n), pa.int64())   # text formats only
    table = pa.table({"shard": pa.array([path] * n, pa.string()), "key": keys,
                      "row": pa.array(plan.drop, pa.int64()), "line": lines, "reasons": reasons},
                     schema=DROPPED_SCHEMA)
    by = np.bincount(plan.codes, minlength=len(job.reasons))
    summary = {"path": path, "output": plan.relative, "format": plan.format, "records": plan.rows,
               "kept": wrote["kept"], "dropped": n,
               "dropped_by": {job.reasons[c]: int(by[c]) for c in np.flatnonzero(by)},
               **({"row_group_rows": wrote["row_group_rows"]} if "row_group_rows" in wrote else {}), **referenced,
               **output_fingerprint(plan.output), "drops": plan.digest}
    if on_batch is not None:
        on_batch(plan.rows)
    return summary, table
