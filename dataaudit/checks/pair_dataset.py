"""Dataset-level preference checks (issue 30): what no single pair shows.

pair_stats: per shard and in total (report.json's `pair_stats` section), how many pairs there are, the share
whose chosen reply is longer than the rejected one, and the chosen/rejected length ratio: the ratio of total
characters (sum of chosen / sum of rejected) and the geometric mean of the per-pair ratios (2 ** mean log2; a
mean that one 1-character reply cannot dominate, and mergeable over shards, unlike a median). Lengths are the
replies' characters as stored (each side's last turn, or its string); a pair with a missing or blank side is not
measured (counted as `unmeasured`; pair_empty_side flags it). A share above `high` (0.9) or below `low` (0.1)
over at least `min_pairs` pairs is a note: a reward model trained on it can learn "the longer reply wins" (a known
length bias). It is information: it never flags a record.

contradictory_preference: the same prompt with reply A preferred over B in one record and B over A in another
(prompts and replies compared after the pair checks' whitespace and case normalization); for KTO, the same prompt
and reply labelled true in one record and false in another. Flags are made per batch, so the check flags the
LATER record of a contradiction within a shard (value = the shard row of the earlier, opposite record); the
earlier record is not flagged. Contradictions between shards cannot be flagged (the records are in another
shard's flags): they are counted in report.json's `contradictory_preference` section with the shard and row of
both records, once per distinct preference of the later shard (its repeated records count once: a shard keeps
each key with its first row). Pairs with an empty side or two equal replies are no preference and are left out.

Each record is one 64-bit key: XXH3 (the dedup's exact-duplicate hash, dataaudit.dedup.exact) of the normalized
prompt and the two replies in a canonical order (the lower string first), its last bit replaced by the direction
(whether chosen is the lower string; KTO: the label). The opposite preference is the key with its last bit
flipped. The state keeps the distinct keys of the shard with each one's first row, in the sorted chunks of
duplicate_id (dataaudit.checks.record_ids).
"""
from __future__ import annotations

from typing import Any, Mapping

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dataaudit.pairs import KtoBatch, PairBatch

from .base import CheckOutput, ShardState, register
from .pairs import _blank, _bool, _norm, _normalized
from .record_ids import _arrays, _chunk, _compact, _lookup

EXAMPLES = 20        # contradictions shown in the section (within shards, across shards)
ROUND = 4            # decimals of the shares and ratios in report.json


# ---------------------------------------------------------------------------------------------- pair_stats

def stats_state() -> dict:
    return {"pairs": 0, "unmeasured": 0, "chosen_longer": 0, "rejected_longer": 0, "same_length": 0,
            "chosen_chars": 0, "rejected_chars": 0, "log2_ratio_sum": 0.0}


def merge_stats(into: dict, part: dict) -> dict:
    for key in into:
        into[key] += part[key]
    return into


def _measures(state: dict) -> dict:
    pairs = state["pairs"]
    if not pairs:
        return {"pairs": 0, "unmeasured": state["unmeasured"], "share_chosen_longer": None,
                "share_rejected_longer": None, "chars_ratio": None, "geometric_mean_ratio": None}
    return {"pairs": pairs, "unmeasured": state["unmeasured"],
            "share_chosen_longer": round(state["chosen_longer"] / pairs, ROUND),
            "share_rejected_longer": round(state["rejected_longer"] / pairs, ROUND),
            "chars_ratio": round(state["chosen_chars"] / max(state["rejected_chars"], 1), ROUND),
            "geometric_mean_ratio": round(2.0 ** (state["log2_ratio_sum"] / pairs), ROUND)}


def stats_section(total: dict, shards: list[tuple[str, dict | None]], settings, data: Mapping[str, Any]) -> dict | None:
    """report.json's `pair_stats`: the totals, then each shard with pairs (None when no shard has pairs)."""
    checked = [(p, st) for p, st in shards if st is not None and (st["pairs"] or st["unmeasured"])]
    if not settings.enabled or not checked:
        return None
    params = settings.params
    high, low, least = params.get("high", 0.9), params.get("low", 0.1), params.get("min_pairs", 10)
    out = _measures(total)
    share = out["share_chosen_longer"]
    out["length_bias"] = share is not None and total["pairs"] >= least and (share > high or share < low)
    out["thresholds"] = {"high": high, "low": low, "min_pairs": least}
    out["shards"] = [{"path": p, **_measures(st)} for p, st in checked]
    return out


def stats_notes(section: dict) -> list[str]:
    if not section["length_bias"]:
        return []
    longer = section["share_chosen_longer"] > section["thresholds"]["high"]
    side, share = ("longer", section["share_chosen_longer"]) if longer else \
        ("shorter", section["share_rejected_longer"])
    return [f"pair_stats: the chosen reply is {side} than the rejected one in {share:.1%} of {section['pairs']} "
            f"pairs (chosen/rejected characters {section['chars_ratio']:.2f}, geometric mean of the per-pair ratios "
            f"{section['geometric_mean_ratio']:.2f}): a reward model can learn \"the {side} reply wins\" (length "
            "bias), not quality"]


