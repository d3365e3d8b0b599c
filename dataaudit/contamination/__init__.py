"""Benchmark contamination: which benchmark items the training data already contains.

    from dataaudit.contamination import load_benchmark, build_index, scan_shard, load_contamination_config
    from dataaudit.pipelines.contamination import run_contamination   # many shards, local or Ray, writes the outputs

Benchmark loading (`load`, through the format table's readers), field presets (`presets`), the n-gram index
(`index`), per-batch matching (`scan`), the per-shard stage (`shard`), the MinHash method (`minhash`), merging
(`results`), the report and its exit rule (`report`). The names below load on first use: importing the package
for FILES loads none of them.
"""
from dataaudit.extras import lazy_exports
from dataaudit.outputs import PARTS, JobFiles

# What `contamination` writes in --out; each benchmark's folder holds its items table and its clean subset.
DECONTAMINATE = "decontaminate.parquet"   # the training records to drop (--decontaminate-train)
ITEMS = "items.parquet"                   # <benchmark>/items.parquet: every item, its verdict and matches
FILES = JobFiles("contamination.json", (DECONTAMINATE,), "contamination.html", parts=f"{PARTS}/contamination",
                 nested=(ITEMS,))
CLEAN_SUBSET = "clean"   # <benchmark>/clean.jsonl, and clean.<ext> in the benchmark's own format
CLEAN_IDS = "clean_ids.json"   # per benchmark: the ids and rows of the items with no leak (lm-eval filters on them)

__getattr__ = lazy_exports(__name__, {
    ".config": ("ContaminationConfig", "ContaminationConfigError", "build_contamination_config",
                "load_contamination_config"),
    ".index": ("ContaminationIndex", "build_index"),
    ".load": ("Benchmark", "BenchmarkError", "load_benchmark", "parse_benchmark_arg", "resolve_field", "write_clean"),
    ".presets": ("PRESETS", "find_preset"),
    ".scan": ("MATCH_SCHEMA", "match_texts"),
    ".shard": ("scan_shard",),
})
