"""Language checks (the `language` extra, pycld2): the language of every text, judged by
dataaudit.checks.language_id (a vectorized script pre-pass; CLD2 only on the texts it cannot decide).

They run when `[data] languages` lists the languages the data should be in (ISO 639-1 codes: ["en", "zh"]):
identifying languages costs a model call on every Latin-script text the pre-pass cannot decide, so an audit
asks for it. Texts with fewer than `min_letters` letters (after their code is removed) are not judged.

  unexpected_language  a text (each chat turn apart) whose language is not one of `languages`
  language_mismatch    an assistant reply in another language than the user turn it answers
  language_mix         never a flag: per shard and in total, the texts per language and the share not determined
                       (report.json's `language_mix` section and a line in its notes)
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

import numpy as np
import pyarrow as pa

from dataaudit.texts import Conversation

from .base import CheckOutput, SettingError, ShardState, register
from .conversation import ASSISTANT, USER, _by_record, _sides
from .language_id import ISO_639_1, MAX_CHARS, MIN_LETTERS, MODULE, identify

_LANG = {"params": {"languages": None, "min_letters": MIN_LETTERS, "max_chars": MAX_CHARS},
         "required": ("languages",), "data": {"languages": "languages"}, "needs": MODULE}
ROUND = 4
_last: list = []     # (texts, min_letters, max_chars, result): the batch's texts are judged once for every check


def _identify(arr, min_letters: int, max_chars: int) -> tuple[np.ndarray, np.ndarray]:
    if _last and _last[0] is arr and _last[1:3] == [min_letters, max_chars]:
        return _last[3]
    out = identify(arr, min_letters, max_chars)
    _last[:] = [arr, min_letters, max_chars, out]
    return out


def _resolve_data(data: dict, folder: Path | None) -> None:
    """[data] languages: a non-empty list of ISO 639-1 codes (a single string is a list of one)."""
    if "languages" not in data:
        return
    langs = data["languages"]
    langs = [langs] if isinstance(langs, str) else langs
    if not isinstance(langs, list) or not langs or not all(isinstance(x, str) for x in langs):
        raise SettingError(f"[data] languages must be a list of ISO 639-1 codes such as [\"en\", \"zh\"], "
                           f"got {data['languages']!r}")
    bad = [x for x in langs if x not in ISO_639_1]
    if bad:
        raise SettingError(f"[data] languages: {', '.join(map(repr, bad))} is not an ISO 639-1 code (two lowercase "
                           "letters: en, zh, fr, ...)")
    data["languages"] = list(dict.fromkeys(langs))


@register("unexpected_language", target="text", severity="warning", **_LANG, resolve_data=_resolve_data,
          detail="language not one of `languages`",
          description="A text (each conversation turn apart) whose language is not one of `[data] languages` "
                      "(ISO 639-1 codes). Fenced and inline code is not judged; texts with fewer than "
                      "`min_letters` letters are not judged; the model reads the first `max_chars` characters. "
                      "Needs the `language` extra (pycld2). value = letters judged.")
def unexpected_language(arr, languages=None, min_letters: int = MIN_LETTERS, max_chars: int = MAX_CHARS,
                        **params) -> CheckOutput:
    code, letters = _identify(arr, min_letters, max_chars)
    flagged = (code != "") & ~np.isin(code, list(languages or ()))
    detail = np.full(len(code), None, dtype=object)
    allowed = ", ".join(languages or ())
    for i in np.flatnonzero(flagged):
        detail[i] = f"language {code[i]} (expected {allowed}; {letters[i]} letters)"
    return CheckOutput(flagged=flagged, value=letters.astype(np.float64), detail=detail)


@register("language_mismatch", target="conversation", severity="warning", **_LANG,
          detail="the reply is in another language than the user turn it answers",
          description="An assistant reply whose language differs from that of the user turn before it (both "
                      "judged: at least `min_letters` letters each, code aside, so a code-only reply is not "
                      "judged by its code). Runs with `[data] languages` set; needs the `language` extra. "
                      "value = such replies in the conversation.")
def language_mismatch(conv: Conversation, languages=None, min_letters: int = MIN_LETTERS,
                      max_chars: int = MAX_CHARS, **params) -> CheckOutput:
    side = _sides(conv.roles)
    n = side.size
    idx = np.arange(n, dtype=np.int64)
    is_user = side == USER
    last_user = np.maximum.accumulate(np.where(is_user, idx, -1)) if n else idx
    asks = (side == ASSISTANT) & (last_user >= 0)
    asks[asks] &= conv.rows[last_user[asks]] == conv.rows[asks]    # the user turn is in the same conversation
    pair_user = last_user[asks]
    judged = np.unique(np.concatenate([np.flatnonzero(asks), pair_user]))
    code = np.full(n, "", dtype=object)
    if judged.size and conv.text is not None:
        texts = conv.text.take(pa.array(judged, pa.int64()))
        code[judged] = identify(texts, min_letters, max_chars)[0]
    reply = np.flatnonzero(asks)
    bad = np.zeros(n, bool)
    bad[reply] = (code[reply] != "") & (code[pair_user] != "") & (code[reply] != code[pair_user])
    asked = np.full(n, -1, np.int64)
    asked[reply] = pair_user

    def detail(first, count):
        out = np.full(conv.records, None, dtype=object)
        for r in np.flatnonzero(first >= 0):
            t = int(first[r])
            out[r] = (f"turn {conv.turn[t]} is {code[t]}, the user turn {conv.turn[asked[t]]} it answers is "
                      f"{code[asked[t]]}" + (f" ({count[r]:.0f} such replies)" if count[r] > 1 else ""))
        return out

    return _by_record(conv, bad, detail)


# ------------------------------------------------------------------------------------------------ language_mix

def mix_state() -> dict:
    return {"texts": 0, "undetermined": 0, "short": 0, "languages": {}}


def merge_mix(into: dict, part: dict) -> dict:
    for key in ("texts", "undetermined", "short"):
        into[key] += part[key]
    for lang, k in part["languages"].items():
        into["languages"][lang] = into["languages"].get(lang, 0) + k
    return into


def _measures(state: dict) -> dict:
    texts = state["texts"]
    langs = dict(sorted(state["languages"].items(), key=lambda kv: (-kv[1], kv[0])))
    return {"texts": texts, "languages": langs,
            "shares": {k: round(v / texts, ROUND) for k, v in langs.items()} if texts else {},
            "undetermined": state["undetermined"], "short": state["short"],
            "share_undetermined": round(state["undetermined"] / texts, ROUND) if texts else None}


def mix_section(total: dict, shards: list[tuple[str, dict | None]], settings, data: Mapping[str, Any]) -> dict | None:
    """report.json's `language_mix`: the totals, then each shard with texts (None when no shard has text)."""
    checked = [(p, st) for p, st in shards if st is not None and st["texts"]]
    if not settings.enabled or not checked:
        return None
    return {**_measures(total), "expected": list(data.get("languages") or ()),
            "shards": [{"path": p, **_measures(st)} for p, st in checked]}


