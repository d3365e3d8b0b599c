"""Outputs are written to a temporary file in the same folder and renamed into place, so a reader never sees
a half-written file, even if the job is killed mid-write."""
from __future__ import annotations

import json
import os
import secrets
from pathlib import Path
from typing import Iterable

import pyarrow as pa
import pyarrow.parquet as pq


def _temp_beside(path: Path) -> Path:
    """A new empty file next to `path`, created with mode 0o666 less the umask, like any file the user makes
    (tempfile.mkstemp's 0o600 would leave outputs unreadable to teammates on shared storage)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    while True:
        tmp = path.parent / f".{path.name}.{secrets.token_hex(6)}.tmp"
        try:
            os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
            return tmp
        except FileExistsError:
            continue


def write_bytes(path: Path, chunks: Iterable[bytes]) -> None:
    """Write byte chunks to `path` atomically."""
    tmp = _temp_beside(path)
    try:
        with open(tmp, "wb") as f:
            for chunk in chunks:
                f.write(chunk)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def remove_stale_temps(folder: Path) -> int:
    """Delete temporary files a killed run left behind in `folder` (and its subfolders); returns how many."""
    stale = [p for p in Path(folder).rglob(".*.tmp") if p.is_file()] if Path(folder).is_dir() else []
    for p in stale:
        p.unlink(missing_ok=True)
    return len(stale)


def write_text(path: Path, text: str) -> None:
    tmp = _temp_beside(path)
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def write_json(path: Path, obj) -> None:
    write_text(path, json.dumps(obj, indent=2, sort_keys=False, ensure_ascii=False) + "\n")


def write_parquet(path: Path, tables: Iterable[pa.Table], schema: pa.Schema, **options) -> int:
    """Stream tables into one Parquet file (`options`: the ParquetWriter's, such as compression); returns rows
    written."""
    tmp = _temp_beside(path)
    rows = 0
    try:
        with pq.ParquetWriter(tmp, schema, **options) as writer:
            for table in tables:
                writer.write_table(table.cast(schema))
                rows += table.num_rows
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return rows


def write_arrow(path: Path, table: pa.Table) -> None:
    """Write `table` as one Arrow IPC file (readable memory-mapped, without a decode)."""
    tmp = _temp_beside(path)
    try:
        with pa.OSFile(str(tmp), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
            writer.write_table(table)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
