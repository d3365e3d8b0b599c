"""The training side: one batch of training text against the broadcast benchmark index (`shard` streams a
whole shard through it).

Per batch: normalize, split into words, hash (textops), then for every gram length the index holds, look the
batch's k-grams up in that table (a bitmap gather plus a binary search of the few that pass: no Python set, no
per-document loop). What comes out is small: which benchmark grams occur in the batch, and one row per
(training record, benchmark item) that share a gram, are an exact occurrence, or are MinHash-similar.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from dataaudit.textops import Tokens, word_tokens

from .config import ContaminationConfig
from .grams import kgram_hits, normalize_for_contamination
from .index import ContaminationIndex
from .sentences import whole_sentence_hits
from .snippet import make_snippet, word_spans

MATCH_SCHEMA = pa.schema([
    ("item", pa.int64()),          # benchmark item gid
    ("row", pa.int64()),           # training record: row in its shard
    ("key", pa.string()),          # training record: key in its shard
    ("line", pa.int64()),          # training record: 1-based line where it starts (JSONL, JSON; else null)
    ("shared", pa.int32()),        # distinct item grams the record holds
    ("exact", pa.bool_()),         # the whole normalized item occurs in the record
    ("minhash", pa.float32()),     # estimated Jaccard (null: not a MinHash match)
    ("snippet", pa.string()),      # original training text around the match (only for the best few per item)
    ("match_start", pa.int32()),   # the match inside the snippet
    ("match_end", pa.int32()),
    ("longest", pa.int32()),       # words of the longest contiguous run of item n-grams in the record (0: MinHash only)
    ("answer", pa.bool_()),        # the item's answer follows the match (null: not checked)
    ("choices", pa.bool_()),       # every choice of the item follows the match (null: not checked)
])

ANSWER_WINDOW = 100      # words after the match searched for the answer's start (Answer: ..., a worked solution)
CHOICES_WINDOW = 200     # words after the match that must hold every choice


@dataclass
class BatchMatches:
    """(record, item) pairs of one batch; doc is the row index within the batch. lo/hi: normalized word span
    of the match in the record (exact occurrence, else first to last shared gram)."""
    doc: np.ndarray
    item: np.ndarray
    shared: np.ndarray
    exact: np.ndarray
    minhash: np.ndarray     # float32, NaN where not a MinHash match
    lo: np.ndarray
    hi: np.ndarray
    longest: np.ndarray
    found: dict[int, np.ndarray]   # k -> indices of the k table's keys that occur in the batch
    words: int = 0

    def __len__(self) -> int:
        return len(self.doc)


def _empty_pairs() -> dict[str, np.ndarray]:
    z = np.zeros(0, np.int64)
    return {"doc": z, "item": z.copy(), "shared": z.copy(), "exact": np.zeros(0, bool), "lo": z.copy(),
            "hi": z.copy(), "longest": z.copy()}


def _ranges(starts: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(owner, flat index) for concatenated ranges [starts[i], starts[i] + counts[i])."""
    owner = np.repeat(np.arange(len(counts), dtype=np.int64), counts)
    first = np.cumsum(counts) - counts
    return owner, starts[owner] + (np.arange(int(counts.sum()), dtype=np.int64) - first[owner])


