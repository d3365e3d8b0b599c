"""Tokenizer train/inference drift: static and behavioural diff of two tokenizers, and the audit's re-encoding
check of pre-tokenized shards (`dataaudit tokenizer-drift`, `[data] inference_tokenizer`). The names below load on
first use."""
from dataaudit.extras import lazy_exports
from dataaudit.outputs import JobFiles

# What `tokenizer-drift` writes in --out (the page is rendered from the template of the same name).
FILES = JobFiles("tokenizer_drift.json", page="tokenizer_drift.html")

__getattr__ = lazy_exports(__name__, {
    ".compare": ("compare_bundles", "compare_tokenizers"),
    ".loading": ("TokenizerBundle", "TokenizerLoadError", "load_bundle"),
})
