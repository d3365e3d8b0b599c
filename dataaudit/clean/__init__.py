"""`dataaudit clean`: write the dataset without the records the audit, dedup and contamination jobs name.

selection.py  which rows of which shard to drop, and why (vectorized over flags, keep-lists, drop-lists)
safety.py     when to refuse: a changed input, a shard the audit did not read, an output that would be an input
parquet.py, tar.py, jsonl.py, json_array.py   one writer per format, each keeping the input's own layout
"""
