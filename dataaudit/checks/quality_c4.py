"""c4_quality: C4's line and document rules, deciding as datatrove's C4QualityFilter (default settings) does.

datatrove's filter edits the text: it keeps only the lines that pass the line rules, and drops the document when
a kept line holds "lorem ipsum" or "{" or when the kept lines hold fewer than min_num_sentences sentences. This
check never edits: it flags the document datatrove would drop, naming the rule, and says how many lines the line
rules would remove. Per line (str.splitlines, stripped), in datatrove's order:
  a word (str.split) longer than max_word_length        the line is removed
  citations ([1], [edit], [citation needed]) removed     (remove_citations)
  no terminal punctuation (. ? ! " '), or ends in "..."   the line is removed (filter_no_terminal_punct)
  fewer than min_words_per_line words                    the line is removed
  "lorem ipsum" (lowercased)                             the document is dropped: lorem_ipsum
  "javascript"                                           the line is removed (filter_javascript)
  "{"                                                    the document is dropped: curly_bracket
  a cookie / terms-of-use phrase                         the line is removed (filter_policy)
then the kept lines' sentences (spaCy's Sentencizer, as datatrove splits them) < min_num_sentences: too_few_sentences.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dataaudit.textops import spacy_en
from dataaudit.textops.arrow import string_buffers

from .base import CheckOutput, register
from .quality_common import first_rule, match, per_text, splitlines, texts, words_per_line

PARAMS = {"remove_citations": True, "filter_no_terminal_punct": True, "min_num_sentences": 5,
          "min_words_per_line": 3, "max_word_length": 1000, "filter_lorem_ipsum": True, "filter_javascript": True,
          "filter_curly_bracket": True, "filter_policy": True}
POLICY_SUBSTRINGS = ["terms of use", "privacy policy", "cookie policy", "uses cookies", "use of cookies",
                     "use cookies"]
# Python's \d is any Unicode decimal digit
CITATION_RE = "\\[\\p{Nd}*\\]|\\[edit\\]|\\[citation needed\\]"
LINE_RULES = ("too_long_word", "no_terminal_punct", "too_few_words", "javascript", "policy")


def c4_decide(arr, p: dict):
    """(which document rule fires: 0 lorem_ipsum, 1 curly_bracket, 2 too_few_sentences, -1 none; sentences in
    the kept lines; lines removed per line rule {name: per text}; lines per text; the first offending line)."""
    arr = texts(arr)
    n = len(arr)
    raw, parent, nlines = splitlines(arr)
    lines = pc.utf8_trim(raw, characters=spacy_en.SPACE_CHARS)
    n_words, longest = words_per_line(raw)
    maxlen = p["max_word_length"]
    long_word = longest > maxlen if maxlen and maxlen > 0 else np.zeros(len(lines), dtype=bool)
    if p["remove_citations"]:
        # only a line holding "[" can hold a citation
        cited = to_bool_arr(pc.match_substring(lines, "["))
        if cited.any():
            fixed = pc.replace_substring_regex(lines.filter(pa.array(cited)), pattern=CITATION_RE, replacement="")
            lines = pc.replace_with_mask(lines, pa.array(cited), fixed.cast(lines.type))
    if p["filter_no_terminal_punct"]:
        no_punct = ~_ends_terminal(lines)
    else:
        no_punct = np.zeros(len(lines), dtype=bool)
    few = n_words < p["min_words_per_line"]
    eligible = ~long_word & ~no_punct & ~few
    # the substring rules read only the lines still kept (in code most lines are removed before them)
    at = np.flatnonzero(eligible)
    sub = lines.take(pa.array(at))
    lower = pc.utf8_lower(sub)

    def on(rule: bool, found) -> np.ndarray:
        hit = np.zeros(len(lines), bool)
        if rule:
            hit[at] = found()
        return hit

    lorem = on(p["filter_lorem_ipsum"], lambda: match(lower, "lorem ipsum"))
    js = ~lorem & on(p["filter_javascript"], lambda: match(lower, "javascript"))
    curly = ~lorem & ~js & on(p["filter_curly_bracket"], lambda: to_bool_arr(pc.match_substring(sub, "{")))
    rest = eligible & ~lorem & ~js & ~curly
    policy = rest & on(p["filter_policy"], lambda: match(lower, "|".join(POLICY_SUBSTRINGS)))
    kept = rest & ~policy
    removed = {"too_long_word": per_text(parent, long_word, n),
               "no_terminal_punct": per_text(parent, ~long_word & no_punct, n),
               "too_few_words": per_text(parent, ~long_word & ~no_punct & few, n),
               "javascript": per_text(parent, js, n), "policy": per_text(parent, policy, n)}
    # the first line that drops the document
    drop_line = lorem | curly
    first = np.full(n, -1, dtype=np.int64)
    rows = np.flatnonzero(drop_line)
    if rows.size:
        docs, at = np.unique(parent[rows], return_index=True)
        first[docs] = rows[at]
    doc_lorem = np.zeros(n, dtype=bool)
    doc_curly = np.zeros(n, dtype=bool)
    has = first >= 0
    doc_lorem[has] = lorem[first[has]]
    doc_curly[has] = curly[first[has]]
    sentences = np.zeros(n, dtype=np.int64)
    k = np.flatnonzero(kept)
    if k.size and p["min_num_sentences"] > 0:
        counts = spacy_en.sentence_counts(lines.take(pa.array(k)))
        sentences = np.bincount(parent[k], weights=counts, minlength=n).astype(np.int64)
    few_sent = sentences < p["min_num_sentences"]
    which = first_rule([doc_lorem, doc_curly, few_sent], n)
    first_line = np.where(has, first - (np.cumsum(nlines) - nlines), -1)     # its number in its text
    return which, sentences, removed, nlines, first_line


def _ends_terminal(lines: pa.Array) -> np.ndarray:
    """Per line: it ends with one of . ? ! " ' and not with "..." (the lines' last bytes, read in place)."""
    off, data = string_buffers(lines)
    n = len(lines)
    out = np.zeros(n, dtype=bool)
    ends = off[1:]
    size = ends - off[:-1]
    has = np.flatnonzero(size > 0)
    last = data[ends[has] - 1]
    term = np.isin(last, np.frombuffer(b".?!\"'", np.uint8))
    three = has[term & (size[has] >= 3)]
    e = ends[three]
    ellipsis = np.zeros(n, dtype=bool)
    ellipsis[three] = (data[e - 1] == 46) & (data[e - 2] == 46) & (data[e - 3] == 46)
    out[has[term]] = True
    return out & ~ellipsis