def _gram_pairs(index: ContaminationIndex, tokens: Tokens, k: int, p: np.ndarray, u: np.ndarray,
                num_items: int, want_exact: bool) -> dict[str, np.ndarray]:
    """(record, item) pairs from the batch's hits (flat word position p, key u) in the k table."""
    t = index.tables[k]
    d = tokens.doc[p]
    # distinct (record, gram), at its first position in the record
    du = (d.astype(np.uint64) << np.uint64(32)) | u.astype(np.uint64)
    _, first = np.unique(du, return_index=True)
    d1, u1, p1 = d[first], u[first], p[first]
    owner, flat = _ranges(t.ptr[u1], t.ptr[u1 + 1] - t.ptr[u1])
    items = t.items[flat]
    dd, pp = d1[owner], p1[owner]
    pk = dd * num_items + items
    upk, inv, shared = np.unique(pk, return_inverse=True, return_counts=True)
    lo = np.full(len(upk), np.iinfo(np.int64).max, np.int64)
    hi = np.zeros(len(upk), np.int64)
    np.minimum.at(lo, inv, pp)
    np.maximum.at(hi, inv, pp)
    hi += k
    # longest run of item grams at consecutive positions of the record: a contiguous copy of run + k - 1 words
    o = np.lexsort((pp, inv))
    pi, ii = pp[o], inv[o]
    cont = np.zeros(len(o), bool)
    cont[1:] = (ii[1:] == ii[:-1]) & (pi[1:] == pi[:-1] + 1)
    run_start = np.maximum.accumulate(np.where(cont, 0, np.arange(len(o))))
    run = np.arange(len(o)) - run_start + 1
    longest = np.zeros(len(upk), np.int64)
    np.maximum.at(longest, ii, run)
    longest += k - 1
    pdoc = upk // num_items
    pitem = upk % num_items
    if k != index.n:                     # short items have one gram: their whole text, so a hit is exact
        exact = np.ones(len(upk), bool)
    else:
        exact = np.zeros(len(upk), bool)
        if want_exact and t.first_ptr is not None:
            # positions whose n-gram starts some item: compare the item word by word from there
            fc = t.first_ptr[u + 1] - t.first_ptr[u]
            has = fc > 0
            if has.any():
                own, flat = _ranges(t.first_ptr[u[has]], fc[has])
                pc_ = p[has][own]
                it = t.first_items[flat]
                length = index.words[it]
                dc = tokens.doc[pc_]
                left = tokens.count[dc] - (pc_ - tokens.first[dc])
                fits = left >= length
                pc_, it, length, dc = pc_[fits], it[fits], length[fits], dc[fits]
                if len(pc_):
                    own2, wpos = _ranges(index.item_tok_start[it], length)
                    off = wpos - index.item_tok_start[it][own2]
                    eq = tokens.hash[pc_[own2] + off] == index.item_tok[wpos]
                    ok = np.logical_and.reduceat(eq, np.cumsum(length) - length)
                    ek = dc[ok] * num_items + it[ok]
                    epos = pc_[ok]
                    ek_u, ek_first = np.unique(ek, return_index=True)   # first occurrence of each pair
                    where = np.searchsorted(upk, ek_u)
                    exact[where] = True
                    longest[where] = index.words[pitem[where]]
                    lo[where] = epos[ek_first]
                    hi[where] = epos[ek_first] + index.words[it[ok][ek_first]]
    first_word = tokens.first[pdoc]
    return {"doc": pdoc, "item": pitem, "shared": shared.astype(np.int64), "exact": exact,
            "lo": lo - first_word, "hi": hi - first_word, "longest": longest}


