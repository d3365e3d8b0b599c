"""What a job writes in its --out folder, as each command's package declares it (`FILES` in
`dataaudit/<command>/__init__.py`): the names are spelled there once, and every other module (the job, the command's
summary line, `clean` reading the findings, the folder walk that skips a job's own files) takes them from there.
"""
from __future__ import annotations

from typing import NamedTuple

PARTS = "parts"   # per-shard partial results: what a rerun with the same --out reuses
WORK = "work"     # scratch files of a running job, removed when it ends


class JobFiles(NamedTuple):
    """The outputs of one job.

    record: its JSON record (report.json, ...): a folder holding one is a dataaudit output folder.
    tables: its Parquet tables (flags, keep-lists, drop-lists), never read as shards by a folder walk.
    page: its HTML page, if any.
    parts: the folder of its per-shard parts, relative to --out.
    nested: the tables it writes in subfolders of --out (one per benchmark, ...), also never read as shards.
    """

    record: str
    tables: tuple[str, ...] = ()
    page: str | None = None
    parts: str = PARTS
    nested: tuple[str, ...] = ()
