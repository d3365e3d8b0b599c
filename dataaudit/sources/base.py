"""The reader contract shared by every shard format.

A reader streams one shard as Arrow record batches. Every batch carries the provenance columns below next to
the data columns, so each flag can name its shard and record, and every record read is a row: a record that
could not be decoded is still a row (data columns null, `__error__` set), so nothing is lost uncounted.
"""
from __future__ import annotations

KEY = "__key__"          # string: WebDataset sample key, or the record number for Parquet/JSONL
ROW = "__row__"          # int64: 0-based record index within the shard
ERROR = "__error__"      # string, null when fine: the record could not be decoded (its data columns are null)
WARNING = "__warning__"  # string, null when fine: the record was read but something in it was skipped
PROVENANCE_COLUMNS = (KEY, ROW, ERROR, WARNING)
TEXT_NAMES = ("text", "content")  # default text column: the first of these present, else the first string column


class ShardReadError(Exception):
    """The shard as a whole cannot be read further: open failure, or its stream broke part way.

    Batches yielded before the error stay valid and are counted. The message is one line with the reader's
    error.
    """
