"""fineweb_quality: FineWeb's quality rules, deciding as datatrove's FineWebQualityFilter does.

Over the non-blank lines (split at "\\n" only, a line blank when only whitespace), in datatrove's order:
  empty              no non-blank line
  line_punct_ratio   share of lines ending with terminal punctuation (datatrove's TERMINAL_PUNCTUATION) <
                     line_punct_thr (a share of 0 passes when line_punct_exclude_zero)
  short_line_ratio   share of lines of at most short_line_length characters > short_line_thr
  char_dup_ratio     characters in lines seen before in the document / characters but "\\n" > char_duplicates_ratio
  list_ratio         "\\n" per word (spaCy's English tokens, as datatrove splits them) > new_line_ratio
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dataaudit.textops import spacy_en
from dataaudit.textops.arrow import string_buffers
from dataaudit.textops.hashing import WS_CLASS, numba_kernels

from .base import CheckOutput, register
from .quality_common import KERNELS, count, first_rule, per_text, ratio, rule_output, texts
from .text_common import beyond, char_lengths, flatten_lists, to_bool, to_int64

PARAMS = {"line_punct_thr": 0.12, "line_punct_exclude_zero": False, "short_line_thr": 0.67,
          "short_line_length": 30, "char_duplicates_ratio": 0.01, "new_line_ratio": 0.3}
RULES = (("empty", "non-blank lines", "=", None),
         ("line_punct_ratio", "share of lines ending with terminal punctuation", "<", "line_punct_thr"),
         ("short_line_ratio", "share of short lines", ">", "short_line_thr"),
         ("char_dup_ratio", "share of characters in duplicated lines", ">", "char_duplicates_ratio"),
         ("list_ratio", "line breaks per word", ">", "new_line_ratio"))


def fineweb_decide(arr, p: dict) -> tuple[np.ndarray, list[np.ndarray]]:
    """(the first rule that fires per text, -1 none; the measured value of every rule)."""
    arr = texts(arr)
    n = len(arr)
    nl, punct, short, dup, newlines = _line_stats(arr, p)
    empty = nl == 0
    with np.errstate(invalid="ignore"):
        fired = [empty,
                 ~empty & (punct < p["line_punct_thr"]) & ~((punct == 0) & bool(p["line_punct_exclude_zero"])),
                 ~empty & (short > p["short_line_thr"]),
                 ~empty & (dup > p["char_duplicates_ratio"])]
    # words only for the documents still kept (spaCy's split is the costly part)
    words = np.zeros(n, dtype=np.int64)
    alive = np.flatnonzero(~(fired[0] | fired[1] | fired[2] | fired[3]))
    if alive.size:
        words[alive] = spacy_en.chunk_stats(arr.take(pa.array(alive))).per_text("tokens")
    per_word = ratio(newlines, words)
    with np.errstate(invalid="ignore"):
        fired.append(np.isin(np.arange(n), alive) & (per_word > p["new_line_ratio"]))
    return first_rule(fired, n), [nl, punct, short, dup, per_word]


def _line_stats(arr: pa.Array, p: dict) -> tuple[np.ndarray, ...]:
    """Per text: non-blank lines, the shares of them ending with terminal punctuation and of short ones, the
    share of characters in duplicated lines, and the "\n" count. One pass of the numba kernel, else pyarrow."""
    n = len(arr)
    k = numba_kernels(KERNELS, work=arr.nbytes)
    terminal = spacy_en.tables().terminal
    if k is not None and all(len(t) == 1 for t in terminal):
        off, data = string_buffers(arr)
        st = np.zeros((n, 6), np.int64)
        k.fineweb_lines(off, data, WS_CLASS, np.array(sorted(map(ord, terminal)), np.int64),
                        int(p["short_line_length"]), st)
        nl = st[:, 0].astype(np.float64)
        return nl, ratio(st[:, 1], nl), ratio(st[:, 2], nl), ratio(st[:, 3], st[:, 5]), st[:, 4]
    lines, parent, _ = flatten_lists(pc.split_pattern(arr, pattern="\n"))
    blank = to_bool(pc.equal(pc.utf8_trim(lines, characters=spacy_en.SPACE_CHARS), ""))
    keep = np.flatnonzero(~blank)
    lines, parent = lines.take(pa.array(keep)), parent[keep]
    nl = np.bincount(parent, minlength=n).astype(np.float64)
    last = pc.utf8_slice_codeunits(lines, start=-1)
    terminal = to_bool(pc.is_in(last, value_set=pa.array(spacy_en.tables().terminal, pa.string())))
    length = char_lengths(lines)
    punct = ratio(per_text(parent, terminal, n), nl)
    short = ratio(per_text(parent, length <= p["short_line_length"], n), nl)
    # a line seen before in its document: its text's first occurrence among the document's lines
    enc = pc.dictionary_encode(lines)
    if isinstance(enc, pa.ChunkedArray):
        enc = enc.combine_chunks()
    key = parent * max(len(enc.dictionary), 1) + to_int64(enc.indices)
    seen_before = np.ones(len(key), dtype=bool)
    seen_before[np.unique(key, return_index=True)[1]] = False
    newlines = count(arr, "\n")
    dup = ratio(per_text(parent, seen_before, n, weights=length), char_lengths(arr) - newlines)
    return nl, punct, short, dup, newlines


@register(
    "fineweb_quality", target="text", severity="warning", params=PARAMS, enabled=False,
    detail="fineweb quality rule: measured {value:g}",
    description="FineWeb's quality rules (Penedo et al. 2024) with datatrove's FineWebQualityFilter's parameters, "
                "defaults and decisions, over the non-blank lines: share ending with terminal punctuation "
                "(line_punct_thr, a minimum; line_punct_exclude_zero), share of at most short_line_length "
                "characters (short_line_thr), characters in lines repeated within the document "
                "(char_duplicates_ratio) and line breaks per word (new_line_ratio; words are spaCy's English "
                "tokens as datatrove splits them, emulated exactly). A document without a non-blank line is "
                "flagged 'empty'. For pretraining web text: off unless enabled (`--profile pretrain`). value = the "
                "measured value of the first rule that fired (0 when none); the detail names the rule.",
)
def fineweb_quality(arr, **params) -> CheckOutput:
    p = {**PARAMS, **params}
    which, measured = fineweb_decide(arr, p)

    def describe(rule: int, value: float) -> str:
        name, what, op, key = RULES[rule]
        if key is None:
            return "fineweb: no non-blank line (empty)"
        return f"fineweb: {what} {beyond(value, p[key])} {op} {p[key]:g} ({name})"

    return rule_output(which, measured, describe)


__all__ = ["fineweb_quality", "fineweb_decide", "RULES"]
