"""What the repetition kernels (`_repetition_kernels`) and the checks that read their output share, in a module
without numba: a command running the kernels compiled ahead of time (`textops.compiled`) never imports numba.

- The flag bits `scan_lines` sets on each line (uint16): FENCE, the cheap necessary conditions ("gates") of the
  structure regexes, and the classes the kernel decides itself (SURE_*).
- SENTENCE_BYTES: the bytes that may start a sentence end, the table `split_sentences` reads.
"""
from __future__ import annotations

import numpy as np

FENCE, GATE_CODE, GATE_LABEL, GATE_SYMBOLS, GATE_LIST, SURE_CODE, HAS_EQ, SURE_LABEL = 1, 2, 4, 8, 16, 32, 64, 128
SURE_SYMBOLS = 256
FENCED = 512                                # a fence, or a line inside a fenced block

# 1: the byte may start [.!?…], 2: it may start [。！？] (E3 80 82, EF BC 81 / 9F)
SENTENCE_BYTES = np.zeros(256, np.uint8)
SENTENCE_BYTES[[46, 33, 63, 0xE2]] = 1
SENTENCE_BYTES[[0xE3, 0xEF]] = 2
