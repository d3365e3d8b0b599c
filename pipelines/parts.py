"""Per-shard partial results in the output folder: what makes a rerun skip finished work."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from dataaudit.report.atomic import write_json, write_parquet


def fingerprint_digest(fingerprint: dict) -> str:
    """A short digest of a job's settings: parts written under other settings are not reused."""
    return hashlib.sha256(json.dumps(fingerprint, sort_keys=True, default=str).encode()).hexdigest()[:16]


class PartStore:
    """`OUT/<folder>/<name>-<path digest>.json` + the shard's table beside it (`<suffix>`, e.g. `.flags.parquet`).

    The table is written first and the JSON marker (job digest + summary) last, both atomically: a shard is
    finished exactly when its marker exists, names this job and its table is there. `schema` (optional) is
    the table's schema for writing and reading back; by default each table's own.
    """

    def __init__(self, out_dir: Path, job_fingerprint: dict, *, suffix: str, folder: str = "parts",
                 schema: pa.Schema | None = None):
        self.dir = Path(out_dir) / folder
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

    def _stem(self, index: int, path: str) -> Path:
        return self.dir / f"{self.name(index)}-{hashlib.sha1(path.encode()).hexdigest()[:12]}"

    def table_path(self, index: int, path: str) -> Path:
        return self._stem(index, path).with_suffix(self.suffix)

    def load(self, index: int, path: str) -> dict | None:
        try:
            done = json.loads(self._stem(index, path).with_suffix(".json").read_text(encoding="utf-8"))
        except (FileNotFoundError, json.JSONDecodeError):
            return None
        if done.get("job") != self.digest or not self.accepts(done) or not self.table_path(index, path).exists():
            return None
        return done["summary"]

    def save(self, index: int, path: str, summary: dict, table: pa.Table) -> None:
        self.write_table(index, path, table)
        write_json(self._stem(index, path).with_suffix(".json"),
                   {"job": self.digest, **self.marker(table), "summary": summary})

    def write_table(self, index: int, path: str, table: pa.Table) -> None:
        """The shard's table (a subclass may keep some columns elsewhere)."""
        # work files, mostly hashes and signatures: no compression or dictionary to try on them (on dedup's parts of
        # 100k documents, 122 MB either way, they took ~35% of the write and half the read)
        write_parquet(self.table_path(index, path), [table], self.schema or table.schema, compression="none",
                      use_dictionary=False)

    def read(self, index: int, path: str, columns: list[str] | None = None) -> pa.Table:
        return pq.read_table(self.table_path(index, path), columns=columns, schema=self.schema, memory_map=True)
