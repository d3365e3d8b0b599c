"""Benchmark contamination: which benchmark items the training data already contains.

    from dataaudit.contamination import load_benchmark, build_index, scan_shard, load_contamination_config
    from dataaudit.pipelines.contamination import run_contamination   # many shards, local or Ray, writes the outputs

Benchmark loading (`load`), field presets (`presets`), the n-gram index (`index`), per-batch matching (`scan`),
the per-shard stage (`shard`), the MinHash method (`minhash`), merging and outputs (`results`), clean subsets.
"""
from .config import ContaminationConfig, ContaminationConfigError, build_contamination_config, load_contamination_config
from .index import ContaminationIndex, build_index
from .load import Benchmark, BenchmarkError, load_benchmark, parse_benchmark_arg, resolve_field, write_clean
from .presets import PRESETS, find_preset
from .scan import MATCH_SCHEMA, match_texts
from .shard import scan_shard

__all__ = ["ContaminationConfig", "ContaminationConfigError", "build_contamination_config",
           "load_contamination_config", "ContaminationIndex", "build_index", "Benchmark", "BenchmarkError",
           "load_benchmark", "parse_benchmark_arg", "resolve_field", "write_clean", "PRESETS", "find_preset",
           "MATCH_SCHEMA", "match_texts", "scan_shard"]
