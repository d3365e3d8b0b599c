"""datatrove's English word split, exactly: spaCy's English tokenizer (`spacy.blank("en")`), emulated without
spaCy, and the statistics of its words that datatrove's quality filters read.

datatrove splits English into words with spaCy (`SpaCyTokenizer.word_tokenize`: the tokens, stripped, whitespace
tokens dropped) and into sentences with spaCy's Sentencizer. spaCy's algorithm, followed step by step here with
its own tables and regexes (spacy_en.json, written by benchmarks/dump_spacy_en.py; spaCy is MIT-licensed):

1. the text is cut into chunks at whitespace (`str.isspace`); a whitespace run other than one " " between two
   chunks (or any at the start) is a whitespace token;
2. each chunk is split by `_split_affixes` (prefixes and suffixes peeled off one at a time, stopping at a special
   case) and `_attach_tokens` (the special case, a URL, or the middle split at its infixes);
3. the special cases that hold an affix are then matched over the chunk's tokens (spaCy's PhraseMatcher, longest
   first) and replace them. (A match across chunks spans a space: its text is no special case and spaCy leaves
   it as it is, so matching within each chunk gives the same tokens.)

A chunk's tokens depend on the chunk only, so the statistics are computed once per distinct chunk (the batch's
chunks are dictionary-encoded by Arrow) and summed per text with numpy. Chunks of ASCII letters that are no
special case are one token (no affix or infix rule matches a letter run): their statistics are vectorized; the
other distinct chunks go to the numba kernel `_spacy_kernels.chunk_rows` (the same algorithm over code points,
with the regexes' character classes as per-code-point bits), which hands back the few it cannot decide alone
(a possible special case or URL) to the emulation in Python here, remembered in a bounded memo (as spaCy caches
its chunks). Without numba the emulation tokenizes them all.
"""
from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .arrow import as_string_array, flatten_lists, string_buffers, to_bool, to_int64

DATA = Path(__file__).with_name("spacy_en.json")
# Affixes are stripped one at a time, each strip copying the rest (as spaCy does): quadratic in a chunk's length. A
# chunk without whitespace this long (a megabyte of "(((", hostile or garbage) is one token instead, so a document
# holding one may be judged otherwise than by datatrove, which would take hours over it.
MAX_CHUNK_CHARS = 65536   # the longest in 20,000 real documents (a Unicode table in code) is 11,379

# str.isspace(): the chunk boundaries of spaCy (and of str.split / str.strip). As an RE2 class body.
SPACE_CPS = (0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x1C, 0x1D, 0x1E, 0x1F, 0x20, 0x85, 0xA0, 0x1680, *range(0x2000, 0x200B),
    0x2028, 0x2029, 0x202F, 0x205F, 0x3000)
SPACE_CLASS = "".join(f"\\x{{{c:X}}}" for c in SPACE_CPS)
SPACE_CHARS = "".join(map(chr, SPACE_CPS))
# str.splitlines() line boundaries (\r\n is one), as an RE2 alternation
LINE_BREAK_RE = "\\r\\n|[\\n\\r\\x{0B}\\x{0C}\\x{1C}\\x{1D}\\x{1E}\\x{85}\\x{2028}\\x{2029}]"


@lru_cache(1)
def tables() -> "Tables":
    return Tables(json.loads(DATA.read_text(encoding="utf-8")))


