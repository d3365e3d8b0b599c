"""Shard readers: Parquet, WebDataset tar, JSONL, JSON arrays, CSV/TSV and plain text streamed as Arrow batches
with provenance columns. `dataaudit.formats` picks the reader of a file (`iter_shard`)."""
from .base import ERROR, KEY, LINE, PROVENANCE_COLUMNS, ROW, WARNING, ShardReadError
from .webdataset_tar import MAX_MEMBER_BYTES

__all__ = ["ShardReadError", "KEY", "ROW", "LINE", "ERROR", "WARNING", "PROVENANCE_COLUMNS", "MAX_MEMBER_BYTES"]
