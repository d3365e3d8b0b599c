"""The benchmark side of a contamination scan: every item's n-gram hashes in lookup tables.

The index is small (a few hashes per benchmark word) and is built once, then broadcast to every shard task.
Items are numbered globally ("gid") across benchmarks in the order given.

- An item of L >= n words contributes its distinct word n-grams to the n table.
- An item of 1 <= L < n words is matched on its whole normalized text: one L-gram in the L table, found only as
  whole sentences of a training record (`sentences`); `closed` says per key whether its items end a sentence.
- An empty item (nothing left after normalization) is in no table: it is reported, never matched.

For the `exact` method the word hashes of every item are kept in order, with a table from each long item's first
n-gram to the items starting with it: a training position whose n-gram is some item's first one is checked
word by word against the item.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from dataaudit.textops import word_tokens

from .config import ContaminationConfig
from .grams import HashSet, KgramLookup, build_lookup, normalize_for_contamination
from .load import Benchmark
from .sentences import ANY_END, end_class, ends_a_sentence


@dataclass
class GramTable:
    """Distinct k-gram hashes of the items matched with k-grams, and which items hold each one."""
    k: int
    set: HashSet
    ptr: np.ndarray        # int64, len(keys) + 1: items holding key u are items[ptr[u]:ptr[u + 1]]
    items: np.ndarray      # int64 item gids
    # n table only (exact method): items whose first n-gram is key u: first_items[first_ptr[u]:first_ptr[u + 1]]
    first_ptr: np.ndarray | None = None
    first_items: np.ndarray | None = None
    # short-item tables only: per key, whether every item holding it ends a sentence (then so must its match; a
    # key shared with an item that stops mid-sentence takes that item's looser rule)
    closed: np.ndarray | None = None
    # tables of items under min_item_words: per key, the final mark class the match must end with (sentences)
    strict: np.ndarray | None = None

    @property
    def entry_key(self) -> np.ndarray:
        return np.repeat(np.arange(len(self.set), dtype=np.int64), np.diff(self.ptr))


@dataclass
class ContaminationIndex:
    n: int
    min_item_words: int
    names: list[str]                   # benchmark names, in order
    offsets: np.ndarray                # int64, len(names) + 1: gids of benchmark b are offsets[b]:offsets[b + 1]
    words: np.ndarray                  # int64 per item: normalized word count
    total: np.ndarray                  # int64 per item: distinct grams it is matched on (0 = empty)
    tables: dict[int, GramTable]
    lookup: KgramLookup                # every table's keys, for the batch lookup
    item_tok: np.ndarray               # uint64: word hashes of the items, in order, item after item
    item_tok_start: np.ndarray         # int64 per item: its first word in item_tok
    # per item, normalized and space-padded (" w1 w2 "): reference answers, choices (None: not checked)
    answers: list[list[str] | None] = field(default_factory=list)
    choices: list[list[str] | None] = field(default_factory=list)
    minhash: object | None = None      # MinhashIndex when the minhash method runs
    digest: str = ""
    meta: dict = field(default_factory=dict)

    @property
    def num_items(self) -> int:
        return len(self.words)

    @property
    def ks(self) -> list[int]:
        return sorted(self.tables)

    @property
    def short(self) -> np.ndarray:
        """Per item: under min_item_words (and not empty): the short-items table's, not counted by default."""
        return (self.words > 0) & (self.words < self.min_item_words)

    def benchmark_of(self, gid: np.ndarray) -> np.ndarray:
        return np.searchsorted(self.offsets, gid, side="right") - 1


def _csr(key_idx: np.ndarray, items: np.ndarray, num_keys: int) -> tuple[np.ndarray, np.ndarray]:
    order = np.lexsort((items, key_idx))
    ptr = np.zeros(num_keys + 1, np.int64)
    np.cumsum(np.bincount(key_idx, minlength=num_keys), out=ptr[1:])
    return ptr, items[order].astype(np.int64)


def _table(k: int, hashes: np.ndarray, items: np.ndarray) -> GramTable:
    """Table of distinct (item, hash) entries."""
    if len(hashes):
        pair = np.lexsort((items, hashes))
        hashes, items = hashes[pair], items[pair]
        keep = np.ones(len(hashes), bool)
        keep[1:] = (hashes[1:] != hashes[:-1]) | (items[1:] != items[:-1])
        hashes, items = hashes[keep], items[keep]
    hs = HashSet(hashes)
    key_idx = np.searchsorted(hs.keys, hashes).astype(np.int64)
    ptr, its = _csr(key_idx, items.astype(np.int64), len(hs))
    return GramTable(k, hs, ptr, its)


