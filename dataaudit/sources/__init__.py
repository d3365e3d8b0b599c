"""Shard readers: Parquet, WebDataset tar, JSONL and JSON arrays streamed as Arrow batches with provenance
columns."""
from .base import ERROR, KEY, LINE, PROVENANCE_COLUMNS, ROW, WARNING, ShardReadError
from .dispatch import iter_shard, peek_schema, read_schema, shard_format
from .json_array import holds_json_array
from .webdataset_tar import MAX_MEMBER_BYTES

__all__ = ["iter_shard", "peek_schema", "read_schema", "shard_format", "holds_json_array", "ShardReadError", "KEY",
           "ROW", "LINE", "ERROR", "WARNING", "PROVENANCE_COLUMNS", "MAX_MEMBER_BYTES"]
