"""Profiles: named sets of check settings for a kind of data, defined here and nowhere else.

A profile is chosen with `dataaudit audit --profile NAME` or `profile = "NAME"` at the top of the audit TOML (the
command line wins). Its settings apply over the checks' defaults and under the config's own [checks.NAME] tables:
the config always has the last word. report.json's `config.profile` records the profile used.

  sft        the defaults: instruction, chat and preference data (the pretraining quality rules stay off)
  pretrain   pretraining web documents: also the Gopher, C4 and FineWeb quality rules, the document length and the
             character class shares; `repetition` judges short texts as documents (answer_words = 0) and counts
             the words of short-line blocks (block_lines = 0)
"""
from __future__ import annotations

from typing import Any

DEFAULT = "sft"
PRETRAIN_QUALITY = ("gopher_quality", "c4_quality", "fineweb_quality", "doc_length", "char_class_ratio")

# profile -> {check name: {"enabled": bool, "severity": str, or any of its parameters}}
PROFILES: dict[str, dict[str, dict[str, Any]]] = {
    "sft": {},
    # a web document under 200 words is still a document: Gopher's repetition thresholds, not an answer's; and its
    # blocks of short lines (menus, link lists) are boilerplate to count, not options or verse
    "pretrain": {**{name: {"enabled": True} for name in PRETRAIN_QUALITY},
                 "repetition": {"answer_words": 0, "block_lines": 0}},
}


def profile_settings(name: str) -> dict[str, dict[str, Any]]:
    """The [checks.*] tables of profile `name` (KeyError for an unknown one)."""
    return {check: dict(table) for check, table in PROFILES[name].items()}


__all__ = ["DEFAULT", "PROFILES", "PRETRAIN_QUALITY", "profile_settings"]
