"""Per-shard partial results in the output folder: what makes a rerun skip finished work."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from dataaudit.report.atomic import write_json, write_parquet


def _fingerprint_digest(fingerprint: dict) -> str:
    return hashlib.sha256(json.dumps(fingerprint, sort_keys=True, default=str).encode()).hexdigest()[:16]


class PartStore:
    """`OUT/parts/<index>-<path digest>.{json,flags.parquet}`; the JSON is written last and marks completion."""

    def __init__(self, out_dir: Path, job_fingerprint: dict):
        self.dir = Path(out_dir) / "parts"
        self.digest = _fingerprint_digest(job_fingerprint)

    def _stem(self, index: int, path: str) -> Path:
        return self.dir / f"{index:05d}-{hashlib.sha1(path.encode()).hexdigest()[:12]}"

    def load(self, index: int, path: str) -> dict | None:
        marker = self._stem(index, path).with_suffix(".json")
        try:
            done = json.loads(marker.read_text(encoding="utf-8"))
        except (FileNotFoundError, json.JSONDecodeError):
            return None
        return done["summary"] if done.get("job") == self.digest else None

    def save(self, index: int, path: str, summary: dict, flags: pa.Table) -> None:
        stem = self._stem(index, path)
        flags = flags.sort_by([("row", "ascending"), ("check", "ascending"), ("field", "ascending")])
        write_parquet(stem.with_suffix(".flags.parquet"), [flags], flags.schema)
        write_json(stem.with_suffix(".json"), {"job": self.digest, "summary": summary})

    def flags(self, index: int, path: str) -> pa.Table:
        return pq.read_table(self._stem(index, path).with_suffix(".flags.parquet"))
