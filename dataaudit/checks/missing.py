"""Samples and fields with nothing in them: a dataset that yielded None for a sample (target "samples", the
collate guard), and a numeric field, label or token sequence that is null or holds no element.

Same contract as numeric.py: flagged bool [B], value float64 [B], no per-element Python work, no host sync (a
batch tensor's per-sample element count is known from its shape).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from dataaudit.checks.base import CheckOutput, register
from dataaudit.extras import LazyModule
from dataaudit.tensors import NumericField, TokenFields, seg_lengths

torch = LazyModule("torch", globals())   # imported on first use: the audit of text never loads it

__all__ = ["null_sample", "missing_value"]


# Guard default: a None sample breaks collation (TypeError) before any other check can name it.
@register("null_sample", target="samples", severity="error", guard_default=0,
          detail="the dataset yielded None for this sample",
          description="The dataset yielded None instead of a sample (a decode failure swallowed by the dataset). "
                      "Training guard only (the collate guard sees the samples before collation; in the audit an "
                      "undecodable record is unreadable_record). value = 0.")
def null_sample(samples: Sequence) -> CheckOutput:
    flagged = np.fromiter((s is None for s in samples), dtype=bool, count=len(samples))  # one test per sample
    return CheckOutput(flagged=torch.from_numpy(flagged), value=torch.zeros(len(samples), dtype=torch.float64))


# Collate guard default (null and empty samples exist before collation); opt-in on the device, where a batch
# tensor has no null and a second call would cost the single-check fast path.
@register("missing_value", target=("numeric", "label", "tokens"), severity="error",
          guard_all_targets=True,
          detail="no value ({value:.0f} elements; -1: null)",
          description="The field has no value in this sample: null (value -1), or no element at all (an empty "
                      "list or a tensor of zero elements; value 0). For token ids only null: an empty sequence is "
                      "all_padding's. value = the sample's element count, -1 when null.")
def missing_value(arg: NumericField | TokenFields) -> CheckOutput:
    tokens = isinstance(arg, TokenFields)
    field = arg.ids if tokens else arg
    count = seg_lengths(field).to(torch.float64)
    present = field.present
    if present is None:
        if tokens:
            return CheckOutput(flagged=torch.zeros_like(count, dtype=torch.bool), value=count)
        return CheckOutput(flagged=count == 0, value=count)
    present = present.to(count.device)
    value = torch.where(present, count, torch.full_like(count, -1.0))
    return CheckOutput(flagged=~present if tokens else value <= 0, value=value)
