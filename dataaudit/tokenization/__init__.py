"""Tokenizer train/inference drift: static and behavioural diff of two tokenizers, and the audit's re-encoding
check of pre-tokenized shards (`dataaudit tokenizer-drift`, `[data] inference_tokenizer`)."""
from dataaudit.tokenization.compare import compare_bundles, compare_tokenizers
from dataaudit.tokenization.loading import TokenizerBundle, TokenizerLoadError, load_bundle

__all__ = ["compare_bundles", "compare_tokenizers", "load_bundle", "TokenizerBundle", "TokenizerLoadError"]