class Tables:
    """spacy_en.json, compiled."""

    def __init__(self, raw: dict):
        p = raw["patterns"]
        self.version = raw["spacy"]
        prefix = re.compile(p["prefix"])
        # every alternative of the prefix regex starts with "^": search() can only match at 0, as match() does
        assert all(alt.startswith("^") for alt in p["prefix"].split("|^")[0:1]) and p["prefix"].startswith("^")
        self.prefix = prefix.match
        self._suffix = re.compile(p["suffix"]).search
        self.infix = re.compile(p["infix"]).finditer
        self.url = re.compile(p["url"]).match
        self.rules: dict[str, list[str]] = raw["rules"]
        self.punct_chars = frozenset(raw["punct_chars"])
        self.punctuation = frozenset(raw["punctuation"])
        self.terminal = tuple(raw["terminal"])
        # the PhraseMatcher's patterns: each special case holding an affix, as spaCy tokenizes it without special
        # cases
        self.patterns: dict[tuple[str, ...], str] = {}
        for key in raw["matcher_keys"]:
            toks = tuple(self.split(key, specials=False))
            if toks:
                self.patterns.setdefault(toks, key)
        self.longest = max((len(t) for t in self.patterns), default=0)
        self.pattern_tokens = frozenset(p[0] for p in self.patterns)
        # the tokens of the patterns, numbered, and every pair of them next to each other in a pattern: a match
        # across two chunks holds such a pair at their boundary
        vocab = sorted({w for p in self.patterns for w in p})
        self.token_id = {w: i for i, w in enumerate(vocab)}
        self.vocab = pa.array(vocab, pa.string())
        self.pairs = np.array(sorted({self.token_id[p[i]] * len(vocab) + self.token_id[p[i + 1]]
                                      for p in self.patterns for i in range(len(p) - 1)}), dtype=np.int64)
        self.rule_keys = pa.array(sorted(self.rules), pa.string())
        self._split_memo: dict[str, list[str]] = {}

    def suffix(self, s: str):
        """The suffix regex's search on s, from its last SUFFIX_TAIL characters (the regex scans every position:
        on a long chunk that is most of the tokenizer's time). Every suffix alternative but a run of dots (`\\.\\.+$`)
        is shorter, and a lookbehind sees the characters before `pos`; a run of dots reaching into the cut
        matches there too, at its very start: then the whole string is searched."""
        if len(s) <= SUFFIX_TAIL:
            return self._suffix(s)
        pos = len(s) - SUFFIX_TAIL
        m = self._suffix(s, pos)
        if m is not None and m.start() - pos < 3:
            return self._suffix(s)
        return m

    def split_affixes(self, s: str, specials: bool):
        """spaCy's Tokenizer._split_affixes: (middle, prefixes, suffixes)."""
        rules = self.rules if specials else {}
        prefixes: list[str] = []
        suffixes: list[str] = []
        last = 0
        while s and len(s) != last:
            if s in rules:
                break
            last = len(s)
            m = self.prefix(s)
            pre_len = m.end() - m.start() if m is not None else 0
            if pre_len:
                prefix, minus_pre = s[:pre_len], s[pre_len:]
                if minus_pre and minus_pre in rules:
                    prefixes.append(prefix)
                    s = minus_pre
                    break
            m = self.suffix(s[pre_len:])
            suf_len = m.end() - m.start() if m is not None else 0
            if suf_len:
                suffix, minus_suf = s[-suf_len:], s[:-suf_len]
                if minus_suf and minus_suf in rules:
                    suffixes.append(suffix)
                    s = minus_suf
                    break
            if pre_len and suf_len and pre_len + suf_len <= len(s):
                s = s[pre_len:-suf_len]
                prefixes.append(prefix)
                suffixes.append(suffix)
            elif pre_len:
                s = minus_pre
                prefixes.append(prefix)
            elif suf_len:
                s = minus_suf
                suffixes.append(suffix)
        return s, prefixes, suffixes

    def split(self, chunk: str, specials: bool = True) -> list[str]:
        """The tokens of one chunk (no whitespace in it) before the special-case matcher: _split_affixes then
        _attach_tokens."""
        if specials and chunk in self.rules:
            return list(self.rules[chunk])
        if len(chunk) > MAX_CHUNK_CHARS:
            return [chunk]
        s, prefixes, suffixes = self.split_affixes(chunk, specials)
        out = prefixes
        if s:
            if specials and s in self.rules:
                out.extend(self.rules[s])
            elif self.url(s):
                out.append(s)
            else:
                start = 0
                for m in self.infix(s):
                    a, b = m.start(), m.end()
                    if a == 0:              # an infix at the very start is skipped (spaCy's start_before_infixes)
                        continue
                    if a != start:
                        out.append(s[start:a])
                    if a != b:
                        out.append(s[a:b])
                    start = b
                if s[start:]:
                    out.append(s[start:])
        out.extend(reversed(suffixes))
        return out

    def matches(self, toks: list[str]) -> list[tuple[int, int]]:
        """Every (start, end) where a matcher pattern occurs in `toks`."""
        if not self.longest:
            return []
        pat = self.patterns
        return [(a, b) for a in range(len(toks)) if toks[a] in self.pattern_tokens
                for b in range(a + 1, min(len(toks), a + self.longest) + 1) if tuple(toks[a:b]) in pat]

    def apply_matcher(self, toks: list[str], starts: frozenset | set = frozenset()) -> list[str]:
        """spaCy's _apply_special_cases over a text's tokens: the PhraseMatcher's matches of the special cases,
        filtered as _filter_special_spans does (longest first, then the earlier start; kept when neither its first
        nor its last token was covered by a match processed before, kept or not), each replaced by its special
        case's tokens when its text is one. `starts`: the tokens that start a chunk after one space (a match over
        one holds a space: its text is no special case, and its tokens stay)."""
        found = self.matches(toks)
        if not found:
            return toks
        found.sort(key=lambda m: (m[0] - m[1], m[0]))
        seen: set[int] = set()
        keep = []
        for a, b in found:
            if a not in seen and b - 1 not in seen:
                keep.append((a, b))
            seen.update(range(a, b))
        out: list[str] = []
        i = 0
        for a, b in sorted(keep):
            out.extend(toks[i:a])
            text = "".join(toks[a:b])
            spaced = any(i in starts for i in range(a + 1, b)) or any(w.startswith(SPACE_MARK) for w in toks[a:b])
            out.extend(toks[a:b] if spaced else self.rules.get(text, toks[a:b]))
            i = b
        out.extend(toks[i:])
        return out

    def tokenize(self, chunk: str) -> list[str]:
        """The tokens of one chunk on its own, as spaCy gives them."""
        toks = self.split(chunk)
        return self.apply_matcher(toks) if len(toks) > 1 else toks

    def doc_tokens(self, text: str) -> list[str]:
        """Every token spaCy makes of `text`, whitespace tokens included (as SPACE_MARK + their text). A match of
        the special-case matcher across chunks changes no token but hides the matches it overlaps: the matcher
        runs over the whole text here."""
        toks: list[str] = []
        starts: set[int] = set()
        pos = 0
        for m in _CHUNK.finditer(text):
            gap = text[pos:m.start()]
            if gap and (pos == 0 or gap != " "):
                toks.append(SPACE_MARK + (gap if pos == 0 or gap[0] != " " else gap[1:]))
            elif pos:
                starts.add(len(toks))
            chunk = m.group()
            pre = self._split_memo.get(chunk)
            if pre is None:
                pre = self.split(chunk)
                if len(self._split_memo) >= 1 << 18:
                    self._split_memo.clear()
                self._split_memo[chunk] = pre
            toks.extend(pre)
            pos = m.end()
        gap = text[pos:]
        if gap and (pos == 0 or gap != " "):
            toks.append(SPACE_MARK + (gap if pos == 0 or gap[0] != " " else gap[1:]))
        return self.apply_matcher(toks, starts)


