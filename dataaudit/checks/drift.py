"""tokenizer_drift as a check: stored token ids that the inference tokenizer does not produce from the text.

The implementation is the audit's drift stage (dataaudit.tokenization.audit_drift); this entry gives it a name,
a severity and parameters like every other check, so configs, flags.parquet and exit codes treat it the same.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from dataaudit.checks.base import CheckOutput, register

DEFAULT_SAMPLE = 1000


@dataclass
class DriftInput:
    """A batch holding both the text and the token ids that were stored for it."""

    batch: pa.RecordBatch
    text: str
    input_ids: str
    attention_mask: str | None = None
    shard: str = ""


@register("tokenizer_drift", target="text_tokens", severity="error",
          params={"inference_tokenizer": None, "sample": DEFAULT_SAMPLE, "pad_id": None},
          required=("inference_tokenizer",),
          detail="stored token ids differ from the inference tokenizer's from token {value:.0f}",
          description="The stored token ids are not what the inference tokenizer makes of the record's text "
                      "(with or without its special tokens, or a prefix of that): data tokenized with another "
                      "tokenizer. Checked on the first `sample` records of each shard (0: all). value = first "
                      "differing token position.")
def tokenizer_drift(inp: DriftInput, inference_tokenizer: str, sample: int = DEFAULT_SAMPLE,
                    pad_id: int | None = None) -> CheckOutput:
    from dataaudit.tokenization.audit_drift import cached_bundle, drift_batch

    _, rows, first = drift_batch(inp.batch, inp.text, inp.input_ids, inp.attention_mask,
                                 cached_bundle(inference_tokenizer), inp.shard, sample or None, pad_id)
    flagged = np.zeros(inp.batch.num_rows, dtype=bool)
    value = np.zeros(inp.batch.num_rows, dtype=np.float64)
    flagged[rows], value[rows] = True, first
    return CheckOutput(flagged=flagged, value=value)
