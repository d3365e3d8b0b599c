"""special_tokens: special-token strings written literally inside the text.

Most training stacks tokenize a literal `<|im_end|>`, `<|endoftext|>`, `</s>` or `[INST]` in raw text as the
real control token, so a scraped chat log or a tutorial about chat templates silently ends a turn, ends the
document or opens a new role in the middle of a sample. The check flags every text holding one.

Which strings:
  tokens        the default list, dataaudit.textops.special_tokens.CHAT_SPECIAL_TOKENS (ChatML, Llama-2/3,
                Mistral, Gemma, Phi, Zephyr, GPT end-of-text, fill-in-the-middle, SentencePiece <s> </s> <unk>
                <pad>); `[checks.special_tokens] tokens = [...]` replaces it
  extra_tokens  added to the list (`extra_tokens = ["<|my_turn|>"]`)
  tokenizer     the special tokens of `[data] tokenizer` (a tokenizer.json; its `added_tokens`):
                - every token with "special": true, except a blank one or a plain word (letters and digits
                  only: a tokenizer marking "USER" special would otherwise flag every text with that word);
                - a non-special added token only when it is shaped like a control token: `<...>` or `[...]`
                  (also `<<...>>`, `<|...|>`) with no whitespace inside, e.g. Qwen's `<tool_call>`. Other added
                  tokens are vocabulary, not control: runs of spaces (GPT-NeoX) and PII placeholders such as
                  `|||EMAIL_ADDRESS|||` (the Pile's scrubbing marks, meant to be in the text) are not flagged.
                Set `tokenizer = ""` in [checks.special_tokens] to use the lists alone.

`<s>` and `</s>` are also HTML's strikethrough tags. They are kept: a Llama/Mistral SentencePiece tokenizer
encodes them as BOS/EOS whichever was meant, so HTML strikethrough in training text is exactly the hazard the
check is for; the detail names the token, and a stack without those tokens can drop them with `tokens = [...]`.
The real corpora in ../shared/data (GSM8K, ARC, tinyshakespeare, the ShareGPT / SFT chat demos, the WebDataset
passages) hold none of the default strings.

Matching is exact (case-sensitive) and vectorized: `textops.literals.count_literals` counts the strings as RE2
counts their alternation, longest first (so `<|end|>` never shadows `<|endoftext|>`), non-overlapping: a numba
kernel that skips, eight bytes at a time, the bytes no token starts with (RE2 itself without numba).
value = number of occurrences; detail (flagged rows only) names them: "special token '<|im_end|>' x2, '</s>'".
"""
from __future__ import annotations

import json
import os
import re
from collections import Counter
from functools import lru_cache
from pathlib import Path

import numpy as np

from dataaudit.checks.base import CheckOutput, SettingError, register
from dataaudit.checks.text_common import as_string_array, clip, rows_as_str
from dataaudit.textops.literals import count_literals, ordered
from dataaudit.textops.special_tokens import CHAT_SPECIAL_TOKENS

DETAIL_TOKENS = 5   # tokens named in a detail string (then "+N more")

# A non-special added token counts when it looks like a control token: <x>, <<x>>, <|x|>, [x], [[x]].
_CONTROL_SHAPE = re.compile(r"<+[^<>\s]+>+|\[+[^\[\]\s]+\]+")


def _is_control_token(content: str, special: bool) -> bool:
    if not content.strip():
        return False
    if special:
        return not content.isalnum()
    return _CONTROL_SHAPE.fullmatch(content) is not None


def _tokenizer_file(path: str | os.PathLike) -> Path:
    p = Path(path)
    return p / "tokenizer.json" if p.is_dir() else p


@lru_cache(maxsize=16)
def _read_control_tokens(path: str, mtime_ns: int, size: int) -> tuple[str, ...]:
    spec = json.loads(Path(path).read_text(encoding="utf-8"))
    added = (spec.get("added_tokens") or []) if isinstance(spec, dict) else None
    if not isinstance(added, list):
        raise ValueError("no `added_tokens` list (not a tokenizers tokenizer.json)")
    out: dict[str, None] = {}
    for t in added:
        content = t.get("content") if isinstance(t, dict) else None
        if isinstance(content, str) and _is_control_token(content, bool(t.get("special"))):
            out[content] = None
    return tuple(out)


