"""Parquet files with one damaged column chunk: the bytes in the middle of its data pages overwritten, so that
decoding that column fails while every other column of the file still reads."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

ROWS_PER_GROUP = 400
START_US = 1_700_000_000_000_000


def sample_table(rows: int) -> pa.Table:
    """`text` (string), `timestamp` (timestamp[us]) and `score` (float64): clean records, nothing to flag."""
    i = np.arange(rows, dtype=np.int64)
    return pa.table({
        "text": [f"Record {k} tells a plain story about the harbour, the boats and the weather." for k in range(rows)],
        "timestamp": pa.array(START_US + i * 1_000_003, pa.timestamp("us")),
        "score": pa.array(np.linspace(0.0, 1.0, rows)),
    })


def write_sample(path: Path, row_groups: int = 1, table: pa.Table | None = None) -> Path:
    """The sample table in `row_groups` row groups of ROWS_PER_GROUP rows, uncompressed (the damage hits encoded
    values, not a compressed stream)."""
    table = sample_table(row_groups * ROWS_PER_GROUP) if table is None else table
    pq.write_table(table, path, row_group_size=ROWS_PER_GROUP, compression="none")
    return path


def data_page_range(path: Path, column: str, row_group: int = 0) -> tuple[int, int]:
    """[start, end) of the column chunk's data pages in the file (after its dictionary page, if any)."""
    meta = pq.ParquetFile(path).metadata
    index = meta.schema.to_arrow_schema().get_field_index(column)
    chunk = meta.row_group(row_group).column(index)
    start = chunk.dictionary_page_offset if chunk.has_dictionary_page else chunk.data_page_offset
    return chunk.data_page_offset, start + chunk.total_compressed_size


def damage_column(path: Path, column: str, row_group: int = 0, width: int = 16) -> Path:
    """Overwrite `width` bytes in the middle of one column chunk's data pages with 0xFF."""
    start, end = data_page_range(path, column, row_group)
    middle = (start + end) // 2
    data = bytearray(path.read_bytes())
    data[middle - width // 2: middle + width // 2] = b"\xff" * width
    path.write_bytes(bytes(data))
    return path