def to_bool_arr(x) -> np.ndarray:
    return np.asarray(pc.fill_null(x, False).to_numpy(zero_copy_only=False), dtype=bool)


DOC_RULES = ("lorem_ipsum", "curly_bracket", "too_few_sentences")


def _removed(removed: dict, i: int, lines: int) -> str:
    parts = [f"{name} {int(v[i])}" for name, v in removed.items() if v[i]]
    total = int(sum(v[i] for v in removed.values()))
    return f"; the line rules remove {total} of {lines} lines ({', '.join(parts)})" if parts else ""


@register(
    "c4_quality", target="text", severity="warning", params=PARAMS, enabled=False,
    detail="c4 quality rule: {value:.0f} sentences in the kept lines",
    description="C4's heuristics (Raffel et al. 2020) with datatrove's C4QualityFilter's parameters, defaults and "
                "decisions (lines split at line breaks): a line is removed for a word over max_word_length "
                "characters, no terminal punctuation (filter_no_terminal_punct; after removing citations with "
                "remove_citations), fewer than min_words_per_line words, 'javascript' (filter_javascript) or a "
                "cookie / terms-of-use phrase (filter_policy); the document is flagged when a kept line holds "
                "'lorem ipsum' (filter_lorem_ipsum) or '{' (filter_curly_bracket), or the kept lines hold fewer "
                "than min_num_sentences sentences (spaCy's sentence splitter, emulated exactly). Flags only, never "
                "edits: the detail names the rule and the lines the line rules would remove. 0 turns "
                "min_num_sentences, min_words_per_line or max_word_length off. For pretraining web text: off unless "
                "enabled (`--profile pretrain`). value = sentences in the kept lines.",
)
def c4_quality(arr, **params) -> CheckOutput:
    p = {**PARAMS, **params}
    which, sentences, removed, nlines, first_line = c4_decide(arr, p)
    n = len(which)
    flagged = which >= 0
    detail = None
    rows = np.flatnonzero(flagged)
    if rows.size:
        detail = np.full(n, None, dtype=object)
        for i in rows:
            if which[i] == 2:
                head = f"c4: {sentences[i]} sentences in the kept lines < {p['min_num_sentences']} (too_few_sentences)"
            else:
                what = "'lorem ipsum'" if which[i] == 0 else "'{'"
                head = f"c4: line {first_line[i] + 1} holds {what} ({DOC_RULES[which[i]]})"
            detail[i] = head + _removed(removed, i, int(nlines[i]))
    return CheckOutput(flagged=flagged, value=sentences.astype(np.float64), detail=detail)


__all__ = ["c4_quality", "c4_decide", "DOC_RULES"]