def match_texts(texts: pa.Array, index: ContaminationIndex, config: ContaminationConfig) -> BatchMatches:
    """All (record, item) matches of a batch of training texts (a string array; nulls match nothing)."""
    norm = normalize_for_contamination(texts)
    tokens = word_tokens(norm)
    num_items = max(index.num_items, 1)
    found: dict[int, np.ndarray] = {}
    parts = []
    if config.ngram.enabled or config.exact.enabled:
        hits = kgram_hits(tokens, index.lookup)
        short = {k: t.closed for k, t in index.tables.items() if k != index.n}
        strict = {k: t.strict for k, t in index.tables.items() if t.strict is not None}
        hits = whole_sentence_hits(texts, tokens, hits, short, strict)    # short items: whole sentences only
        for k, (p, u) in sorted(hits.items()):
            if config.ngram.enabled:
                found[k] = np.unique(u)
            parts.append(_gram_pairs(index, tokens, k, p, u, num_items, config.exact.enabled))
    cols = {c: np.concatenate([p[c] for p in parts]) if parts else v for c, v in _empty_pairs().items()}
    mh = np.full(len(cols["doc"]), np.nan, np.float32)
    if not config.ngram.enabled:         # exact only: keep just the exact occurrences
        keep = cols["exact"]
        cols = {c: v[keep] for c, v in cols.items()}
        mh = mh[keep]
    if not config.exact.enabled:
        cols["exact"] = np.zeros(len(cols["doc"]), bool)
    if index.minhash is not None and config.minhash.enabled:
        from .minhash import minhash_pairs
        md, mi, mj = minhash_pairs(tokens, index.minhash, config.minhash)
        if len(md):
            pk = cols["doc"] * num_items + cols["item"]
            mk = md * num_items + mi
            allk, inv = np.unique(np.concatenate([pk, mk]), return_inverse=True)
            n = len(allk)
            merged = {"doc": allk // num_items, "item": allk % num_items}
            for c, fill in (("shared", 0), ("exact", False), ("lo", 0), ("hi", 0), ("longest", 0)):
                arr = np.full(n, fill, dtype=cols[c].dtype)
                arr[inv[:len(pk)]] = cols[c]
                merged[c] = arr
            mh2 = np.full(n, np.nan, np.float32)
            mh2[inv[len(pk):]] = mj
            only_mh = np.ones(n, bool)
            only_mh[inv[:len(pk)]] = False
            merged["lo"][only_mh] = 0
            merged["hi"][only_mh] = 0
            cols, mh = merged, mh2
    return BatchMatches(cols["doc"], cols["item"], cols["shared"], cols["exact"], mh, cols["lo"], cols["hi"],
                        cols["longest"], found, int(len(tokens.hash)))


def rank_order(item: np.ndarray, exact: np.ndarray, shared: np.ndarray, minhash: np.ndarray,
               tiebreak: list[np.ndarray]) -> np.ndarray:
    """Order of match rows: by item, then best first (exact, most shared grams, highest MinHash), then
    tiebreak arrays ascending (shard index, row)."""
    mh = np.nan_to_num(np.asarray(minhash, np.float64), nan=-1.0)
    keys = [*reversed(tiebreak), -mh, -np.asarray(shared, np.int64), ~np.asarray(exact, bool), item]
    return np.lexsort(keys)


def top_mask(item: np.ndarray, order: np.ndarray, k: int) -> np.ndarray:
    """Rows among the first k of their item in `order`."""
    ranked = item[order]
    starts = np.ones(len(ranked), bool)
    starts[1:] = ranked[1:] != ranked[:-1]
    group_start = np.maximum.accumulate(np.where(starts, np.arange(len(ranked)), 0))
    rank = np.arange(len(ranked)) - group_start
    mask = np.zeros(len(item), bool)
    mask[order[rank < k]] = True
    return mask


def leak_flags(norm_words: list[str], hi: int, item: int, index: ContaminationIndex) -> tuple[bool | None,
                                                                                             bool | None]:
    """(the answer follows, every choice follows) the match ending at normalized word `hi` of a record whose
    normalized words are `norm_words`, looked for in a bounded window after the match in the same record; None:
    the item has none to look for. The choices are looked for first, and the answer after the last of them when
    all are there: a correct choice merely listed among the options is no answer leak."""
    answers = index.answers[item] if item < len(index.answers) else None
    choices = index.choices[item] if item < len(index.choices) else None
    if not answers and not choices:
        return None, None
    longest_answer = max((w.count(" ") - 1 for w in answers or []), default=0)
    after = " " + " ".join(norm_words[hi:hi + CHOICES_WINDOW + ANSWER_WINDOW + longest_answer]) + " "
    start = 0
    choices_found = None
    if choices:
        ends = [after.find(c) for c in choices]
        choices_found = all(0 <= e and after.count(" ", 0, e) < CHOICES_WINDOW for e in ends)
        if choices_found:
            start = max(e + len(c) - 1 for e, c in zip(ends, choices))
    answer_found = None
    if answers:
        answer_found = False
        for w in answers:
            at = after.find(w, start)
            if at >= 0 and after.count(" ", start, at) < ANSWER_WINDOW:
                answer_found = True
                break
    return answer_found, choices_found


def matches_table(m: BatchMatches, texts: pa.Array, rows: np.ndarray, keys: pa.Array,
                  max_matches: int, lines: pa.Array | None = None,
                  index: ContaminationIndex | None = None) -> pa.Table:
    """The batch's match rows, with a snippet, and whether the answer and the choices follow the match, for the
    best `max_matches` of each item."""
    n = len(m)
    if n == 0:
        return MATCH_SCHEMA.empty_table()
    order = rank_order(m.item, m.exact, m.shared, m.minhash, [m.doc])
    top = top_mask(m.item, order, max_matches)
    snippets: list[str | None] = [None] * n
    starts = np.zeros(n, np.int32)
    ends = np.zeros(n, np.int32)
    answer: list[bool | None] = [None] * n
    choices: list[bool | None] = [None] * n
    spans_cache: dict[int, tuple[str, list, list[str] | None]] = {}
    for i in np.flatnonzero(top):          # bounded: items x max_matches per batch
        d = int(m.doc[i])
        if d not in spans_cache:
            text = texts[d].as_py() or ""
            spans_cache[d] = (text, word_spans(text), None)
        text, spans, norm = spans_cache[d]
        s, a, b = make_snippet(text, int(m.lo[i]), int(m.hi[i]), spans)
        snippets[i], starts[i], ends[i] = s, a, b
        if index is not None and index.answers:
            if norm is None:
                norm = (normalize_for_contamination(pa.array([text])).to_pylist()[0] or "").split()
                spans_cache[d] = (text, spans, norm)
            answer[i], choices[i] = leak_flags(norm, int(m.hi[i]), int(m.item[i]), index)
    mh = pa.array(m.minhash, pa.float32(), mask=np.isnan(m.minhash))
    return pa.table({
        "item": pa.array(m.item, pa.int64()), "row": pa.array(rows[m.doc], pa.int64()),
        "key": keys.take(pa.array(m.doc)),
        "line": pa.nulls(n, pa.int64()) if lines is None else lines.take(pa.array(m.doc)),
        "shared": pa.array(m.shared.astype(np.int32)),
        "exact": pa.array(m.exact), "minhash": mh, "snippet": pa.array(snippets, pa.string()),
        "match_start": pa.array(starts), "match_end": pa.array(ends),
        "longest": pa.array(m.longest.astype(np.int32)), "answer": pa.array(answer, pa.bool_()),
        "choices": pa.array(choices, pa.bool_())}, schema=MATCH_SCHEMA)
