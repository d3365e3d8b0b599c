"""What every shard writer shares: the write options, an atomic (optionally gzip) output stream, and the check
that a shard holds the records its findings describe."""
from __future__ import annotations

import gzip
import os
from contextlib import contextmanager
from dataclasses import dataclass

from dataaudit.errors import DataAuditError
from dataaudit.io import atomic_output, open_input

GZIP_LEVEL = 6      # the input's level is not recorded in a gzip stream; 6 is gzip's own default
COPY_CHUNK = 1 << 20


@dataclass(frozen=True)
class WriteOptions:
    """row_group_rows: Parquet rows per row group (None: the input's). compress: gzip the output (None: as the
    input is). header: CSV/TSV, the first row names the columns (None: as the reader takes it, a header).
    text_unit: plain text, one record per "line" or "paragraph", as the audit read it."""
    row_group_rows: int | None = None
    compress: bool | None = None
    header: bool | None = None
    text_unit: str = "line"


class ShardMismatch(DataAuditError):
    """The shard does not hold the records the findings read (it changed, or a reader disagrees): nothing written."""

    prefix = "refused: "


@contextmanager
def atomic_stream(dst: str | os.PathLike, gzipped: bool):
    """A binary stream into `dst`, committed when the block ends (gzip-compressed when `gzipped`, with no name and
    mtime 0 in its header, so two runs write the same bytes)."""
    with atomic_output(dst, buffering=COPY_CHUNK) as raw:
        if gzipped:
            with gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=GZIP_LEVEL, mtime=0) as z:
                yield z
        else:
            yield raw


def is_gzip(path: str | os.PathLike) -> bool:
    with open_input(path) as f:
        return f.read(2) == b"\x1f\x8b"


def compressed(src: str | os.PathLike, options: WriteOptions) -> bool:
    """Whether the output is gzipped: as asked, else as the input is."""
    return is_gzip(src) if options.compress is None else options.compress


def check_rows(src: str, rows: int, expected: int) -> None:
    """Raised inside a writer's block, so that a shard that does not match its findings is never committed."""
    if rows != expected:
        raise ShardMismatch(f"{src}: read {rows} records, the audit read {expected}: its findings do not "
                            "describe this file")