def mix_notes(section: dict) -> list[str]:
    top = ", ".join(f"{k} {v:.1%}" for k, v in list(section["shares"].items())[:6])
    more = len(section["shares"]) - 6
    return [f"language_mix: {section['texts']:,} texts: {top or 'none determined'}"
            + (f" (+{more} more languages)" if more > 0 else "")
            + f"; undetermined {section['share_undetermined']:.1%} (short or unknown)"]


@register("language_mix", target="text", severity="info", **_LANG,
          state=ShardState(start=mix_state, merge=merge_mix, section=mix_section, notes=mix_notes),
          detail="",
          description="The language mix, never a flag: per shard and in total (report.json's `language_mix`), "
                      "the texts (each conversation turn apart) per language, and how many are undetermined "
                      "(fewer than `min_letters` letters, or unknown to the model). Runs with `[data] languages` "
                      "set; needs the `language` extra.")
def language_mix(arr, state: dict, languages=None, min_letters: int = MIN_LETTERS, max_chars: int = MAX_CHARS,
                 **params) -> CheckOutput:
    code, letters = _identify(arr, min_letters, max_chars)
    n = len(code)
    valid = np.asarray(arr.is_valid().to_numpy(zero_copy_only=False)) if n else np.zeros(0, bool)
    code, letters = code[valid], letters[valid]
    found, counts = np.unique(code[code != ""], return_counts=True)
    part = {"texts": int(code.size), "undetermined": int((code == "").sum()),
            "short": int((letters < min_letters).sum()),
            "languages": {str(k): int(v) for k, v in zip(found, counts)}}
    return CheckOutput(flagged=np.zeros(n, bool), value=np.zeros(n), state=part)
