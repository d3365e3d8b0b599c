"""`dataaudit audit`: the per-shard stage (`shard`: plan, batches, summary), the report model and its exit rule
(`report`)."""
from dataaudit.outputs import JobFiles

# What `audit` writes in --out.
FLAGS = "flags.parquet"   # one row per (record, check, field)
FILES = JobFiles("report.json", (FLAGS,), "report.html")
