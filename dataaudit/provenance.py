"""The names every layer gives to provenance: which shard and record a value came from.

Readers add KEY, ROW, LINE, ERROR and WARNING as columns of every Arrow batch; the training guard carries KEY, ROW,
SHARD and GUARD as batch entries. Declared once, here, and importing nothing: the guard imports it with only
torch loaded.
"""
KEY = "__key__"          # string: WebDataset sample key; for Parquet, JSONL and JSON the row, as text
ROW = "__row__"          # int64: 0-based record index within the shard (blank JSONL lines are not records)
LINE = "__line__"        # int64: 1-based physical line where the record starts (JSONL, JSON); null otherwise
ERROR = "__error__"      # string, null when fine: the record could not be decoded (its data columns are null)
WARNING = "__warning__"  # string, null when fine: the record was read but something in it was skipped
SHARD = "__shard__"      # guard batches: the shard each sample came from
GUARD = "__guard__"      # guard batches: the collate guard's results, carried to the device guard
PROVENANCE_COLUMNS = (KEY, ROW, LINE, ERROR, WARNING)
# Never data: what field resolution leaves out of every schema or batch.
RESERVED_NAMES = frozenset((KEY, ROW, LINE, ERROR, WARNING, SHARD, GUARD))
