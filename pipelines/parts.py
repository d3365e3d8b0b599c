"""Per-shard partial results in the output folder: what makes a rerun skip finished work."""
from __future__ import annotations

import functools
import hashlib
import json
import os
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from typing import Iterator

import pyarrow as pa

from dataaudit.atomic import write_json, write_parquet
from dataaudit.io import changed, exists, join, open_arrow, read_parquet, read_text
from dataaudit.outputs import PARTS

# Bumped when what a part holds changes shape (2: summaries count their records as `records`; 3: they hold the
# shard's fingerprint; 4: the audit's count the records flagged at each severity): parts written before are then
# redone, never misread.
PART_VERSION = 4


@functools.cache
def code_digest() -> str:
    """A digest of dataaudit's own source (the package and its jobs): a part written by other code (an upgrade, a
    fixed check) is redone, never reused into a report of this code's. ~200 small files: milliseconds, once."""
    import dataaudit

    h = hashlib.sha256(dataaudit.__version__.encode())
    for root in (os.path.dirname(dataaudit.__file__), os.path.dirname(__file__)):
        for folder, dirs, files in sorted(os.walk(root)):
            dirs.sort()
            for name in sorted(f for f in files if f.endswith((".py", ".json", ".html"))):
                path = os.path.join(folder, name)
                h.update(os.path.relpath(path, root).encode())
                with open(path, "rb") as f:   # our own source, not data: the file door is for shards and outputs
                    h.update(f.read())
    return h.hexdigest()[:16]


def fingerprint_digest(fingerprint: dict) -> str:
    """A short digest of a job's settings and of the code: parts written under other settings or by other code are
    not reused."""
    text = json.dumps({"part_version": PART_VERSION, "code": code_digest(), **fingerprint}, sort_keys=True,
                      default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


class PartStore:
    """`OUT/<folder>/<name>-<path digest>.json` + the shard's table beside it (`<suffix>`, e.g. `.flags.parquet`).

    The table is written first and the JSON marker (job digest + summary) last, both atomically: a shard is
    finished exactly when its marker exists, names this job and its table is there. `folder` is the job's
    (`JobFiles.parts`); `schema` (optional) is the table's schema for writing and reading back; by default each
    table's own.
    """

    # Whether a part is reused only for the same shard file: its summary holds the shard's `fingerprint` (size,
    # mtime_ns, xxh3_128, or an object's size and version: the runner records it), and a shard whose size, time or
    # bytes (or version) differ is redone. A store whose job digest covers the input's bytes already (clean's) says
    # False.
    fingerprints = True

    def __init__(self, out_dir: str | os.PathLike, job_fingerprint: dict, *, suffix: str, folder: str = PARTS,
                 schema: pa.Schema | None = None):
        self.dir = join(out_dir, folder)
        self.digest = fingerprint_digest(job_fingerprint)
        self.suffix = suffix
        self.schema = schema

    def name(self, index: int) -> str:
        """The shard's part name before its path digest."""
        return f"{index:05d}"

    def accepts(self, marker: dict) -> bool:
        """Whether a finished part of this job may be reused (a subclass may ask more of it)."""
        return True

    def marker(self, table: pa.Table) -> dict:
        """Fields recorded in the JSON marker next to the job digest and the summary."""
        return {}

    def _stem(self, index: int, path: str) -> str:
        return join(self.dir, f"{self.name(index)}-{hashlib.sha1(path.encode()).hexdigest()[:12]}")

    def table_path(self, index: int, path: str) -> str:
        return self._stem(index, path) + self.suffix

    def load(self, index: int, path: str, check_input: bool = True) -> dict | None:
        """The finished shard's summary, or None. `check_input=False` (an array job's merge, which may run where the
        shards are not) trusts the part without comparing the shard's file with its fingerprint."""
        try:
            done = json.loads(read_text(self._stem(index, path) + ".json"))
        except (FileNotFoundError, json.JSONDecodeError):
            return None
        if done.get("job") != self.digest or not self.accepts(done) or not exists(self.table_path(index, path)):
            return None
        if check_input and self.fingerprints and changed(path, done["summary"].get("fingerprint")) is not None:
            return None    # the shard changed since (or could not be read then): read it again
        return done["summary"]

    def save(self, index: int, path: str, summary: dict, table: pa.Table) -> None:
        self.write_table(index, path, table)
        write_json(self._stem(index, path) + ".json", {"job": self.digest, **self.marker(table), "summary": summary})

    def write_table(self, index: int, path: str, table: pa.Table) -> None:
        """The shard's table (a subclass may keep some columns elsewhere)."""
        # work files, mostly hashes and signatures: no compression or dictionary to try on them (on dedup's parts of
        # 100k documents, 122 MB either way, they took ~35% of the write and half the read)
        write_parquet(self.table_path(index, path), [table], self.schema or table.schema, compression="none",
                      use_dictionary=False)

    def read(self, index: int, path: str, columns: list[str] | None = None) -> pa.Table:
        if columns is not None:
            return read_parquet(self.table_path(index, path), columns, self.schema)
        # a whole part: one ParquetFile read (~0.7 ms), not pyarrow's dataset reader (~3.4 ms: a merge of 1,000
        # parts spent most of its time there); the same table
        import pyarrow.parquet as pq

        table = pq.ParquetFile(open_arrow(self.table_path(index, path))).read()
        return table if self.schema is None or table.schema == self.schema else table.cast(self.schema)

    def read_all(self, paths: list[str], ahead: int = 16) -> Iterator[pa.Table]:
        """Every shard's table in shard order, read `ahead` at once in threads (a table costs ~2 ms to open, most
        of it not holding the GIL: 1,000 parts read one by one took 2.6 s of a merge's 5), at most `ahead` held."""
        with ThreadPoolExecutor(max_workers=min(ahead, 8)) as pool:
            pending: deque = deque()
            for i, p in enumerate(paths):
                pending.append(pool.submit(self.read, i, p))
                if len(pending) >= ahead:
                    yield pending.popleft().result()
            while pending:
                yield pending.popleft().result()
