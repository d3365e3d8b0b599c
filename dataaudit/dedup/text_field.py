"""Which column of a shard dedup reads as the document text, and that column as a string array.

The choice is the rule every command shares (dataaudit.fields); this module adapts it to dedup's reading.
"""
from __future__ import annotations

import pyarrow as pa

from dataaudit.fields import text_field


def _is_string(t: pa.DataType) -> bool:
    return pa.types.is_string(t) or pa.types.is_large_string(t)


def initial_field(schema: pa.Schema | None, configured: str | None) -> tuple[str | None, bool]:
    """(field, final) before reading: Parquet knows its columns from the footer (`schema`); JSONL and tar
    records are read with all their columns (schema None) and the field is picked from the first batch that
    has a candidate."""
    if configured is not None:
        return configured, True
    if schema is None:
        return None, False
    return text_field(schema), True


def text_column(batch: pa.RecordBatch, field: str | None) -> pa.Array:
    """The batch's text as a string array: nulls where the field is missing or does not hold text."""
    idx = batch.schema.get_field_index(field) if field else -1
    if idx < 0:
        return pa.nulls(batch.num_rows, pa.string())
    col = batch.column(idx)
    if pa.types.is_null(col.type):
        return pa.nulls(batch.num_rows, pa.string())
    if pa.types.is_dictionary(col.type):
        col = col.dictionary_decode()
    if not _is_string(col.type):
        if hasattr(pa.types, "is_string_view") and pa.types.is_string_view(col.type):
            return col.cast(pa.large_string())
        return pa.nulls(batch.num_rows, pa.string())   # not text: nothing to compare
    return col
