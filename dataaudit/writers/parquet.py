"""Parquet: the kept rows with the input's schema (its metadata included), compression codec per column,
dictionary use, statistics, format version and row-group size (`row_group_rows` overrides the last).

Row groups are decoded with two batches of read-ahead, filtered with one boolean mask per batch (no per-row
Python) and written, by a second thread, while the next ones are decoded, in row groups of exactly the input's
size (the last one shorter), whatever was dropped.
"""
from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from dataaudit.io import arrow_filesystem, arrow_source, atomic_path

from .base import ShardMismatch, WriteOptions, check_rows

_READ_ROWS = 65536
_FORMAT = ds.ParquetFileFormat()
_CODECS = {"UNCOMPRESSED": "NONE", "LZ4_RAW": "LZ4", "LZ4_HADOOP": "LZ4"}
DEFAULT_ROW_GROUP = 1 << 20       # an input with no row group at all (no rows): pyarrow's default


def layout(md: pq.FileMetaData) -> dict:
    """The writer settings that reproduce the input: {"compression", "use_dictionary", "write_statistics",
    "version", "row_group_rows"} (per column where columns differ)."""
    if md.num_row_groups == 0:
        return {"compression": "snappy", "use_dictionary": True, "write_statistics": True,
                "version": md.format_version, "row_group_rows": DEFAULT_ROW_GROUP}
    rg = md.row_group(0)
    cols = [rg.column(i) for i in range(rg.num_columns)]
    paths = [c.path_in_schema for c in cols]
    codecs = [_CODECS.get(c.compression, c.compression) for c in cols]
    dictionary = [c.has_dictionary_page for c in cols]
    stats = [c.is_stats_set for c in cols]

    def per_column(values, names):
        if len(set(values)) <= 1:
            return values[0] if values else None
        return {n: v for n, v in zip(names, values)}

    return {"compression": per_column(codecs, paths),
            "use_dictionary": [p for p, d in zip(paths, dictionary) if d] if not all(dictionary) else True,
            "write_statistics": [p for p, s in zip(paths, stats) if s] if not all(stats) else True,
            "version": md.format_version, "row_group_rows": rg.num_rows}


def _writer_kwargs(lay: dict) -> dict:
    kw = {"compression": lay["compression"], "version": lay["version"]}
    if lay["use_dictionary"] is not True:
        kw["use_dictionary"] = lay["use_dictionary"] or False
    if lay["write_statistics"] is not True:
        kw["write_statistics"] = lay["write_statistics"] or False
    return kw


def rewrite_parquet(src: str, dst: str | os.PathLike, drop: np.ndarray, expected: int,
                    options: WriteOptions = WriteOptions()) -> dict:
    """Write `src` without the rows in `drop` (sorted) to `dst`; `expected`: the rows the audit read (else
    ShardMismatch, nothing written). Returns {"records", "kept", "row_group_rows"}."""
    try:
        fs, where = arrow_source(src)
        pf = pq.ParquetFile(where, filesystem=fs)
        md = pf.metadata
        schema = pf.schema_arrow
        lay = layout(md)
        group = options.row_group_rows or lay["row_group_rows"] or DEFAULT_ROW_GROUP
        fs, path = arrow_filesystem(src)
        fragment = _FORMAT.make_fragment(path, fs)
        batches = fragment.to_batches(batch_size=_READ_ROWS, batch_readahead=2, fragment_readahead=0)
    except (pa.ArrowException, OSError) as e:
        raise ShardMismatch(f"{src}: parquet: {e}") from None
    keep = np.ones(md.num_rows, bool)
    if len(drop) and (drop[-1] >= md.num_rows):
        raise ShardMismatch(f"{src}: row {int(drop[-1])} is past the file's {md.num_rows} rows")
    keep[drop] = False
    rows = kept = 0
    with atomic_path(dst) as tmp, ThreadPoolExecutor(1) as pool:
        with pq.ParquetWriter(tmp, schema, **_writer_kwargs(lay)) as writer:
            # One row group is encoded (GIL released) while the next is decoded and filtered.
            writing = None

            def write(table: pa.Table) -> None:
                nonlocal writing
                if writing is not None:
                    writing.result()
                writing = pool.submit(writer.write_table, table, row_group_size=group)

            pending: list[pa.RecordBatch] = []
            held = 0
            for batch in batches:
                n = batch.num_rows
                mask = keep[rows:rows + n]
                rows += n
                if not mask.all():
                    batch = batch.filter(pa.array(mask))
                if batch.schema != schema:       # the scanner may drop field metadata: the file's own types win
                    batch = pa.RecordBatch.from_arrays(batch.columns, schema=schema)
                pending.append(batch)
                held += batch.num_rows
                kept += batch.num_rows
                if held >= group:
                    table = pa.Table.from_batches(pending, schema)
                    full = held - held % group
                    write(table.slice(0, full))
                    rest = table.slice(full)
                    pending, held = rest.to_batches(), rest.num_rows
            if held:
                write(pa.Table.from_batches(pending, schema))
            if writing is not None:
                writing.result()
        check_rows(src, rows, expected)
    return {"records": rows, "kept": kept, "row_group_rows": group}