def _chars(arr: pa.Array) -> np.ndarray:
    return np.asarray(pc.fill_null(pc.utf8_length(arr), 0).to_numpy(zero_copy_only=False), dtype=np.int64)


@register("pair_stats", target="pair", severity="info", params={"high": 0.9, "low": 0.1, "min_pairs": 10},
          state=ShardState(start=stats_state, merge=merge_stats, section=stats_section, notes=stats_notes),
          detail="",
          description="Dataset statistics of preference pairs, never a flag: per shard and in total (report.json's "
                      "`pair_stats`), the pairs, the share whose chosen reply is longer than the rejected one "
                      "(characters), the chosen/rejected ratio of total characters and the geometric mean of the "
                      "per-pair ratios. A share above `high` or below `low` (over at least `min_pairs` pairs) is a "
                      "note: a reward model can learn \"longer wins\" (length bias).")
def pair_stats(pairs: PairBatch, state: dict, **params) -> CheckOutput:
    n = pairs.records
    empty = _blank(pairs.chosen.reply) | _blank(pairs.rejected.reply)
    c, r = _chars(pairs.chosen.reply)[~empty], _chars(pairs.rejected.reply)[~empty]
    part = {"pairs": int(c.size), "unmeasured": int(empty.sum()), "chosen_longer": int((c > r).sum()),
            "rejected_longer": int((c < r).sum()), "same_length": int((c == r).sum()),
            "chosen_chars": int(c.sum()), "rejected_chars": int(r.sum()),
            "log2_ratio_sum": float(np.log2(c / r).sum()) if c.size else 0.0}
    return CheckOutput(flagged=np.zeros(n, bool), value=np.zeros(n), state=part)


# ---------------------------------------------------------------------------------------------- contradictory_preference

def _hash64(texts: pa.Array) -> np.ndarray:
    from dataaudit.dedup.exact import exact_hashes   # the dedup's document hash (loaded where pairs are checked)

    return exact_hashes(texts)[1]


def _keyed(text: pa.Array, direction: np.ndarray) -> np.ndarray:
    return (_hash64(text) & ~np.uint64(1)) | direction.astype(np.uint64)


def preference_keys(arg: PairBatch | KtoBatch) -> tuple[np.ndarray, np.ndarray]:
    """(the 64-bit key of every record, whether it has one): see the module's docstring."""
    if isinstance(arg, KtoBatch):
        values = arg.values
        if not pa.types.is_boolean(values.type) or arg.text is None:
            return np.zeros(len(values), np.uint64), np.zeros(len(values), bool)
        text = pc.fill_null(_norm(arg.text), "")
        valid = _bool(pc.is_valid(values)) & ~_blank(text)
        return _keyed(text, _bool(pc.fill_null(values, False))), valid
    c, r, both = _normalized(arg)
    valid = both & ~_bool(pc.equal(c, r))
    prompt = pc.fill_null(_norm(arg.prompt), "") if arg.prompt is not None else pa.array([""] * len(c), pa.string())
    lower = _bool(pc.less(c, r))       # chosen is the lower string
    first, second = pc.if_else(pa.array(lower), c, r), pc.if_else(pa.array(lower), r, c)
    # normalized texts hold no newline: "\n" separates the three unambiguously
    text = pc.binary_join_element_wise(prompt, first, second, "\n")
    return _keyed(text, lower), valid


def contra_state() -> dict:
    return {"records": 0, "keyed": 0, "within": 0, "chunks": [], "examples": []}


def merge_contra(into: dict, part: dict) -> dict:
    """Fold a batch's part into its shard's state (its chunks hold only keys the shard had not seen), or a shard's
    state into the total (keys are kept once; contradictions across shards are counted by the section)."""
    for key in ("records", "keyed", "within"):
        into[key] += part[key]
    for chunk in part["chunks"]:
        hashes, rows = _arrays(chunk)
        seen, _ = _lookup(into["chunks"], hashes)
        if seen.any():
            chunk = _chunk(hashes[~seen], rows[~seen])
        if chunk["n"]:
            into["chunks"].append(chunk)
            into["chunks"] = _compact(into["chunks"])
    into["examples"] += part["examples"][: max(0, EXAMPLES - len(into["examples"]))]
    return into


