"""tokenizer_drift's state over a shard (records checked, counts per category, the first examples) and
report.json's `tokenizer_drift` section merged from every shard's, with its notes.

Plain JSON-able dicts: the state travels in the shard's summary, and the audit's runners handle it only through
the check's ShardState (start, merge, section, notes), without knowing what it holds.
"""
from __future__ import annotations

from typing import Any, Mapping

CATEGORIES = ("same", "same_without_special_tokens", "truncated", "differs")
EXAMPLES = 5   # records that differ, kept per shard and in the report


def empty_state() -> dict:
    return {"checked": 0, **dict.fromkeys(CATEGORIES, 0), "examples": []}


def merge_state(into: dict, part: dict, examples: int = EXAMPLES) -> dict:
    into["checked"] += part["checked"]
    for c in CATEGORIES:
        into[c] += part[c]
    into["examples"].extend(part["examples"][: max(0, examples - len(into["examples"]))])
    return into


def section(total: dict, shards: list[tuple[str, dict | None]], settings, data: Mapping[str, Any]) -> dict | None:
    """Stored ids vs the inference tokenizer over every shard (only when the check has an inference tokenizer).
    The effective settings are the check's params ([data] fills them, [checks.tokenizer_drift] may override)."""
    if not settings.params.get("inference_tokenizer"):
        return None
    checked = total["checked"]
    return {
        "inference_tokenizer": settings.params["inference_tokenizer"],
        "sample_per_shard": settings.params.get("sample"),
        "severity": settings.severity,
        "ran": checked > 0,
        "skipped": None if checked else "no shard holds both a text field and token ids",
        **{c: total[c] for c in ("checked", *CATEGORIES)},
        "differs_share": round(total["differs"] / checked, 6) if checked else 0.0,
        "shards": [{"path": p, "checked": st["checked"], "differs": st["differs"]}
                   for p, st in shards if st and st["checked"]],
        "examples": total["examples"],
    }


def notes(drift: dict) -> list[str]:
    if not drift["checked"]:
        return []
    out = []
    if drift["differs"]:
        out.append(f"tokenizer_drift: {drift['differs']} of {drift['checked']} sampled records "
                   f"({drift['differs_share']:.1%}) hold token ids that the inference tokenizer does not produce "
                   "from their text")
    if drift["same_without_special_tokens"]:
        out.append(f"tokenizer_drift: {drift['same_without_special_tokens']} of {drift['checked']} sampled records "
                   "lack the special tokens (BOS/EOS) the inference tokenizer adds")
    return out
