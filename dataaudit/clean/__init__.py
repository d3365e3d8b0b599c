"""`dataaudit clean`: write the dataset without the records the audit, dedup and contamination jobs name.

plan.py       everything decided before a byte is written: the findings read, every shard checked, the drops
selection.py  which rows of which shard to drop, and why (vectorized over flags, keep-lists, drop-lists)
safety.py     when to refuse: a changed input, a shard the audit did not read, an output that would be an input
shard.py      the unit: one shard rewritten by its format's writer (dataaudit.formats), its referenced media copied
referenced.py the files kept records reference by path, copied beside the cleaned shard
sidecars.py   the files that describe the folder (dataset_info.json, *.yaml), copied naming only files written
report.py     clean.json: totals that balance (in = kept + dropped), per shard, with reasons; clean.html, its page

--out is a dataset folder: loaders glob it (HF datasets takes every *.json and *.parquet; LLaMA-Factory reads its
dataset_info.json), so everything of the job's own (its record, page, dropped table and parts) sits in the hidden
folder STATE of --out, which loaders skip, and --out holds only data.
"""
from dataaudit.outputs import PARTS, JobFiles

STATE = ".dataaudit"          # clean's own files, inside --out
DROPPED = f"{STATE}/dropped.parquet"   # every dropped record with its reasons
# What `clean` writes in --out (paths relative to it), besides the cleaned shards, their media and sidecars.
FILES = JobFiles(f"{STATE}/clean.json", (DROPPED,), f"{STATE}/clean.html", parts=f"{STATE}/{PARTS}/clean")