def _across(shards: list[tuple[str, dict]]) -> tuple[int, list[dict]]:
    """Contradictions between shards: a key of a shard whose opposite key is in an earlier shard (shards in
    report order), with the shard and row of both (the opposite's first record in the earliest such shard)."""
    parts = [(i, *_arrays(c)) for i, (_, st) in enumerate(shards) for c in st["chunks"] if c["n"]]
    if not parts:
        return 0, []
    keys = np.concatenate([h for _, h, _ in parts])
    rows = np.concatenate([r.astype(np.int64) for _, _, r in parts])
    shard = np.concatenate([np.full(h.size, i, np.int64) for i, h, _ in parts])
    order = np.lexsort((rows, shard, keys))        # by key, then the earliest shard
    keys, rows, shard = keys[order], rows[order], shard[order]
    opp = keys ^ np.uint64(1)
    at = np.minimum(np.searchsorted(keys, opp), keys.size - 1)
    hit = (keys[at] == opp) & (shard[at] < shard)
    idx = np.flatnonzero(hit)
    idx = idx[np.lexsort((rows[idx], shard[idx]))]   # in report order of the later record
    examples = [{"first": {"shard": shards[int(shard[at[i]])][0], "row": int(rows[at[i]])},
                 "second": {"shard": shards[int(shard[i])][0], "row": int(rows[i])}} for i in idx[:EXAMPLES].tolist()]
    return int(idx.size), examples


def contra_section(total: dict, shards: list[tuple[str, dict | None]], settings,
                   data: Mapping[str, Any]) -> dict | None:
    """report.json's `contradictory_preference` (None when no shard has pairs or KTO records)."""
    checked = [(p, st) for p, st in shards if st is not None and st["records"]]
    if not settings.enabled or not checked:
        return None
    across, across_examples = _across(checked)
    within = [{"shard": p, **ex} for p, st in checked for ex in st["examples"]][:EXAMPLES]
    return {"severity": settings.severity, "shards": len(checked), "records": total["records"],
            "keyed": total["keyed"], "contradictions": total["within"] + across,
            "within_shards": total["within"], "across_shards": across,
            "examples_within_shards": within, "examples_across_shards": across_examples}


def contra_notes(section: dict) -> list[str]:
    if not section["contradictions"]:
        return []
    eg = [f"{e['shard']} row {e['row']} vs row {e['opposite_row']}" for e in section["examples_within_shards"][:2]]
    eg += [f"{e['second']['shard']} row {e['second']['row']} vs {e['first']['shard']} row {e['first']['row']}"
           for e in section["examples_across_shards"][:2]]
    return [f"contradictory_preference: {section['contradictions']} preferences reverse an earlier one (same "
            f"prompt, preference reversed; {section['within_shards']} records within a shard, "
            f"{section['across_shards']} distinct preferences across shards); e.g. {'; '.join(eg)}"]


@register("contradictory_preference", target=("pair", "kto"), severity="warning",
          state=ShardState(start=contra_state, merge=merge_contra, section=contra_section, notes=contra_notes,
                           examples=True),
          detail="the opposite preference is at row {value:.0f}",
          description="A record whose preference reverses an earlier one: the same prompt with the chosen and "
                      "rejected replies swapped, or (KTO) the same prompt and reply with the opposite label, after "
                      "whitespace and case normalization. The later record of the shard is flagged; "
                      "contradictions across shards are counted, with both records, in report.json's "
                      "`contradictory_preference` section. value = shard row of the earlier record.")
def contradictory_preference(arg: PairBatch | KtoBatch, state: dict, **params) -> CheckOutput:
    keys, valid = preference_keys(arg)
    n = keys.size
    rows = arg.rows if arg.rows is not None else np.arange(n, dtype=np.int64)
    idx = np.flatnonzero(valid)
    k = keys[idx]
    uniq, first = np.unique(k, return_index=True)
    opp = k ^ np.uint64(1)
    seen, seen_row = _lookup(state["chunks"], opp)
    # the opposite earlier in this batch: its first record comes before this one
    at = np.minimum(np.searchsorted(uniq, opp), max(uniq.size - 1, 0))
    in_batch = (uniq[at] == opp) & (first[at] < np.arange(idx.size)) if uniq.size else np.zeros(0, bool)
    other = np.where(seen, seen_row, rows[idx[first[at]]] if uniq.size else 0)
    hit = seen | in_batch
    flagged = np.zeros(n, bool)
    flagged[idx[hit]] = True
    value = np.zeros(n, np.float64)
    value[idx[hit]] = other[hit]
    detail = np.full(n, None, dtype=object)
    kto = isinstance(arg, KtoBatch)
    labels = _bool(pc.fill_null(arg.values, False)) if kto and pa.types.is_boolean(arg.values.type) else None
    for i, o in zip(idx[hit].tolist(), other[hit].tolist()):
        detail[i] = (f"the same prompt and reply is labelled {str(not labels[i]).lower()} at row {o}" if kto else
                     f"row {o} prefers the opposite: the same prompt with chosen and rejected swapped")
    known, _ = _lookup(state["chunks"], uniq)
    new = ~known
    part = {"records": n, "keyed": int(idx.size), "within": int(hit.sum()),
            "chunks": [_chunk(uniq[new], rows[idx[first[new]]])] if new.any() else [],
            "examples": [{"row": int(rows[i]), "opposite_row": int(value[i])} for i in idx[hit][:EXAMPLES].tolist()]}
    where = None if kto else arg.chosen.path
    return CheckOutput(flagged=flagged, value=value, detail=detail, state=part, where=where)
