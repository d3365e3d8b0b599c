"""Preference-pair and KTO checks: what makes a pair teach nothing or the wrong thing (dataaudit.pairs).

A pair check compares the two replies of one record (each side's last turn, or its whole string); `where` names
the side it flags (`chosen[0].value`, `rejected`, `chosen_messages[2].content[0].value`). Replies are compared
after whitespace and case normalization (runs of whitespace become one space, ends trimmed, lower case), so a
reformatted copy is still a copy. The turn checks (empty reply, special tokens, repetition, ...) see each side as
text already; these only judge the pair.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dataaudit.pairs import KtoBatch, PairBatch
from dataaudit.textops.arrow import string_buffers

from .base import CheckOutput, register


def _norm(arr: pa.Array) -> pa.Array:
    return pc.utf8_lower(pc.utf8_trim_whitespace(pc.binary_join(pc.utf8_split_whitespace(arr), " ")))


def _bool(arr) -> np.ndarray:
    return np.asarray(arr.to_numpy(zero_copy_only=False), dtype=bool)


def _blank(arr: pa.Array) -> np.ndarray:
    return _bool(pc.fill_null(pc.equal(pc.utf8_trim_whitespace(arr), ""), True))


def _normalized(pairs: PairBatch) -> tuple[pa.Array, pa.Array, np.ndarray]:
    """(chosen, rejected) normalized, and whether both sides have text (the pairs the comparisons judge); once
    per batch, whichever check asks first."""
    if "normalized" not in pairs.cache:
        c, r = _norm(pairs.chosen.reply), _norm(pairs.rejected.reply)
        both = ~_blank(c) & ~_blank(r)
        pairs.cache["normalized"] = pc.fill_null(c, ""), pc.fill_null(r, ""), both
    return pairs.cache["normalized"]


def _lengths(arr: pa.Array) -> np.ndarray:
    return np.asarray(pc.utf8_length(arr).to_numpy(zero_copy_only=False), dtype=np.int64)


def _none(n: int) -> np.ndarray:
    return np.full(n, None, dtype=object)


@register("pair_empty_side", target="pair", severity="error",
          detail="one side of the pair has no reply",
          description="A preference pair whose chosen or rejected reply is missing, empty or whitespace-only: "
                      "the trainer compares a reply with nothing. value = 1 chosen, 2 rejected, 3 both.")
def pair_empty_side(pairs: PairBatch, **params) -> CheckOutput:
    c, r = _blank(pairs.chosen.reply), _blank(pairs.rejected.reply)
    value = c * 1.0 + r * 2.0
    where = np.where(c, pairs.chosen.path, pairs.rejected.path)
    detail = np.where(c & r, "both replies are empty", np.where(c, "the chosen reply is empty",
                                                                 "the rejected reply is empty")).astype(object)
    return CheckOutput(flagged=c | r, value=value, detail=detail, where=where)


@register("pair_identical", target="pair", severity="error",
          detail="chosen and rejected are the same reply",
          description="A pair whose two replies are equal after whitespace and case normalization: no "
                      "preference to learn. value = length of the reply in characters.")
def pair_identical(pairs: PairBatch, **params) -> CheckOutput:
    c, r, both = _normalized(pairs)
    same = both & _bool(pc.equal(c, r))
    return CheckOutput(flagged=same, value=_lengths(c).astype(np.float64), where=pairs.rejected.path,
                       detail=np.where(same, "the rejected reply equals the chosen one (after whitespace and "
                                       "case normalization)", None).astype(object))


def _prefix(pairs: PairBatch):
    if "prefix" in pairs.cache:
        return pairs.cache["prefix"]
    c, r, both = _normalized(pairs)
    co, cd = string_buffers(c)
    ro, rd = string_buffers(r)
    from dataaudit.textops.pair_kernels import common_prefix   # numba loads only where pairs are checked

    shared = common_prefix(co, cd, ro, rd)
    cl, rl = np.diff(co), np.diff(ro)
    differ = both & (cl != rl)
    shorter_rejected = rl < cl
    prefix = differ & (shared == np.minimum(cl, rl))
    pairs.cache["prefix"] = c, r, both, co, cd, ro, rd, prefix, shorter_rejected
    return pairs.cache["prefix"]


@register("pair_prefix", target="pair", severity="warning", params={"min_chars": 20},
          detail="one reply is the start of the other",
          description="A pair where one reply (after normalization) is a strict prefix of the other: usually a "
                      "cut-off reply, so the preference teaches length, not quality. The flag names the shorter "
                      "side; a shorter side under `min_chars` characters is a short answer (\"no\" and \"No, because ...\"), not "
                      "a cut. value = share of the longer reply it covers.")
def pair_prefix(pairs: PairBatch, min_chars: int = 20, **params) -> CheckOutput:
    c, r, _, co, _, ro, _, prefix, short_r = _prefix(pairs)
    cl, rl = _lengths(c), _lengths(r)
    prefix = prefix & (np.minimum(cl, rl) >= min_chars)
    share = np.minimum(cl, rl) / np.maximum(np.maximum(cl, rl), 1)
    where = np.where(short_r, pairs.rejected.path, pairs.chosen.path)
    detail = _none(pairs.records)
    for i in np.flatnonzero(prefix):
        short, long = ("rejected", "chosen") if short_r[i] else ("chosen", "rejected")
        detail[i] = f"the {short} reply is the first {min(cl[i], rl[i])} of the {max(cl[i], rl[i])} characters " \
                    f"of the {long} one"
    return CheckOutput(flagged=prefix, value=share, detail=detail, where=where)


@register("pair_near_identical", target="pair", severity="warning", params={"threshold": 0.95},
          detail="chosen and rejected are nearly the same ({value:.3f} similar)",
          description="A pair whose replies differ by only a few edits (1 - Levenshtein distance / longer length, "
                      "on the normalized UTF-8 bytes, at least `threshold`), neither equal nor a prefix of the "
                      "other: little preference signal, often a copy with a typo. value = that similarity.")
def pair_near_identical(pairs: PairBatch, threshold: float = 0.95, **params) -> CheckOutput:
    c, r, both, co, cd, ro, rd, prefix, _ = _prefix(pairs)
    rows = np.flatnonzero(both & ~prefix & ~_bool(pc.equal(c, r)))
    from dataaudit.textops.pair_kernels import edit_ratio

    ratio = edit_ratio(co, cd, ro, rd, float(threshold), rows.astype(np.int64))
    near = ratio >= threshold
    return CheckOutput(flagged=near, value=np.maximum(ratio, 0.0), where=pairs.rejected.path)


@register("pair_prompt_mismatch", target="pair", severity="error",
          detail="the two sides answer different prompts",
          description="A pair whose sides carry their own prompt (v1 chosen_messages/rejected_messages: the turns "
                      "before the last; an implicit-prompt transcript: everything before the reply) and the two "
                      "prompts differ: the replies are not answers to one prompt. value = first differing "
                      "character of the prompts.")
def pair_prompt_mismatch(pairs: PairBatch, **params) -> CheckOutput:
    cp, rp = pairs.chosen.prompt, pairs.rejected.prompt
    n = pairs.records
    if cp is None or rp is None:
        return CheckOutput(flagged=np.zeros(n, bool), value=np.zeros(n))
    present = _bool(pc.and_(pc.is_valid(cp), pc.is_valid(rp)))
    differ = present & ~_bool(pc.fill_null(pc.equal(cp, rp), True))
    co, cd = string_buffers(pc.fill_null(cp, ""))
    ro, rd = string_buffers(pc.fill_null(rp, ""))
    from dataaudit.textops.pair_kernels import common_prefix

    at = common_prefix(co, cd, ro, rd).astype(np.float64)
    return CheckOutput(flagged=differ, value=at, where=pairs.rejected.path,
                       detail=np.where(differ, "the rejected side's prompt differs from the chosen side's",
                                       None).astype(object))


@register("kto_label", target="kto", severity="error",
          detail="the KTO label is not true or false",
          description="A KTO record whose label is null or not a bool (a string \"true\", a number): the trainer "
                      "cannot tell a desirable reply from an undesirable one. value = 1.")
def kto_label(kto: KtoBatch, **params) -> CheckOutput:
    values = kto.values
    n = len(values)
    null = ~_bool(pc.is_valid(values))
    if pa.types.is_boolean(values.type):
        flagged = null
    else:
        flagged = np.ones(n, bool)
    detail = _none(n)
    idx = np.flatnonzero(flagged)
    for i, v in zip(idx.tolist(), values.take(pa.array(idx, pa.int64())).to_pylist()):   # flagged rows only
        detail[i] = "the label is null" if null[i] else f"the label is {v!r} ({values.type}), not a bool"
    return CheckOutput(flagged=flagged, value=flagged.astype(np.float64), detail=detail)
