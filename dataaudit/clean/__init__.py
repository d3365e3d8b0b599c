"""`dataaudit clean`: write the dataset without the records the audit, dedup and contamination jobs name.

plan.py       everything decided before a byte is written: the findings read, every shard checked, the drops
selection.py  which rows of which shard to drop, and why (vectorized over flags, keep-lists, drop-lists)
safety.py     when to refuse: a changed input, a shard the audit did not read, an output that would be an input
shard.py      the unit: one shard rewritten by its format's writer (dataaudit.formats), its referenced media copied
referenced.py the files kept records reference by path, copied beside the cleaned shard
report.py     clean.json: totals that balance (in = kept + dropped), per shard, with reasons; clean.html, its page
"""
from dataaudit.outputs import PARTS, JobFiles

# What `clean` writes in --out, besides the cleaned shards at their relative paths.
DROPPED = "dropped.parquet"   # every dropped record with its reasons
FILES = JobFiles("clean.json", (DROPPED,), "clean.html", parts=f"{PARTS}/clean")