SUFFIX_TAIL = 16
SPACE_MARK = "\x00"      # marks a whitespace token in doc_tokens (no chunk holds one: it is no pattern token)
_CHUNK = re.compile(r"\S+")


def words(text: str) -> list[str]:
    """datatrove's `split_into_words(text)` for English: spaCy's tokens, stripped, whitespace tokens dropped."""
    return [w for w in tables().doc_tokens(text) if not w.startswith(SPACE_MARK)]


def is_punct(tok: str) -> bool:
    """spaCy's IS_PUNCT: every character's Unicode category is P*."""
    return all(unicodedata.category(ch)[0] == "P" for ch in tok)


def sentences(text: str) -> int:
    """How many sentences datatrove's `split_into_sentences(text)` gives (spaCy's Sentencizer)."""
    t = tables()
    toks = t.doc_tokens(text)
    if not toks:
        return 1
    return 1 + _token_stats(t, toks, {})[5]


# ------------------------------------------------------------------------------------------ per-chunk statistics

# Per distinct chunk: tokens, tokens with a character outside datatrove's PUNCTUATION_SET ("non-symbol words") and
# their characters, tokens with a letter (str.isalpha), the stop words among the tokens (a bit mask over the stop
# word list), and for the Sentencizer: sentence starts from state "no period seen" (c0), whether a token decides
# the state after the chunk (decisive) and to what (out), whether the first deciding token is a word (first_word).
FIELDS = ("tokens", "nonsym", "nonsym_chars", "alpha", "stop", "c0", "decisive", "out", "first_word")
# ... and for the matcher across chunks: the first and last token before the matcher (their number in the patterns'
# tokens, -1: in none), whether a pattern matches inside the chunk
ROW = FIELDS + ("first_id", "last_id", "has_match")
_MEMO_MAX = 1 << 20
_memo: dict[tuple[str, tuple[str, ...]], tuple] = {}


