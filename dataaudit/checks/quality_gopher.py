"""gopher_quality: the Gopher (MassiveText) quality rules, deciding as datatrove's GopherQualityFilter does.

Its words are datatrove's for English: spaCy's tokens (dataaudit.textops.spacy_en emulates spaCy's English
tokenizer exactly, without spaCy). A "non-symbol word" has a character outside datatrove's PUNCTUATION_SET.
The rules, in datatrove's order (the first that fires is the flag's reason; a threshold of 0 turns its rule off):
  gopher_short_doc / gopher_long_doc      non-symbol words < min_doc_words / > max_doc_words
  gopher_below/above_avg_threshold        their mean length < min_avg_word_length / > max_avg_word_length
  gopher_too_many_hashes                  "#" per word > max_symbol_word_ratio
  gopher_too_many_ellipsis                ("..." + "…") per word > max_symbol_word_ratio
  gopher_too_many_bullets                 lines (str.splitlines) starting with "•" or "-" > max_bullet_lines_ratio
  gopher_too_many_end_ellipsis            lines ending with "..." or "…" > max_ellipsis_lines_ratio
  gopher_below_alpha_threshold            words holding a letter (str.isalpha) < max_non_alpha_words_ratio
  gopher_enough_stop_words                distinct stop words among the words < min_stop_words
"""
from __future__ import annotations

import numpy as np

from dataaudit.textops import spacy_en

from .base import CheckOutput, register
from .quality_common import count, first_rule, match, per_text, ratio, rule_output, splitlines, texts
from .text_common import beyond

STOP_WORDS = ["the", "be", "to", "of", "and", "that", "have", "with"]
PARAMS = {"min_doc_words": 50, "max_doc_words": 100000, "min_avg_word_length": 3.0, "max_avg_word_length": 10.0,
          "max_symbol_word_ratio": 0.1, "max_bullet_lines_ratio": 0.9, "max_ellipsis_lines_ratio": 0.3,
          "max_non_alpha_words_ratio": 0.8, "min_stop_words": 2, "stop_words": list(STOP_WORDS)}
# (datatrove's reason, what is measured, comparison, the param holding the threshold)
RULES = (("gopher_short_doc", "non-symbol words", "<", "min_doc_words"),
         ("gopher_long_doc", "non-symbol words", ">", "max_doc_words"),
         ("gopher_below_avg_threshold", "mean word length", "<", "min_avg_word_length"),
         ("gopher_above_avg_threshold", "mean word length", ">", "max_avg_word_length"),
         ("gopher_too_many_hashes", "'#' per word", ">", "max_symbol_word_ratio"),
         ("gopher_too_many_ellipsis", "ellipses per word", ">", "max_symbol_word_ratio"),
         ("gopher_too_many_bullets", "share of lines starting with a bullet", ">", "max_bullet_lines_ratio"),
         ("gopher_too_many_end_ellipsis", "share of lines ending with an ellipsis", ">", "max_ellipsis_lines_ratio"),
         ("gopher_below_alpha_threshold", "share of words with a letter", "<", "max_non_alpha_words_ratio"),
         ("gopher_enough_stop_words", "distinct stop words", "<", "min_stop_words"))

_SPACE = "[" + spacy_en.SPACE_CLASS + "]*"
_BULLET_RE = "^" + _SPACE + "[•-]"
_END_ELLIPSIS_RE = "(?:\\.\\.\\.|…)" + _SPACE + "$"


def detail_of(rule: int, value: float, p: dict, prefix: str = "gopher") -> str:
    _, what, op, key = RULES[rule]
    limit = p[key]
    shown = str(int(value)) if float(value).is_integer() else beyond(value, limit)
    return f"{prefix}: {what} {shown} {op} {limit:g} ({RULES[rule][0]})"


def gopher_stats(arr, stop_words) -> dict[str, np.ndarray]:
    """The statistics the rules read, per text."""
    n = len(arr)
    st = spacy_en.chunk_stats(arr, stop_words)
    lines, parent, nlines = splitlines(arr)
    return {"words": st.per_text("tokens"), "nonsym": st.per_text("nonsym"),
            "nonsym_chars": st.per_text("nonsym_chars"), "alpha": st.per_text("alpha"), "stop": st.stop_words(),
            "hashes": count(arr, "#"), "ellipses": count(arr, "...") + count(arr, "…"), "lines": nlines,
            "bullets": per_text(parent, match(lines, _BULLET_RE), n),
            "end_ellipsis": per_text(parent, match(lines, _END_ELLIPSIS_RE), n)}


@register(
    "gopher_quality", target="text", severity="warning", params=PARAMS, enabled=False,
    detail="gopher quality rule: measured {value:g}",
    description="Gopher's quality rules (Rae et al. 2021) with datatrove's GopherQualityFilter's parameters, "
                "defaults and decisions: non-symbol words (min_doc_words, max_doc_words), their mean length "
                "(min/max_avg_word_length), '#' and ellipses per word (max_symbol_word_ratio), lines starting with "
                "a bullet (max_bullet_lines_ratio) or ending with an ellipsis (max_ellipsis_lines_ratio), words "
                "with a letter (max_non_alpha_words_ratio, a minimum share) and distinct stop words "
                "(min_stop_words, stop_words). Words are spaCy's English tokens, as datatrove splits them "
                "(emulated exactly, without spaCy). A threshold of 0 turns its rule off. For pretraining web "
                "text: off unless enabled (`--profile pretrain`). value = the measured value of the first rule "
                "that fired (0 when none); the detail names the rule.",
)
def gopher_quality(arr, **params) -> CheckOutput:
    p = {**PARAMS, **params}
    arr = texts(arr)
    n = len(arr)
    s = gopher_stats(arr, p["stop_words"])
    avg = ratio(s["nonsym_chars"], s["nonsym"])
    measured = [s["nonsym"], s["nonsym"], avg, avg, ratio(s["hashes"], s["words"]), ratio(s["ellipses"], s["words"]),
                ratio(s["bullets"], s["lines"]), ratio(s["end_ellipsis"], s["lines"]), ratio(s["alpha"], s["words"]),
                s["stop"]]
    fired = []
    with np.errstate(invalid="ignore"):
        for (name, _, op, key), m in zip(RULES, measured):
            limit = p[key]
            fired.append(np.zeros(n, dtype=bool) if not limit else (m < limit if op == "<" else m > limit))
    return rule_output(first_rule(fired, n), measured, lambda rule, value: detail_of(rule, value, p))


__all__ = ["gopher_quality", "gopher_stats", "RULES", "STOP_WORDS"]