def tokenizer_control_tokens(path: str | os.PathLike) -> tuple[str, ...]:
    """The strings a tokenizer.json (or a folder holding one) contributes, in its `added_tokens` order: its
    special tokens that are not plain words, and its non-special added tokens shaped like control tokens."""
    p = _tokenizer_file(path)
    st = p.stat()
    return _read_control_tokens(str(p.resolve()), st.st_mtime_ns, st.st_size)


def token_list(tokens=CHAT_SPECIAL_TOKENS, extra_tokens=(), tokenizer: str | None = None) -> tuple[str, ...]:
    """Every string the check looks for: `tokens`, `extra_tokens`, then the tokenizer's (each once, no empties)."""
    if isinstance(tokens, str) or isinstance(extra_tokens, str):
        raise TypeError("special_tokens: tokens and extra_tokens are lists of strings")
    found = list(tokens or ()) + list(extra_tokens or ())
    if tokenizer:
        found += tokenizer_control_tokens(tokenizer)
    return tuple(dict.fromkeys(t for t in found if isinstance(t, str) and t))


@lru_cache(maxsize=64)
def _python_pattern(tokens: tuple[str, ...]) -> re.Pattern:
    """The tokens as one Python `re` alternation, tried in `literals.ordered` order (what the count finds)."""
    return re.compile("|".join(map(re.escape, ordered(tokens))))


def _describe(found: list[str]) -> str:
    counts = Counter(found)                             # most_common keeps first-seen order among ties
    parts = [f"'{clip(tok, 40)}'" + (f" x{k}" if k > 1 else "") for tok, k in counts.most_common(DETAIL_TOKENS)]
    more = f", +{len(counts) - DETAIL_TOKENS} more" if len(counts) > DETAIL_TOKENS else ""
    return "special token " + ", ".join(parts) + more


def _resolve_data(data: dict, folder: Path | None) -> None:
    """[data] tokenizer (already resolved and checked to exist by the config): its added tokens must be readable."""
    if not data.get("tokenizer"):
        return
    try:
        tokenizer_control_tokens(data["tokenizer"])
    except (OSError, ValueError, TypeError, AttributeError) as exc:
        raise SettingError(f"[data] tokenizer {data['tokenizer']}: cannot read its added tokens: {exc}") from None


def _locate(text: str, tokens=CHAT_SPECIAL_TOKENS, extra_tokens=(), tokenizer: str | None = None,
            **params) -> tuple[int, int] | None:
    """The first special-token string in the text."""
    wanted = token_list(tokens, extra_tokens, tokenizer)
    m = _python_pattern(wanted).search(text) if wanted else None
    return m.span() if m else None


@register(
    "special_tokens", target="text", severity="warning", locate=_locate,
    params={"tokens": CHAT_SPECIAL_TOKENS, "extra_tokens": (), "tokenizer": None},
    data={"tokenizer": "tokenizer"}, resolve_data=_resolve_data,
    detail="{value:.0f} special-token strings in the text",
    description="Special-token strings written literally in the text (<|im_end|>, <|endoftext|>, </s>, [INST], "
                "...), which most training stacks encode as the real control token: `tokens` (31 chat/decoder "
                "spellings; a list replaces them), `extra_tokens` (added), and the special tokens of [data] "
                "tokenizer (its added tokens marked special, and non-special ones shaped <...> or [...]). "
                "Exact, case-sensitive; <s>/</s> also match HTML strikethrough, which those tokenizers encode "
                "as BOS/EOS too. value = number of occurrences.",
)
def special_tokens(arr, tokens=CHAT_SPECIAL_TOKENS, extra_tokens=(), tokenizer: str | None = None,
                   **params) -> CheckOutput:
    arr = as_string_array(arr)
    wanted = token_list(tokens, extra_tokens, tokenizer)
    if not wanted:
        return CheckOutput(flagged=np.zeros(len(arr), dtype=bool), value=np.zeros(len(arr)), detail=None)
    count = count_literals(arr, wanted)
    flagged = count > 0
    detail = None
    rows = np.flatnonzero(flagged)
    if rows.size:
        detail = np.full(len(arr), None, dtype=object)
        for i, s in zip(rows, rows_as_str(arr, rows)):
            detail[i] = _describe(_python_pattern(wanted).findall(s))
    return CheckOutput(flagged=flagged, value=count.astype(np.float64), detail=detail)


__all__ = ["special_tokens", "token_list", "tokenizer_control_tokens"]
