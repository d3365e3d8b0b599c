"""Shared text operations: normalization and deterministic word / character n-gram hashing (vectorized).

    from dataaudit.textops import normalize, word_ngram_hashes, char_ngram_hashes, ngram_hash_of

Used by dedup (MinHash shingles, exact hashes) and contamination (n-gram overlap).
"""
from .hashing import (GOLD, NgramHashes, char_hash_of, char_ngram_hash_of, char_ngram_hashes, fold_int,
                      fold_ngrams, mix, mix_int, ngram_hash_of, token_hashes_of_strings, word_hash_of,
                      word_ngram_hashes)
from .normalize import normalize

__all__ = ["normalize", "NgramHashes", "word_ngram_hashes", "char_ngram_hashes", "ngram_hash_of",
           "char_ngram_hash_of", "word_hash_of", "char_hash_of", "fold_int", "fold_ngrams", "mix", "mix_int",
           "GOLD", "token_hashes_of_strings"]