def _token_stats(t: Tables, toks: list[str], stops: dict[str, int]) -> tuple:
    """FIELDS of a list of tokens (whitespace tokens, SPACE_MARK first, count for the Sentencizer only)."""
    punct = t.punctuation
    words = [w for w in toks if not w.startswith(SPACE_MARK)]
    nonsym = [w for w in words if any(ch not in punct for ch in w)]
    stop = 0
    for w in words:
        stop |= stops.get(w, 0)
    c0, seen, decisive, out, first_word = 0, False, False, 0, False
    for w in toks:
        in_chars = w in t.punct_chars
        if not in_chars and (w.startswith(SPACE_MARK) or not is_punct(w)):
            if seen:
                c0 += 1
                seen = False
            if not decisive:
                first_word = True
            decisive, out = True, 0
        elif in_chars:
            seen = True
            decisive, out = True, 1
    return (len(words), len(nonsym), sum(map(len, nonsym)), sum(any(ch.isalpha() for ch in w) for w in words),
            stop, c0, decisive, out, first_word)


def _chunk_row(t: Tables, chunk: str, stops: dict[str, int]) -> tuple:
    """FIELDS of one chunk on its own, then MATCH_FIELDS."""
    pre = t.split(chunk)
    toks = t.apply_matcher(pre) if len(pre) > 1 else pre
    ids = t.token_id
    return _token_stats(t, toks, stops) + (ids.get(pre[0], -1) if pre else -1, ids.get(pre[-1], -1) if pre else -1,
                                            bool(len(pre) > 1 and t.matches(pre)))


@dataclass
class ChunkStats:
    """The statistics of every chunk of a batch of texts: `values[field]` per chunk, `parent` its text."""

    parent: np.ndarray
    count: np.ndarray            # chunks per text
    values: Mapping[str, np.ndarray]
    space_before: np.ndarray     # a whitespace token before the chunk (inside the text)

    def per_text(self, name: str) -> np.ndarray:
        """The sum of a field over each text's chunks."""
        return np.bincount(self.parent, weights=self.values[name], minlength=len(self.count)).astype(np.int64)

    def stop_words(self) -> np.ndarray:
        """How many of the stop words each text holds (distinct: the bits of `stop` or-ed over its chunks)."""
        out = np.zeros(len(self.count), dtype=np.int64)
        has = self.count > 0
        if has.any():
            starts = (np.cumsum(self.count) - self.count)[has]
            bits = np.bitwise_or.reduceat(self.values["stop"], starts)
            out[has] = np.array([int(b).bit_count() for b in bits]) if bits.size < 64 else _popcount(bits)
        return out