def _padded(per_bench: list, benchmarks: list[Benchmark]) -> list[list[str] | None]:
    """Per item: its texts normalized as the training text is, as " w1 w2 " (whole-word search); None where
    the benchmark or the item has none."""
    flat: list[list[str] | None] = []
    for values, b in zip(per_bench, benchmarks):
        flat += values if values is not None else [None] * len(b)
    strings = [t for v in flat if v for t in v]
    norm = iter(normalize_for_contamination(pa.array(strings, pa.string())).to_pylist()) if strings else iter(())
    out = []
    for v in flat:
        if v is None:
            out.append(None)
            continue
        words = [" ".join((next(norm) or "").split()) for _ in v]
        out.append([f" {w} " for w in words if w])
    return out


def build_index(benchmarks: list[Benchmark], config: ContaminationConfig) -> ContaminationIndex:
    n = config.ngram.n
    texts = [t for b in benchmarks for t in b.texts]
    offsets = np.zeros(len(benchmarks) + 1, np.int64)
    np.cumsum([len(b) for b in benchmarks], out=offsets[1:])
    norm = normalize_for_contamination(pa.array(texts, pa.string()))
    tokens = word_tokens(norm)
    words = tokens.count
    grams = tokens.ngrams(n)      # long items: every n-gram in order; short items: one gram of all their words
    num = len(texts)
    is_long = words >= n
    tables: dict[int, GramTable] = {}

    sel = is_long[grams.doc]
    long_doc, long_hash, long_start = grams.doc[sel], grams.hash[sel], grams.start[sel]
    if len(long_doc):
        t = _table(n, long_hash, long_doc)
        firsts = long_start == 0
        fk = np.searchsorted(t.set.keys, long_hash[firsts]).astype(np.int64)
        t.first_ptr, t.first_items = _csr(fk, long_doc[firsts].astype(np.int64), len(t.set))
        tables[n] = t
    short = (words > 0) & (words < n)
    sd = grams.doc[short[grams.doc]]
    sh = grams.hash[short[grams.doc]]
    item_closed = ends_a_sentence(pa.array(texts, pa.string()))
    item_class = end_class(pa.array(texts, pa.string())).astype(np.int64)
    for k in np.unique(words[short]):
        m = words[sd] == k
        t = _table(int(k), sh[m], sd[m])
        t.closed = np.bincount(t.entry_key, weights=~item_closed[t.items], minlength=len(t.set)) == 0
        if k < config.min_item_words:
            # one class per key; items of one text with different final marks (or none) take any end
            lo = np.full(len(t.set), 9, np.int64)
            hi = np.zeros(len(t.set), np.int64)
            np.minimum.at(lo, t.entry_key, item_class[t.items])
            np.maximum.at(hi, t.entry_key, item_class[t.items])
            t.strict = np.where((lo == hi) & (lo > 0), lo, ANY_END).astype(np.int8)
        tables[int(k)] = t

    total = np.zeros(num, np.int64)
    for t in tables.values():
        total += np.bincount(t.items, minlength=num)
    h = hashlib.sha256()
    h.update(repr((n, config.min_item_words, [b.name for b in benchmarks], offsets.tolist())).encode())
    for b in benchmarks:
        for i, t in zip(b.ids, b.texts):
            h.update(i.encode("utf-8", "backslashreplace") + b"\x00" + t.encode("utf-8", "backslashreplace") + b"\x01")
    index = ContaminationIndex(n=n, min_item_words=config.min_item_words, names=[b.name for b in benchmarks], offsets=offsets, words=words.astype(np.int64),
                               total=total, tables=tables,
                               lookup=build_lookup({k: t.set for k, t in tables.items()}),
                               item_tok=tokens.hash, item_tok_start=tokens.first, digest=h.hexdigest()[:16])
    index.answers, index.choices = _padded([b.answers for b in benchmarks], benchmarks), \
        _padded([b.choices for b in benchmarks], benchmarks)
    h.update(repr((index.answers, index.choices)).encode("utf-8", "backslashreplace"))   # the shards use them
    index.digest = h.hexdigest()[:16]
    if config.minhash.enabled:
        from .minhash import build_minhash_index
        index.minhash = build_minhash_index(tokens, config.minhash)
    return index
