"""clean.json: what was kept and dropped, per shard and in all, with reasons, after checking that every count
balances (records in = kept + dropped) over the shards written, and clean.html, its page; and the exit rule
(`has_errors`: a shard that could not be cleaned)."""
from __future__ import annotations

import os
from typing import Iterable, Iterator

import pyarrow as pa

from dataaudit.atomic import write_json
from dataaudit.clean import DROPPED, FILES
from dataaudit.io import join

from .plan import CleanJob

SCHEMA_VERSION = 1
FIRST_DROPPED = 20    # dropped records clean.json lists (and its page shows): the first ones, in shard and row order


class CleanAccountingError(RuntimeError):
    """An accounting invariant broke (a bug, never the data): nothing is written to the record. Not an assert: it
    holds under python -O too."""


def must(ok: bool, what: str) -> None:
    if not ok:
        raise CleanAccountingError(f"clean: {what}: nothing written to {FILES.record}")


def shard_entry(summary: dict) -> dict:
    """A shard as clean.json lists it: its records counted as `rows`, without the drops digest (parts only)."""
    return {"rows" if k == "records" else k: v for k, v in summary.items() if k != "drops"}


# per shard: media files copied (or there already), missing or outside the folder, refused (onto a job file)
REFERENCED = {"copied": "referenced_files", "missing": "referenced_missing", "refused": "referenced_refused"}


def _totals(shards: list[dict], reasons: list[str]) -> dict:
    by: dict[str, int] = {}
    for s in shards:
        must(s["rows"] == s["kept"] + s["dropped"], f"{s['path']}: rows in != kept + dropped")
        for r, c in s["dropped_by"].items():
            by[r] = by.get(r, 0) + c
    totals = {"shards": len(shards), "rows": sum(s["rows"] for s in shards),
              "kept": sum(s["kept"] for s in shards), "dropped": sum(s["dropped"] for s in shards),
              "dropped_by": {r: by[r] for r in reasons if r in by}}
    must(totals["rows"] == totals["kept"] + totals["dropped"], "total rows in != kept + dropped")
    return totals


def first_dropped(tables: Iterable[pa.Table], into: list[dict]) -> Iterator[pa.Table]:
    """The dropped table's parts, passed through; the first FIRST_DROPPED rows ({shard, key, row, line, reasons})
    are appended to `into` on the way."""
    for t in tables:
        if len(into) < FIRST_DROPPED:
            into.extend(t.slice(0, FIRST_DROPPED - len(into)).to_pylist())
        yield t


def clean_report(job: CleanJob, summaries: list[dict], dropped_rows: int, run: dict,
                 failed: list[dict] = (), first: list[dict] = (), sidecars: list[dict] = ()) -> dict:
    """clean.json's content; `dropped_rows`: the rows written to the dropped table (they must be every drop);
    `failed`: the shards that could not be cleaned ({path, error}: no output written for them); `first`: the
    dropped table's first rows; `sidecars`: the files describing the folders, as copied (dataaudit.clean.sidecars)."""
    shards = [shard_entry(s) for s in summaries]
    totals = _totals(shards, job.reasons)
    must(dropped_rows == totals["dropped"],
         f"{DROPPED} has {dropped_rows} rows, the shards dropped {totals['dropped']}")
    return {
        "schema_version": SCHEMA_VERSION,
        "selection": job.selection.to_json(),
        "findings": job.findings,
        "totals": {**totals, "skipped_shards": len(job.skipped), "failed_shards": len(failed)},
        "shards": shards,
        "skipped": job.skipped,
        "failed": list(failed),
        "referenced": {k: sum(s.get(v, 0) for s in shards) for k, v in REFERENCED.items()},
        "sidecars": list(sidecars),
        "first_dropped": list(first)[:FIRST_DROPPED],
        "files": {"dropped": DROPPED, "page": FILES.page},
        "run": run,
    }


def write_report(out_dir: str | os.PathLike, report: dict) -> None:
    """clean.json and clean.html, each written atomically."""
    from dataaudit.report.pages import write_clean_html   # rendering loads Jinja2

    write_json(join(out_dir, FILES.record), report)
    write_clean_html(join(out_dir, FILES.page), report)


def has_errors(report: dict) -> bool:
    """Exit 1: a shard could not be cleaned (its records are in no output: the user must look at it)."""
    return bool(report.get("failed"))
