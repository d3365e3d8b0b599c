"""Each cleaned shard is written to a temporary file beside its final name and renamed into place, so a shard
is either absent or complete, even if the job is killed mid-write; its size and hash go in the part marker."""
from __future__ import annotations

import gzip
import os
from contextlib import contextmanager
from pathlib import Path

from dataaudit.report.atomic import _temp_beside
from dataaudit.sources.fingerprint import shard_fingerprint

GZIP_LEVEL = 6      # the input's level is not recorded in a gzip stream; 6 is gzip's own default
COPY_CHUNK = 1 << 20


@contextmanager
def atomic_path(dst: Path):
    """Yields a temporary path beside `dst`; renamed to `dst` when the block ends without error."""
    tmp = _temp_beside(Path(dst))
    try:
        yield tmp
        os.replace(tmp, dst)
    finally:
        tmp.unlink(missing_ok=True)


@contextmanager
def atomic_stream(dst: Path, gzipped: bool):
    """A binary stream into a temporary file beside `dst` (gzip-compressed when `gzipped`, with no name and
    mtime 0 in its header, so two runs write the same bytes), renamed to `dst` when the block ends."""
    with atomic_path(dst) as tmp:
        with open(tmp, "wb", buffering=COPY_CHUNK) as raw:
            if gzipped:
                with gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=GZIP_LEVEL, mtime=0) as z:
                    yield z
            else:
                yield raw


def output_fingerprint(path: Path) -> dict:
    """{"bytes", "xxh3_128"} of a written shard (what a rerun checks before it trusts a finished shard)."""
    fp = shard_fingerprint(str(path))
    return {"bytes": fp["size"], "xxh3_128": fp["xxh3_128"]}


def is_gzip(path: str) -> bool:
    with open(path, "rb") as f:
        return f.read(2) == b"\x1f\x8b"


class ShardMismatch(Exception):
    """The shard does not hold the records the audit read (it changed, or a reader disagrees): nothing written."""


def check_rows(src: str, rows: int, expected: int) -> None:
    """Raised inside a writer's block, so that a shard that does not match its findings is never renamed in."""
    if rows != expected:
        raise ShardMismatch(f"{src}: read {rows} records, the audit read {expected}: its findings do not "
                            "describe this file")