def _popcount(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.uint64)
    out = np.zeros(len(x), dtype=np.int64)
    while x.any():
        out += (x & np.uint64(1)).astype(np.int64)
        x >>= np.uint64(1)
    return out


def split_chunks(arr: pa.Array) -> tuple[pa.Array, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The chunks of every text of `arr` (a string array without nulls): (chunks, parent text, chunks per text,
    a whitespace token before the chunk, the chunk one " " after the one before). A whitespace token is any gap
    inside the text but a single " " (at the start it does not matter: no period is seen before it); one space:
    the chunk continues the one before for the matcher. One pass of the numba kernel, else two regex splits."""
    from .hashing import WS_CLASS, numba_kernels
    n = len(arr)
    k = numba_kernels("dataaudit.textops._spacy_kernels", work=arr.nbytes)
    if k is not None:
        off, data = string_buffers(arr)
        m = k.count_chunks(off, data, WS_CLASS)
        out_data = np.empty(max(len(data), 1), np.uint8)
        out_off = np.zeros(m + 1, np.int64)
        parent = np.empty(m, np.int64)
        gap = np.empty(m, np.uint8)
        m = k.split_chunks(off, data, WS_CLASS, out_data, out_off, parent, gap)
        values = pa.Array.from_buffers(pa.large_string(), m, [None, pa.py_buffer(out_off[:m + 1]),
                                                                pa.py_buffer(out_data[:out_off[m]])])
        parent = parent[:m]
        return values, parent, np.bincount(parent, minlength=n).astype(np.int64), gap[:m] == 2, gap[:m] == 1
    values, parent, counts = flatten_lists(pc.split_pattern_regex(arr, pattern="[" + SPACE_CLASS + "]+"))
    nonempty = to_bool(pc.not_equal(pc.binary_length(values), 0))
    # split at the chunks instead: piece j is the gap before chunk j, the last piece the trailing gap
    gaps, _, gcount = flatten_lists(pc.split_pattern_regex(arr, pattern="[^" + SPACE_CLASS + "]+"))
    ends = np.cumsum(gcount)
    last = np.zeros(len(gaps), dtype=bool)
    last[ends[gcount > 0] - 1] = True
    first = np.zeros(len(gaps), dtype=bool)
    first[(ends - gcount)[gcount > 0]] = True
    gap_len = to_int64(pc.binary_length(gaps))
    one_space = to_bool(pc.equal(gaps, " "))
    space_before = ((gap_len > 0) & ~first & ~one_space)[~last]
    joined = (one_space & ~first)[~last]
    keep = np.flatnonzero(nonempty)
    if len(keep) != len(values):
        values = values.take(pa.array(keep))
    parent = parent[keep]
    return values, parent, np.bincount(parent, minlength=n).astype(np.int64), space_before, joined


def chunk_stats(arr: pa.Array, stop_words=()) -> ChunkStats:
    """The chunks (whitespace-separated pieces) of every text of `arr` and their statistics (FIELDS), with which
    chunks have a whitespace token before them. Where a match of the special-case matcher across chunks may hide
    one inside a chunk (two chunks one space apart, a pattern's two tokens at their boundary, a chunk of that run
    holding a match), the run of chunks is tokenized whole (`Tables.doc_tokens`): its statistics are its first
    chunk's."""
    t = tables()
    arr = pc.fill_null(as_string_array(arr), "")
    values, parent, counts, space_before, joined = split_chunks(arr)
    enc = pc.dictionary_encode(values)
    if isinstance(enc, pa.ChunkedArray):
        enc = enc.combine_chunks()
    idx = to_int64(enc.indices)
    dictionary = enc.dictionary
    stops = {w: 1 << i for i, w in enumerate(stop_words)}
    m = len(dictionary)
    table = np.zeros((len(ROW), m), dtype=np.int64)
    col = {f: k for k, f in enumerate(ROW)}
    # letters only and no special case: one token of its length, a word, no punctuation
    simple = to_bool(pc.match_substring_regex(dictionary, pattern="^[A-Za-z]+$")) & \
        ~to_bool(pc.is_in(dictionary, value_set=t.rule_keys))
    s_idx = np.flatnonzero(simple)
    if s_idx.size:
        words = dictionary.take(pa.array(s_idx))
        for f in ("tokens", "nonsym", "alpha", "decisive", "first_word"):
            table[col[f], s_idx] = 1
        table[col["nonsym_chars"], s_idx] = to_int64(pc.binary_length(words))
        if stops:
            where = to_int64(pc.fill_null(pc.index_in(words, value_set=pa.array(list(stops), pa.string())), -1))
            table[col["stop"], s_idx] = np.array(list(stops.values()) + [0], dtype=np.int64)[where]
        tid = to_int64(pc.fill_null(pc.index_in(words, value_set=t.vocab), -1))
        table[col["first_id"], s_idx] = tid
        table[col["last_id"], s_idx] = tid
    rest = np.flatnonzero(~simple)
    if rest.size:
        key_stops = tuple(stop_words)
        got = np.empty((rest.size, len(ROW)), dtype=np.int64)
        others = dictionary.take(pa.array(rest))
        todo = _kernel_rows(others, stop_words, got)
        if todo is not None:
            others = others.take(pa.array(todo))
        else:
            todo = range(rest.size)
        for j, chunk in zip(todo, others.to_pylist()):
            key = (chunk, key_stops)
            row = _memo.get(key)
            if row is None:
                row = _chunk_row(t, chunk, stops)
                if len(_memo) >= _MEMO_MAX:
                    _memo.clear()
                _memo[key] = row
            got[j] = row
        table[:, rest] = got.T
    # runs to tokenize whole: chunks joined by one space with a pattern's pair at each boundary
    k = len(idx)
    zero = np.zeros(0, np.int64)
    at = zero
    rows = np.zeros((0, len(FIELDS)), np.int64)
    if k > 1 and t.pairs.size:
        fid, lid = table[col["first_id"]][idx], table[col["last_id"]][idx]
        paired = np.zeros(k, dtype=bool)
        paired[1:] = joined[1:] & (fid[1:] >= 0) & (lid[:-1] >= 0)
        pos = np.flatnonzero(paired)
        if pos.size:
            codes = lid[pos - 1] * len(t.token_id) + fid[pos]
            paired[pos] = np.isin(codes, t.pairs)
        if paired.any():
            run = np.cumsum(~paired)
            run_match = np.bincount(run, weights=table[col["has_match"]][idx], minlength=run[-1] + 1) > 0
            run_len = np.bincount(run, minlength=run[-1] + 1)
            hit = np.flatnonzero(run_match[run] & (run_len[run] > 1))
            if hit.size:
                # each such run of chunks is tokenized as one text (the chunks one space apart): a match across
                # chunks lies inside one run, so the runs' tokens are the whole text's; the run's statistics go
                # to its first chunk, the others' are 0
                strs = dictionary.take(pa.array(idx[hit])).to_pylist()
                groups = np.split(np.arange(hit.size), np.flatnonzero(np.diff(run[hit])) + 1)
                zero = hit
                at = hit[[g[0] for g in groups]]
                rows = np.array([_token_stats(t, t.doc_tokens(" ".join(strs[j] for j in g)), stops) for g in groups],
                                dtype=np.int64).reshape(-1, len(FIELDS))
    return ChunkStats(parent=parent, count=counts, values=_Fields(table, idx, zero, at, rows),
                      space_before=space_before)


class _Fields(Mapping):
    """FIELDS per chunk, each gathered from the distinct chunks' table when first read (a batch of 20 MB has
    millions of chunks: gathering every field of ROW cost more than the kernel), with the runs tokenized whole
    put in: the chunks `zero` 0, the chunks `at` their `rows`."""

    def __init__(self, table: np.ndarray, idx: np.ndarray, zero: np.ndarray, at: np.ndarray, rows: np.ndarray):
        self._table, self._idx, self._zero, self._at, self._rows = table, idx, zero, at, rows
        self._got: dict[str, np.ndarray] = {}

    def __getitem__(self, name: str) -> np.ndarray:
        if name not in self._got:
            j = FIELDS.index(name)
            v = self._table[j][self._idx]
            if self._zero.size:
                v[self._zero] = 0
                v[self._at] = self._rows[:, j]
            self._got[name] = v
        return self._got[name]

    def __iter__(self):
        return iter(FIELDS)

    def __len__(self) -> int:
        return len(FIELDS)


@lru_cache(1)
def kernel_tables():
    """The compiled kernel's tables (spacy_kernel_tables.build), or None where the tables hold an alternative the
    kernel does not know (the Python emulation then decides every chunk)."""
    from .spacy_kernel_tables import build
    t = tables()
    try:
        return build(json.loads(DATA.read_text(encoding="utf-8")), t.token_id, t.patterns, t.rules)
    except ValueError:
        return None


def _kernel_rows(chunks: pa.Array, stop_words, out: np.ndarray) -> np.ndarray | None:
    """ROW of each chunk into `out` by the compiled kernel; the chunks it hands back (their indices), for the
    Python emulation. None: no kernel (numba missing or switched off, a small batch, tables it does not know)."""
    from .hashing import numba_kernels
    k = numba_kernels("dataaudit.textops._spacy_kernels", work=chunks.nbytes)
    kt = kernel_tables() if k is not None else None
    if kt is None:
        return None
    off, data = string_buffers(chunks)
    words = [str(w) for w in stop_words]
    stop_off = np.cumsum([0] + [len(w) for w in words]).astype(np.int64)
    stops = np.array([ord(c) for w in words for c in w], dtype=np.int64)
    stop_bits = np.array([1 << i for i in range(len(words))], dtype=np.int64)
    status = np.zeros(len(chunks), dtype=np.uint8)
    k.chunk_rows(data, off, kt.props, kt.rule_hashes, kt.max_rule, kt.lits, kt.lit_off, kt.n_plain, kt.vocab_h,
                 kt.vocab_id, kt.vocab_cp, kt.vocab_off, kt.pat_h, kt.pre_h, kt.pat_ids, kt.pat_off, kt.piece_off,
                 kt.pieces, kt.longest, stops, stop_off, stop_bits, MAX_CHUNK_CHARS, out, status)
    return np.flatnonzero(status)


def clear_memo() -> None:
    _memo.clear()


def sentence_counts(arr: pa.Array) -> np.ndarray:
    """Sentences per text as datatrove's split_into_sentences gives them (`sentences`), vectorized."""
    st = chunk_stats(arr)
    n = len(st.count)
    v = st.values
    sb = st.space_before
    # a whitespace token before the chunk is a word: it decides the state (no period) and comes first
    decisive = v["decisive"].astype(bool) | sb
    out = np.where(v["decisive"].astype(bool), v["out"], 0)
    first_word = np.where(sb, True, v["first_word"].astype(bool))
    # the state entering each chunk: `out` of the last deciding chunk before it in the same text, else 0
    k = len(st.parent)
    pos = np.arange(k)
    last = np.where(decisive, pos, -1)
    last = np.maximum.accumulate(last) if k else last
    prev = np.full(k, -1)
    prev[1:] = last[:-1]
    starts = np.cumsum(st.count) - st.count
    first_of_text = np.zeros(k, dtype=bool)
    first_of_text[starts[st.count > 0]] = True
    # a deciding chunk of an earlier text does not count
    text_start = np.repeat(starts, st.count)
    entering = np.where(prev >= text_start, out[np.maximum(prev, 0)], 0)
    extra = (entering == 1) & first_word
    total = np.bincount(st.parent, weights=v["c0"] + extra, minlength=n).astype(np.int64)
    return total + 1


__all__ = ["words", "sentences", "chunk_stats", "sentence_counts", "tables", "SPACE_CLASS", "SPACE_CHARS",
           "LINE_BREAK_RE", "clear_memo", "FIELDS"]
