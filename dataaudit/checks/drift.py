"""tokenizer_drift: stored token ids that the inference tokenizer does not produce from the record's text.

Everything the runners need is declared here: its target (a batch with a text field and token ids), its
parameters and the [data] keys that fill them, the validation of the [data] keys it owns (inference_tokenizer,
drift_sample), and its state over a shard (dataaudit.checks.drift_summary), from which report.json's
`tokenizer_drift` section is built. The re-encoding is dataaudit.tokenization.audit_drift, imported on first use:
it brings the readers and the tokenizer library, which importing the registry (and the guard) must not.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from dataaudit.checks.base import CheckOutput, SettingError, ShardState, TextAndTokens, register
from dataaudit.checks.drift_summary import EXAMPLES, empty_state, merge_state, notes, section

DEFAULT_SAMPLE = 1000   # records per shard re-encoded with the inference tokenizer (0: all)


def _resolve_data(data: dict, folder: Path | None) -> None:
    """[data] inference_tokenizer (a tokenizer.json or a folder with it, loaded now so that a bad one is a config
    error) and drift_sample (records per shard)."""
    if "drift_sample" in data:
        n = data["drift_sample"]
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise SettingError(f"[data] drift_sample must be a non-negative integer (0: every record), got {n!r}")
        if "inference_tokenizer" not in data:
            raise SettingError("[data] drift_sample needs [data] inference_tokenizer")
    if "inference_tokenizer" not in data:
        return
    if not isinstance(data["inference_tokenizer"], str):
        raise SettingError(f"[data] inference_tokenizer must be a path, got {data['inference_tokenizer']!r}")
    tok = Path(data["inference_tokenizer"])
    if not tok.is_absolute() and folder is not None:
        tok = folder / tok
    if not tok.exists():
        raise SettingError(f"[data] inference_tokenizer not found: {tok}")
    from dataaudit.tokenization.audit_drift import cached_bundle
    from dataaudit.tokenization.loading import TokenizerLoadError

    try:
        cached_bundle(str(tok))
    except TokenizerLoadError as exc:
        raise SettingError(f"[data] inference_tokenizer cannot be loaded: {exc}") from None
    data["inference_tokenizer"] = str(tok)
    data.setdefault("drift_sample", DEFAULT_SAMPLE)


@register("tokenizer_drift", target="text_tokens", severity="error",
          params={"inference_tokenizer": None, "sample": DEFAULT_SAMPLE, "pad_id": None},
          required=("inference_tokenizer",),
          data={"pad_id": "pad_id", "inference_tokenizer": "inference_tokenizer", "drift_sample": "sample"},
          resolve_data=_resolve_data,
          state=ShardState(start=empty_state, merge=merge_state, section=section, notes=notes),
          detail="stored token ids differ from the inference tokenizer's from token {value:.0f}",
          description="The stored token ids are not what the inference tokenizer makes of the record's text "
                      "(with or without its special tokens, or a prefix of that): data tokenized with another "
                      "tokenizer. Checked on the first `sample` records of each shard (0: all). value = first "
                      "differing token position.")
def tokenizer_drift(inp: TextAndTokens, state: dict, inference_tokenizer: str, sample: int = DEFAULT_SAMPLE,
                    pad_id: int | None = None) -> CheckOutput:
    """Re-encode the batch's records that are still within the shard's sample (`state` counts those checked)."""
    from dataaudit.tokenization.audit_drift import cached_bundle, drift_batch

    n = inp.batch.num_rows
    flagged, value = np.zeros(n, dtype=bool), np.zeros(n, dtype=np.float64)
    left = sample - state["checked"] if sample else None    # sample 0: every record
    if left is not None and left <= 0:
        return CheckOutput(flagged, value, state=empty_state())
    bundle = cached_bundle(inference_tokenizer)
    pad = pad_id if pad_id is not None else bundle.special["pad"].id
    part, rows, first = drift_batch(inp.batch, inp.text, inp.input_ids, inp.attention_mask, bundle, inp.shard,
                                    left, empty_state(), pad, EXAMPLES)
    flagged[rows], value[rows] = True, first
    return CheckOutput(flagged, value, state=part)
