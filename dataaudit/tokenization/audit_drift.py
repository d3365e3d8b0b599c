"""The kernel of the audit's tokenizer_drift check (dataaudit.checks.drift): re-encode the text of pre-tokenized
records with the inference tokenizer and compare with the stored token ids.

Per shard, the first `[data] drift_sample` records holding both a text and token ids are checked (0: all), so
the result depends only on the shard and the config (local and Ray runs agree). A record is
- `same`: the stored ids are what the inference tokenizer gives, special tokens included;
- `same_without_special_tokens`: they equal the text's own tokens, without the BOS/EOS the inference
  tokenizer's post-processor adds (data tokenized with add_special_tokens=False, or packed);
- `truncated`: they are a non-empty strict prefix of either (cut at the context length);
- `differs`: none of these: the ids came from another tokenizer or another text (the drift this finds).
Real tokens are those the attention mask marks; without a mask, trailing pad ids (`[data] pad_id`, else the
tokenizer's pad id) are also tried stripped.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dataaudit.provenance import ERROR, KEY, LINE, ROW
from dataaudit.tokenization.loading import TokenizerBundle, load_bundle
from dataaudit.tokenization.ragged import Ragged, compare

SNIPPET_CHARS = 300
IDS_WINDOW_BEFORE, IDS_WINDOW = 3, 12


@lru_cache(maxsize=4)
def cached_bundle(path: str) -> TokenizerBundle:
    return load_bundle(path)


def _flat_ids(column: pa.Array) -> Ragged:
    lengths = pc.fill_null(pc.list_value_length(column), 0).to_numpy(zero_copy_only=False).astype(np.int64)
    values = pc.fill_null(pc.list_flatten(column), -1).to_numpy(zero_copy_only=False)
    return Ragged(values.astype(np.int64, copy=False), lengths)


def _real_tokens(ids: Ragged, mask_col: pa.Array | None) -> Ragged:
    """Keep the positions the attention mask marks (a row whose mask is missing or of another length keeps all)."""
    if mask_col is None:
        return ids
    mask = _flat_ids(mask_col)
    usable = (mask.lengths == ids.lengths) & pc.is_valid(mask_col).to_numpy(zero_copy_only=False)
    within = np.arange(len(ids.flat)) - np.repeat(ids.starts, ids.lengths)
    sel = usable[ids.segment_ids()]
    keep = np.ones(len(ids.flat), dtype=bool)
    keep[sel] = mask.flat[np.repeat(mask.starts, ids.lengths)[sel] + within[sel]] != 0
    return ids.filter(keep)


def _strip_trailing(ids: Ragged, pad_id: int) -> Ragged:
    seg = ids.segment_ids()
    within = np.arange(len(ids.flat)) - np.repeat(ids.starts, ids.lengths)
    last = np.full(len(ids.lengths), -1, dtype=np.int64)
    real = ids.flat != pad_id
    np.maximum.at(last, seg[real], within[real])
    return ids.filter(within <= last[seg])


def _match(stored: Ragged, variants: list[Ragged]):
    """Per record: equal to some variant, strict non-empty prefix of some variant, best common-prefix length."""
    equal = np.zeros(len(stored.lengths), dtype=bool)
    prefix = np.zeros_like(equal)
    best = np.zeros(len(stored.lengths), dtype=np.int64)
    per_variant = []
    for v in variants:
        eq, first = compare(stored, v)
        common = np.where(eq, stored.lengths, first)
        per_variant.append(eq)
        equal |= eq
        prefix |= ~eq & (first == stored.lengths) & (stored.lengths > 0) & (stored.lengths < v.lengths)
        best = np.maximum(best, common)
    return equal, prefix, best, per_variant


def drift_batch(batch: pa.RecordBatch, text_col: str, ids_col: str, mask_col: str | None, bundle: TokenizerBundle,
                shard: str, limit: int | None, state: dict, pad_id: int | None = None, examples: int = 5
                ) -> tuple[dict, np.ndarray, np.ndarray]:
    """Check up to `limit` usable records of one batch (None: all), counting them into `state` (a fresh part of
    the check's state, dataaudit.checks.drift_summary; passed in so this kernel does not import the registry).

    Returns that state, the batch rows whose ids differ, and for each of them the first token position where
    stored and inference ids part."""
    none = np.zeros(0, dtype=np.int64)
    ok = pc.and_(pc.and_(pc.is_null(batch.column(ERROR)), pc.is_valid(batch.column(text_col))),
                 pc.is_valid(batch.column(ids_col)))
    idx = np.flatnonzero(ok.to_numpy(zero_copy_only=False))
    if limit is not None:
        idx = idx[:limit]
    if idx.size == 0:
        return state, none, none
    take = pa.array(idx)
    texts = batch.column(text_col).take(take)
    stored = _real_tokens(_flat_ids(batch.column(ids_col).take(take)),
                          batch.column(mask_col).take(take) if mask_col else None)
    encs = bundle.encoder.encode_batch_fast(texts.to_pylist(), add_special_tokens=True)
    full = Ragged.from_lists([e.ids for e in encs])
    added = Ragged.from_lists([e.special_tokens_mask for e in encs]).flat.astype(bool)
    own = full.filter(~added)
    equal, prefix, best, (eq_full, eq_own) = _match(stored, [full, own])
    if mask_col is None and pad_id is not None:
        trimmed = _strip_trailing(stored, pad_id)
        if not np.array_equal(trimmed.lengths, stored.lengths):
            t_equal, t_prefix, t_best, (t_full, t_own) = _match(trimmed, [full, own])
            eq_full, eq_own = eq_full | t_full, eq_own | t_own
            equal, prefix, best = equal | t_equal, prefix | t_prefix, np.maximum(best, t_best)
    same = eq_full
    same_own = eq_own & ~same
    truncated = prefix & ~equal
    differs = ~equal & ~prefix
    state.update(checked=int(idx.size), same=int(same.sum()), same_without_special_tokens=int(same_own.sum()),
                 truncated=int(truncated.sum()), differs=int(differs.sum()))
    bad = np.flatnonzero(differs)[:examples]
    if bad.size:
        keys, rows, lines = batch.column(KEY).take(take), batch.column(ROW).take(take), batch.column(LINE).take(take)
        stored_lists = stored.to_lists()
        full_lists = full.to_lists()
        for i in bad.tolist():
            fd = int(best[i])
            lo = max(0, fd - IDS_WINDOW_BEFORE)
            text = texts[i].as_py()
            state["examples"].append({
                "shard": shard, "key": keys[i].as_py(), "row": rows[i].as_py(), "line": lines[i].as_py(),
                "first_diff": fd,
                "stored_tokens": int(stored.lengths[i]), "inference_tokens": int(full.lengths[i]),
                "window_start": lo, "stored_ids": stored_lists[i][lo:lo + IDS_WINDOW],
                "inference_ids": full_lists[i][lo:lo + IDS_WINDOW], "snippet": text[:SNIPPET_CHARS]})
    return state, idx[differs], best[differs]
