"""Reward-model data with more than two ranked responses (the "ranked" layout, dataaudit.fields): a list of
responses per prompt, each with a score (higher is better) or a rank (lower is better); dataaudit.pairs.RankBatch.

One flag per record at most per check; `where` names the response (`responses[2]`, `completions[2].response`).
Responses are compared after the pair checks' whitespace and case normalization. A shape the field rule does not
understand is never flagged: it is named in the summary's notes as not checked.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dataaudit.pairs import RankBatch

from .base import CheckOutput, register
from .pairs import _blank, _bool, _norm


def _first_per_record(rows: np.ndarray, which: np.ndarray, n: int) -> np.ndarray:
    """Per record, the index of its first item where `which` holds (-1: none)."""
    out = np.full(n, -1, np.int64)
    idx = np.flatnonzero(which)[::-1]
    out[rows[idx]] = idx
    return out


@register("ranked_empty_response", target="ranked", severity="error",
          detail="a response is empty",
          description="Ranked reward data: a record with fewer than two responses (nothing to rank), or a response "
                      "that is missing, empty or whitespace-only. value = number of responses.")
def ranked_empty_response(ranked: RankBatch, **params) -> CheckOutput:
    n = ranked.records
    blank = _blank(ranked.text)
    first = _first_per_record(ranked.row, blank, n)
    few = ranked.count < 2
    flagged = few | (first >= 0)
    where = np.full(n, None, dtype=object)
    detail = np.full(n, None, dtype=object)
    for i in np.flatnonzero(flagged).tolist():
        if few[i]:
            where[i] = ranked.layout.responses.name
            detail[i] = "no responses" if ranked.count[i] <= 0 else "only one response: nothing to rank"
        else:
            where[i] = ranked.path[first[i]]
            detail[i] = f"response {ranked.pos[first[i]]} is empty"
    return CheckOutput(flagged=flagged, value=np.maximum(ranked.count, 0).astype(np.float64), detail=detail,
                       where=where)


@register("ranked_identical", target="ranked", severity="error",
          detail="two responses are the same",
          description="Ranked reward data: two responses of one record are equal after whitespace and case "
                      "normalization (their ranking teaches nothing). The flag names the later copy. value = "
                      "index of the earlier one.")
def ranked_identical(ranked: RankBatch, **params) -> CheckOutput:
    from dataaudit.dedup.exact import exact_hashes

    n = ranked.records
    norm = pc.fill_null(_norm(ranked.text), "")
    keep = np.flatnonzero(~_blank(norm))
    hi, lo = exact_hashes(norm.take(pa.array(keep, pa.int64())))
    row, pos = ranked.row[keep], ranked.pos[keep]
    order = np.lexsort((pos, lo, hi, row))
    same = np.zeros(keep.size, bool)
    if keep.size > 1:
        s = order
        same[s[1:]] = (row[s[1:]] == row[s[:-1]]) & (hi[s[1:]] == hi[s[:-1]]) & (lo[s[1:]] == lo[s[:-1]])
    # the earlier copy of each: the first of its run in sorted order
    start = np.ones(keep.size, bool)
    start[order[1:]] = ~same[order[1:]]
    run_first = np.maximum.accumulate(np.where(start[order], np.arange(keep.size), 0)) if keep.size else order
    earlier = np.empty(keep.size, np.int64)
    earlier[order] = order[run_first]
    first = _first_per_record(row, same, n)
    flagged = first >= 0
    value = np.zeros(n, np.float64)
    where = np.full(n, None, dtype=object)
    detail = np.full(n, None, dtype=object)
    for i in np.flatnonzero(flagged).tolist():
        j = first[i]
        value[i] = pos[earlier[j]]
        where[i] = ranked.path[keep[j]]
        detail[i] = f"response {pos[j]} equals response {pos[earlier[j]]} (after whitespace and case normalization)"
    return CheckOutput(flagged=flagged, value=value, detail=detail, where=where)


@register("ranked_scores", target="ranked", severity="error",
          detail="the scores do not rank the responses",
          description="Ranked reward data: a record whose scores or ranks are missing, not numbers, NaN, or not one "
                      "per response. value = number of scores.")
def ranked_scores(ranked: RankBatch, **params) -> CheckOutput:
    n = ranked.records
    count = ranked.score_count
    detail = np.full(n, None, dtype=object)
    what = "ranks" if ranked.ranks else "scores"
    if ranked.numeric:
        values = pc.cast(ranked.scores, pa.float64()) if len(ranked.scores) else pa.array([], pa.float64())
        bad = ~_bool(pc.is_valid(values)) | np.isnan(np.asarray(pc.fill_null(values, 0.0).to_numpy(
            zero_copy_only=False), dtype=np.float64))
    else:
        bad = np.ones(len(ranked.scores), bool)
    first_bad = _first_per_record(ranked.score_row, bad, n)
    missing = count < 0
    mismatch = ~missing & (count != np.maximum(ranked.count, 0)) & (ranked.count >= 0)
    flagged = missing | mismatch | (first_bad >= 0)
    for i in np.flatnonzero(flagged).tolist():
        if missing[i]:
            detail[i] = f"no {what}"
        elif mismatch[i]:
            detail[i] = f"{count[i]} {what} for {max(ranked.count[i], 0)} responses"
        elif not ranked.numeric:
            detail[i] = f"the {what} are {ranked.scores.type}, not numbers"
        else:
            v = ranked.scores[int(first_bad[i])].as_py()
            detail[i] = f"{what[:-1]} {ranked.score_pos[first_bad[i]]} is {'missing' if v is None else v}"
    lay = ranked.layout
    where = np.full(n, lay.scores or lay.responses.name, dtype=object)
    for i in np.flatnonzero(flagged & (first_bad >= 0) & ~missing & ~mismatch & ranked.numeric).tolist():
        k = ranked.score_pos[first_bad[i]]
        where[i] = f"{lay.scores}[{k}]" if lay.scores else f"{lay.responses.name}[{k}].{lay.score_key}"
    return CheckOutput(flagged=flagged, value=np.maximum(count, 0).astype(np.float64), detail=detail, where=where)


@register("ranked_tie", target="ranked", severity="warning",
          detail="two responses share a score",
          description="Ranked reward data: two responses of one record with the same rank or score, so their order "
                      "is undecided (a pair built from them has no preference). Records whose scores ranked_scores "
                      "flags are left out. The flag names the later tied response. value = the shared number.")
def ranked_tie(ranked: RankBatch, **params) -> CheckOutput:
    n = ranked.records
    flagged = np.zeros(n, bool)
    value = np.zeros(n, np.float64)
    where = np.full(n, None, dtype=object)
    detail = np.full(n, None, dtype=object)
    if not ranked.numeric or not len(ranked.scores):
        return CheckOutput(flagged=flagged, value=value)
    scores = np.asarray(pc.fill_null(pc.cast(ranked.scores, pa.float64()), np.nan).to_numpy(zero_copy_only=False),
                        dtype=np.float64)
    row, pos = ranked.score_row, ranked.score_pos
    ok = (ranked.score_count == ranked.count) & (ranked.count >= 2)
    bad_row = np.zeros(n, bool)
    bad_row[row[np.isnan(scores)]] = True
    use = np.flatnonzero(ok[row] & ~bad_row[row])
    order = use[np.lexsort((pos[use], scores[use], row[use]))]
    tie = np.zeros(scores.size, bool)
    earlier = np.full(scores.size, -1, np.int64)
    if order.size > 1:
        same = (row[order[1:]] == row[order[:-1]]) & (scores[order[1:]] == scores[order[:-1]])
        tie[order[1:]] = same
        earlier[order[1:][same]] = order[:-1][same]
    first = _first_per_record(row, tie, n)
    kind = "rank" if ranked.ranks else "score"
    responses = _first_per_record(ranked.row, np.ones(ranked.row.size, bool), n)   # a record's first response
    for i in np.flatnonzero(first >= 0).tolist():
        j = first[i]
        k = earlier[j]
        while k >= 0 and earlier[k] >= 0:        # the first response of the tied run
            k = earlier[k]
        flagged[i] = True
        value[i] = scores[j]
        where[i] = ranked.path[responses[i] + pos[j]]
        detail[i] = f"responses {pos[k]} and {pos[j]} share the {kind} {scores[j]:g}"
    return CheckOutput(flagged=flagged, value=value, detail=detail, where=where)
