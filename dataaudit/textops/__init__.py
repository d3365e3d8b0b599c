"""Shared text operations: normalization, word tokens and deterministic word / character n-gram hashing
(vectorized, numba kernels with numpy twins), and the pure-pyarrow helpers (`textops.arrow`).

    from dataaudit.textops import normalize, word_tokens, word_ngram_hashes, char_ngram_hashes, ngram_hash_of

Used by dedup (MinHash shingles, exact hashes), contamination (n-gram overlap) and the text checks.
"""
from .hashing import (GOLD, NgramHashes, Tokens, char_hash_of, char_ngram_hash_of, char_ngram_hashes, fold_int,
                      fold_ngrams, mix, mix_int, ngram_hash_of, numba_kernels, token_hashes_of_strings,
                      word_hash_of, word_ngram_hashes, word_tokens)
from .normalize import normalize

__all__ = ["normalize", "NgramHashes", "Tokens", "word_tokens", "word_ngram_hashes", "char_ngram_hashes",
           "ngram_hash_of", "char_ngram_hash_of", "word_hash_of", "char_hash_of", "fold_int", "fold_ngrams", "mix",
           "mix_int", "GOLD", "token_hashes_of_strings", "numba_kernels"]
