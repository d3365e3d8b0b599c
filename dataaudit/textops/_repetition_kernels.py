"""numba kernels of the repetition check (`checks/text_repetition` and `checks/text_lines` hold the Arrow and
numpy twins, which give identical results):

- `word_ngrams`: one document at a time, its words (`doc_words`: split as `_kernels.word_tokens` splits them,
  whitespace bits of 64 bytes at a time (`swar.in_ranges64`), with a hash of their own and their code points),
  then for n = 2..max_n its 64-bit n-gram hashes grouped in an open-addressing table sized by the document
  (`_doc_ngrams`) instead of Arrow's hash table over the whole batch.
- `scan_lines`: one pass over a batch's bytes (64 at a time, `swar.in_ranges64`): every line (split on "\\n")
  with its raw and trimmed byte span, code points, fence state and the cheap necessary conditions ("gates") of the
  structure regexes, so that RE2 only runs on the lines that could match (LABEL_RE is decided there, `_label`, but
  for some headings); a code file becomes one empty line; `code_candidates` a tighter gate of CODE_RE for the
  lines bound for RE2.
- `split_sentences`: the sentences of given line spans (`SENTENCE_END_RE` of the check, as Arrow's
  split_pattern_regex cuts them, each trimmed, empty ones dropped) with their code points and content hashes.
- `sentence_runs` / `line_repeats`: the longest run of one sentence, and the repeated lines, of each document,
  from content hashes (`_span_hash`), one document at a time in a small hash set (`_find_or_add`).
- `count_newlines`: the newlines of each text, for scan_lines' output capacity and code-file bound.
- `gather_spans`: spans copied into Arrow string buffers.
- `list_items`: LIST_RE of the check on gated lines, and where each item's text starts without its marker;
  `count_words` (RE2's \\S+ words) and `continuation_counts` (code points) of the items' text.

Texts are spans data[start:stop] of one UTF-8 buffer. Whitespace for trimming is `hashing.WS_CLASS`'s (Python's
and Arrow's utf8_trim_whitespace set); RE2's \\s, which the regexes use, is only \\t \\n \\f \\r and space.

The kernels that allocate nothing are compiled without numba's reference counting (`_nrt=False`): with it, a call
of a helper that loops over `data` (inlined or not) increfs and decrefs the array with atomic calls, which took
~40% of scan_lines' time and ~50% of split_sentences'.
"""
from __future__ import annotations

import numba
import numpy as np

from .hashing import C1, GOLD
from .repetition_flags import (FENCE, FENCED, GATE_CODE, GATE_LABEL, GATE_LIST, GATE_SYMBOLS, HAS_EQ, SURE_CODE,
                               SURE_LABEL, SURE_SYMBOLS)
from .swar import (HIGH, continuation_bytes, count_byte, each_zero_byte, high_bits, in_ranges64, load8, load_upto,
                    popcount, trailing_zeros)
from .words import mix, multibyte_ws


# ------------------------------------------------------------------------------------------------- words

_X09 = np.uint64(0x0909090909090909)
_X0E = np.uint64(0x0E0E0E0E0E0E0E0E)
_X1C = np.uint64(0x1C1C1C1C1C1C1C1C)
_X21 = np.uint64(0x2121212121212121)
_XC2 = np.uint64(0xC2C2C2C2C2C2C2C2)
_XFC = np.uint64(0xFCFCFCFCFCFCFCFC)
_XE0 = np.uint64(0xE0E0E0E0E0E0E0E0)
_ALL = np.uint64(0xFFFFFFFFFFFFFFFF)
_ONE = np.uint64(1)
_U8 = np.uint64(8)


@numba.njit(inline="always", cache=True)
def _ascii_ws(x):
    """Bit 7 of each byte of x that is ASCII whitespace of WS_CLASS (\\t..\\r, \\x1c..\\x1f, space): for a byte
    below 0x80, bit 7 of (byte | 0x80) - c is set when byte >= c."""
    y = x | HIGH
    return (((y - _X09) & ~(y - _X0E)) | ((y - _X1C) & ~(y - _X21))) & ~x & HIGH


@numba.njit(inline="always", cache=True)
def _lead_bytes(x):
    """Bit 7 of each byte of x that may start a multi-byte whitespace character: C2, E0..E3 (E0 never does)."""
    return each_zero_byte(x ^ _XC2) | each_zero_byte((x & _XFC) ^ _XE0)


@numba.njit(inline="always", cache=True)
def _word(data, nb, s, e, out_hash, out_chars, nw):
    """out_hash[nw], out_chars[nw] of the word data[s:e]: its 8-byte chunks folded (the last one, zero-padded, only
    xor-ed in: a word of up to 8 bytes costs no fold), with its length; code points = bytes - continuation bytes.
    Nothing once the outputs are full (the caller counts on and calls again with room for all)."""
    if nw >= out_hash.shape[0]:
        return
    n = e - s
    if n <= 16 and s + 16 <= nb:            # most words: two loads, no loop, no branch on the length (the same hash)
        x0 = load8(data, s)
        x1 = load8(data, s + 8)
        x0 &= _ALL >> (_U8 * np.uint64(8 - min(n, 8)))
        n1 = np.uint64(4 * max(n - 8, 0))
        x1 &= ~((_ALL << n1) << n1)         # (two shifts: one of 64 bits is undefined)
        f = x0 * C1
        f ^= f >> np.uint64(32)
        h = (f ^ x1) if n > 8 else x0
        out_hash[nw] = mix(h + np.uint64(n) * GOLD)
        out_chars[nw] = n - np.int64(continuation_bytes(x0) + continuation_bytes(x1))
        return
    h = np.uint64(0)
    cont = 0
    q = s
    while e - q > 8:
        x = load8(data, q)
        h = (h ^ x) * C1
        h ^= h >> np.uint64(32)
        cont += np.int64(continuation_bytes(x))
        q += 8
    x = load8(data, q) if q + 8 <= nb else load_upto(data, q, nb)
    x &= _ALL >> (_U8 * np.uint64(8 - (e - q)))
    h ^= x
    cont += np.int64(continuation_bytes(x))
    out_hash[nw] = mix(h + np.uint64(e - s) * GOLD)     # (the length tells "a" from "a\0")
    out_chars[nw] = e - s - cont


@numba.njit(cache=True, nogil=True, boundscheck=False, _nrt=False)
def doc_words(data, starts, stops, i, j, out_hash, out_chars):
    """The words of the texts data[starts[t]:stops[t]], t = i..j - 1 (one document of `word_ngrams`), split on runs
    of WS_CLASS whitespace as `_kernels.word_tokens` splits them, in order: out_hash a 64-bit hash of each word's
    bytes (equal words, equal hashes; not `word_tokens`' hash: only the repetition check uses these), out_chars its
    code points. Returns the number of words; more than the outputs hold when they were too short (they hold the
    first ones then). A kernel of its own, without numba's reference counting: inside `word_ngrams`, which has it,
    the loop over `data` would count references at every step.

    64 bytes at a time: a whitespace bit per byte from one vector compare (`swar.in_ranges64`; from 8-byte words,
    `_ascii_ws`, at the buffer's end; a multi-byte space only where a lead byte shows, `multibyte_ws`), then the
    words' ends and starts from the bits where whitespace begins or ends. No branch per byte, and the next word's
    position never waits for the last word's bytes: ~2x faster than `word_tokens`, and than reading word by word 8
    bytes at a time (and the vector compare took another ~25% off the 8-byte words')."""
    nb = data.shape[0]
    nw = 0
    for t in range(i, j):
        nw = _text_words(data, nb, starts[t], stops[t], out_hash, out_chars, nw)
    return nw


@numba.njit(inline="always", cache=True)
def _text_words(data, nb, base, end, out_hash, out_chars, nw):
    """`doc_words` of the one text data[base:end] (nb: the buffer's length), its words from out_hash[nw]; returns the
    new count."""
    prev = _ONE                                 # the byte before the window is whitespace
    carry = np.uint64(0)                        # a multi-byte space's bytes past the last window
    start = base                                # of the word that goes on (into this window)
    while base < end:
        if base + 64 <= nb:                     # bit j: byte base + j is whitespace (or past the end)
            W = in_ranges64(data, base, 9, 5, 28, 5)        # \t..\r, \x1c..\x1f and space
            lead = in_ranges64(data, base, 0xC2, 1, 0xE0, 4)
        else:                                   # (the buffer's last bytes: no 64-byte load)
            W = np.uint64(0)
            lead = np.uint64(0)
            for b in range(min((end - base + 7) >> 3, 8)):
                p = base + 8 * b
                x = load8(data, p) if p + 8 <= nb else load_upto(data, p, nb)
                W |= high_bits(_ascii_ws(x)) << (_U8 * np.uint64(b))
                lead |= high_bits(_lead_bytes(x)) << (_U8 * np.uint64(b))
        W |= carry
        carry = np.uint64(0)
        r = end - base
        if r < 64:
            lead &= ~(_ALL << np.uint64(r))
        while lead:                             # (rare) multi-byte whitespace
            j = np.int64(trailing_zeros(lead))
            k = multibyte_ws(data, base + j, end)
            if k:
                W |= ((_ONE << np.uint64(k)) - _ONE) << np.uint64(j)
                if j + k > 64:
                    carry = ((_ONE << np.uint64(k)) - _ONE) >> np.uint64(64 - j)
            lead &= lead - _ONE
        if r < 64:
            W |= _ALL << np.uint64(r)
        edge = W ^ ((W << _ONE) | prev)         # whitespace begins (a word ends) or ends (a word starts)
        prev = W >> np.uint64(63)
        begin = edge & ~W
        stop = edge & W
        while stop:
            j = np.int64(trailing_zeros(stop))
            if begin and np.int64(trailing_zeros(begin)) < j:      # (else the word began in an earlier window)
                start = base + np.int64(trailing_zeros(begin))
                begin &= begin - _ONE
            _word(data, nb, start, base + j, out_hash, out_chars, nw)
            nw += 1
            stop &= stop - _ONE
        if begin:                               # a word that goes on into the next window
            start = base + np.int64(trailing_zeros(begin))
        base += 64
    if prev == 0:                               # a word up to the end (a multiple of 64 bytes: no padding bit)
        _word(data, nb, start, end, out_hash, out_chars, nw)
        nw += 1
    return nw


# ---------------------------------------------------------------------------------------------- n-grams

_LOW32 = np.uint64(0xFFFFFFFF)
_S32 = np.uint64(32)
_FILL = 8           # table slots per word of a document (rounded up to a power of two): 8 rather than 2 took ~20%
                    # less time (fewer probes and mispredicted probe loops); 4 and 16 took longer


@numba.njit(cache=True, nogil=True, boundscheck=False)
def word_ngrams(data, starts, stops, parent, min_words, max_n, is_top, is_dup, top, dup, n_words, word_run):
    """The n-gram statistics of documents made of the texts data[starts[t]:stops[t]] (parent[t]: the document of
    text t, non-decreasing): one document at a time, its words (`doc_words`) into a buffer that stays in cache,
    then its n-grams (`_doc_ngrams`). n_words[d]: the words of document d; is_top/is_dup[n]: compute that
    statistic; top/dup [max_n + 1, n_docs] float64 numerators, filled in place. A document of fewer than 2 or
    min_words words gets none. word_run[d] (when word_run is not empty): `_word_run` of document d, whatever its
    length. (The words of a whole batch at once meant ~24 MB of fresh memory for an 8 MB batch:
    its page faults took ~25% of the words' time.)"""
    n = starts.shape[0]
    most = 0                                # words of the largest document, at most: a word and a space per 2 bytes
    i = 0
    while i < n:
        j = _group_end(parent, i)
        bound = 0
        for t in range(i, j):
            bound += (stops[t] - starts[t] + 1) // 2
        most = max(most, bound)
        i = j
    wh = np.empty(most + 1, np.uint64)
    wlen = np.empty(most + 1, np.int32)
    # _doc_ngrams' work arrays, grown with the documents: the table (slot p: hash at 2p, stamp << 32 | count at
    # 2p + 1), and per candidate j its n-gram's hash, first word, slot, first occurrence or not; code points before
    # each word
    tab = np.zeros(0, np.uint64)
    hc = np.empty(0, np.uint64)
    cand = np.empty(0, np.int32)
    slot = np.empty(0, np.int32)
    new = np.empty(0, np.bool_)
    cum = np.zeros(0, np.int64)
    stamp = np.uint64(0)                    # the last round's (a slot of an older stamp is free)
    i = 0
    while i < n:
        j = _group_end(parent, i)
        d = parent[i]
        w = doc_words(data, starts, stops, i, j, wh, wlen)
        n_words[d] = w
        if word_run.shape[0]:
            word_run[d] = _word_run(wh, wlen, min(w, wh.shape[0]))
        if w >= 2 and w >= min_words:
            if w + 1 > hc.shape[0]:
                size = 16
                while size < _FILL * w:
                    size *= 2
                if 2 * size > tab.shape[0]:
                    tab = np.zeros(2 * size, np.uint64)
                    stamp = np.uint64(0)
                hc, cand, slot = np.empty(w + 1, np.uint64), np.empty(w + 1, np.int32), np.empty(w + 1, np.int32)
                new, cum = np.empty(w + 1, np.bool_), np.zeros(w + 1, np.int64)
            stamp = _doc_ngrams(wh, wlen, w, max_n, is_top, is_dup, top, dup, d, tab, hc, cand, slot, new, cum, stamp)
        i = j
    return 0


WORD_RUN_UNITS = 3      # a unit of 1..3 words said again and again, back to back ("no no no", "ha ha ha ha")


@numba.njit(inline="always", cache=True)
def _word_run(wh, wlen, w):
    """The most times one unit of 1..WORD_RUN_UNITS words comes back to back in the w words wh (hashes; wlen: their
    code points), counting its first time; 0 when none comes twice in a row. A word of one character breaks a run
    ("- - - -" is a rule, not a loop). `text_repetition.word_runs` is its numpy twin."""
    best = 0
    for k in range(1, WORD_RUN_UNITS + 1):
        run = 0                                 # consecutive positions i with word i == word i - k
        for i in range(k, w):
            if wh[i] == wh[i - k] and wlen[i] >= 2:
                run += 1
                if run >= k and run // k + 1 > best:
                    best = run // k + 1
            else:
                run = 0
    return best


@numba.njit(cache=True, nogil=True, boundscheck=False, _nrt=False)
def _doc_ngrams(wh, wlen, w, max_n, is_top, is_dup, top, dup, d, tab, hc, cand, slot, new, cum, stamp):
    """The n-gram statistics of document d from its w words (wh: their hashes, well mixed; wlen: their code points)
    into top/dup[n, d] (integer sums, exact in float64 as in the twin); the work arrays are `word_ngrams`'. Returns
    the last round's stamp.

    Round n only visits the candidates (an n-gram whose two (n-1)-grams both occur twice or more), kept compact
    with their hashes (a candidate of round n was one of every earlier round, so only its hash needs extending).
    The n-grams of a round are grouped in an open-addressing table of (hash, stamp << 32 | count) slots sized by
    the document's words, the stamp telling this round's slots from older ones (nothing is cleared). One document at
    a time, so the document needs no mixing into the hashes. A round is three passes: the hashes, insert (and the
    highest count), then the statistics and the next round's candidates (hashes computed between two inserts waited
    for the probe loop's mispredicted exits: ~10% more time)."""
    size = 16
    while size < _FILL * w:
        size *= 2
    mask = np.uint64(size - 1)
    for i in range(w):
        cum[i + 1] = cum[i] + wlen[i]
    k = w - 1                           # round 2: every position, its 1-gram hash read from wh (no pass to copy it)
    for n in range(2, max_n + 1):
        stamp += np.uint64(1)
        tag = stamp << _S32
        best = np.uint64(0)
        if n == 2:
            for j in range(k):
                hc[j] = mix(wh[j] * GOLD + wh[j + 1])
        else:
            for j in range(k):
                hc[j] = mix(hc[j] * GOLD + wh[cand[j] + n - 1])
        for j in range(k):
            hv = hc[j]
            p = hv & mask
            meta = tab[2 * p + 1]
            # another n-gram's slot: probe on (one test: `a and b` took two branches, the first one taken at
            # random, ~7% more time)
            while (((meta ^ tag) >> _S32) | np.uint64(tab[2 * p] == hv)) == 0:
                p = (p + np.uint64(1)) & mask
                meta = tab[2 * p + 1]
            fresh = (meta & ~_LOW32) != tag
            meta = (tag | np.uint64(1)) if fresh else meta + np.uint64(1)
            tab[2 * p] = hv
            tab[2 * p + 1] = meta
            new[j] = fresh
            slot[j] = np.int32(p)
            if meta & _LOW32 > best:
                best = meta & _LOW32
        if best < 2:                    # nothing repeats: no statistic, no candidate
            break
        want_top = is_top[n]
        want_dup = is_dup[n]
        t = 0.0
        end = 0
        total = 0
        any_rep = False
        kk = 0
        prev_i = -2
        prev_rep = False
        for j in range(k):
            i = j if n == 2 else cand[j]
            c = tab[2 * np.int64(slot[j]) + 1] & _LOW32
            rep = c >= 2
            if j:                       # i - 1 and i both repeat: i is a candidate of round n + 1 (no branch:
                cand[kk] = prev_i       # it goes either way at random); kk < j, so nothing unread is overwritten
                hc[kk] = hc[j - 1]
                kk += rep & prev_rep & (prev_i == i - 1)
            if want_top and c == best and new[j]:
                v = np.float64(best) * (cum[i + n] - cum[i] + (n - 1))      # words joined by single spaces
                if v > t:
                    t = v
            if want_dup and not new[j]:     # words covered by a repeated occurrence: the union of the
                any_rep = True              # intervals i..i+n (i increasing)
                a = i if i > end else end
                if i + n > a:
                    total += cum[i + n] - cum[a]
                    end = i + n
            prev_i = i
            prev_rep = rep
        if want_top:
            top[n, d] = t
        if any_rep:
            dup[n, d] = total
        k = kk
        if k == 0:
            break
    return stamp


# ------------------------------------------------------------------------------------------------- lines

_HASH_MUL = np.uint64(0x9FB21C651E98DF25)


@numba.njit(inline="always", cache=True)
def _span_hash(data, a, b):
    """(content hash of data[a:b], its UTF-8 continuation bytes): eight bytes per step (`swar.load8`), the last
    1..7 as the high bytes of the load that ends at b (so the chunks depend on the content only, not on where it
    lies), each folded in by a multiply and an xor-shift, then mixed with the length. Equal bytes, equal hashes."""
    h = GOLD
    cont = np.uint64(0)
    i = a
    while i + 8 <= b:
        x = load8(data, i)
        h = (h ^ x) * _HASH_MUL
        h ^= h >> np.uint64(29)
        cont += continuation_bytes(x)
        i += 8
    r = b - i
    if r > 0:
        if b >= 8:
            x = load8(data, b - 8) >> np.uint64(8 * (8 - r))
        else:                               # (the first bytes of the buffer: no 8-byte load ends there)
            x = np.uint64(0)
            for t in range(r):
                x |= np.uint64(data[i + t]) << np.uint64(8 * t)
        h = (h ^ x) * _HASH_MUL
        h ^= h >> np.uint64(29)
        cont += continuation_bytes(x)
    return mix(h + np.uint64(b - a)), np.int64(cont)


@numba.njit(inline="always", cache=True)
def _ws_before(data, start, i, cls):
    """Bytes of the whitespace character ending at i (0: none)."""
    b = data[i - 1]
    if b < 0x80:
        return 1 if cls[b] == 1 else 0
    if i - 2 >= start and data[i - 2] == 0xC2 and multibyte_ws(data, i - 2, i) == 2:
        return 2
    if i - 3 >= start and cls[data[i - 3]] == 2 and multibyte_ws(data, i - 3, i) == 3:
        return 3
    return 0


@numba.njit(inline="always", cache=True)
def _trim(data, a, z, cls):
    """(start, stop, whitespace characters removed) of data[a:z] trimmed of Unicode whitespace (`cls`: WS_CLASS): an
    ASCII byte is tested by its class alone, the multi-byte tests only run on a byte that may start or end such a
    character (a general step on every byte cost scan_lines ~8% more time)."""
    n = 0
    while a < z:
        c = cls[data[a]]
        if c == 1:
            a += 1
        elif c == 2:
            w = multibyte_ws(data, a, z)
            if w == 0:
                break
            a += w
        else:
            break
        n += 1
    while z > a:
        b = data[z - 1]
        if b < 0x80:
            if cls[b] != 1:
                break
            z -= 1
        else:
            w = _ws_before(data, a, z, cls)
            if w == 0:
                break
            z -= w
        n += 1
    return a, z, n


@numba.njit(inline="always", cache=True)
def _ascii_space(b):                # RE2's \s and \v: skipping more than \s keeps every gate a superset
    return b == 32 or 9 <= b <= 13


@numba.njit(inline="always", cache=True)
def _ascii_trimmed(data, p, q):
    """(p, q) of data[p:q] without its leading and trailing ASCII whitespace (`_ascii_space`)."""
    while p < q and _ascii_space(data[p]):
        p += 1
    while q > p and _ascii_space(data[q - 1]):
        q -= 1
    return p, q


@numba.njit(inline="always", cache=True)
def _re2_space(b):                  # RE2's \s
    return b == 32 or b == 9 or b == 10 or b == 12 or b == 13


@numba.njit(inline="always", cache=True)
def _skip_re2_space(data, p, j):
    """The first position from p on (before j) that is not RE2's \\s."""
    while p < j and _re2_space(data[p]):
        p += 1
    return p


@numba.njit(inline="always", cache=True)
def _ascii_letter(b):
    return 65 <= b <= 90 or 97 <= b <= 122


@numba.njit(inline="always", cache=True)
def _code_first(f):
    """A line of code (CODE_RE) can only start with these bytes, unless it ends with one of _code_last's or
    is an assignment (a name, then "=")."""
    return (f == 125 or f == 93 or f == 41 or f == 47 or f == 42 or f == 124 or f == 34 or f == 39 or f == 48
            or f == 91 or f == 123 or f == 35 or f == 64
            or f == 97 or f == 98 or f == 99 or f == 100 or f == 102 or f == 105 or f == 112 or f == 114
            or f == 116 or f == 117 or f == 121)   # } ] ) / * | " ' 0 [ { # @ and a b c d f i p r t u y


@numba.njit(inline="always", cache=True)
def _code_last(b):                  # { } ; , : | )
    return b == 123 or b == 125 or b == 59 or b == 44 or b == 58 or b == 124 or b == 41


# What the scan notes about a line's bytes on the way (`seen`): an "=" or a ":" in it (eight bytes at a time)
_EQ, _COLON = 1, 2
# A letter or digit: ASCII ones, and the lead bytes of U+5000..U+8FFF, CJK ideographs (\p{L}) since Unicode 1.1 (a
# table lookup, no branch: the branches of a letter/digit test ran ~8x slower on mixed text)
_ALNUM = np.zeros(256, np.bool_)
_ALNUM[48:58] = _ALNUM[65:91] = _ALNUM[97:123] = _ALNUM[0xE5:0xE9] = True


@numba.njit(inline="always", cache=True)
def _word_byte(b):                  # RE2's \w
    return _ascii_letter(b) or 48 <= b <= 57 or b == 95


def _keywords(*words: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(their bytes one after another, offsets, which bytes start one): keyword lists the kernels can loop over."""
    first = np.zeros(256, np.bool_)
    first[[w.encode()[0] for w in words]] = True
    return (np.frombuffer("".join(words).encode(), np.uint8).copy(),
            np.concatenate(([0], np.cumsum([len(w) for w in words]))).astype(np.int64), first)


_DEFS = _keywords("def", "fn", "func", "function")
_BLOCKS = _keywords("if", "elif", "else", "for", "while", "with", "try", "except", "finally")
_STOPS = _keywords("return", "raise", "yield", "pass", "break", "continue", "throw")
_ASYNC = _keywords("async")


@numba.njit(inline="always", cache=True)
def _keyword_at(data, p, j, keywords):
    """End of the keyword of `keywords` (`_keywords`) that data[p:j] starts with and that \\w does not continue
    (RE2's \\b), or -1. (A line whose first byte starts none of them is settled by one lookup: most prose.)"""
    words, at, first = keywords
    if p >= j or not first[data[p]]:
        return -1
    for w in range(at.shape[0] - 1):
        n = at[w + 1] - at[w]
        if p + n > j:
            continue
        same = True
        for i in range(n):
            if data[p + i] != words[at[w] + i]:
                same = False
                break
        if same and (p + n == j or not _word_byte(data[p + n])):
            return p + n
    return -1


@numba.njit(cache=True, nogil=True, boundscheck=False, _nrt=False)
def _sure_code(data, s, j):
    """The raw line data[s:j] matches CODE_RE for sure: it matches one of these exact parts of it (RE2's \\s
    and \\w as the regex has them), so a text with enough such lines is a code file without running RE2:
    ^\\s*[}\\])]   [{}]\\s*[;,]?\\s*$   \\)\\s*;\\s*$   ^\\s*(?://|/\\*|\\*/)   ^\\s*\\||\\|\\s*$
    ^\\s*(?:async\\s+)?(?:def|fn|func|function)\\s+[\\w$]+\\s*[(<]   ^\\s*[A-Za-z_$][\\w$]*\\s*=\\s*[^=\\s]
    ^\\s*(?:if|elif|else|for|while|with|try|except|finally)\\b.*:\\s*$
    ^\\s*(?:return|raise|yield|pass|break|continue|throw)\\b(?:.*[^.!?\\s])?\\s*$"""
    p = s
    while p < j and _re2_space(data[p]):
        p += 1
    if p >= j:
        return False
    q = j                                   # data[q - 1]: the last byte that is not \s
    while _re2_space(data[q - 1]):
        q -= 1
    f = data[p]
    last = data[q - 1]
    if f == 125 or f == 93 or f == 41 or f == 124 or last == 124:             # } ] ) |  and | at the end
        return True
    if p + 1 < j and ((f == 47 and (data[p + 1] == 47 or data[p + 1] == 42)) or (f == 42 and data[p + 1] == 47)):
        return True                                                             # // /* */
    if last == 123 or last == 125 or last == 59 or last == 44:                  # { } ; ,
        t = q - 1
        if last == 59 or last == 44:
            t -= 1
            while t >= p and _re2_space(data[t]):
                t -= 1
        if t >= p and (data[t] == 123 or data[t] == 125 or (last == 59 and data[t] == 41)):
            return True                                                         # brace [;,]?  or  ) ;
    if _ascii_letter(f) or f == 95 or f == 36:
        k = p + 1                                                               # name = value
        while k < j and (_word_byte(data[k]) or data[k] == 36):
            k += 1
        while k < j and _re2_space(data[k]):
            k += 1
        if k < j and data[k] == 61:
            k += 1
            while k < j and _re2_space(data[k]):
                k += 1
            if k < j and data[k] != 61:
                return True
        r = p                                                                   # definitions
        e = _keyword_at(data, p, j, _ASYNC)
        if e > 0 and e < j and _re2_space(data[e]):
            r = e
            while r < j and _re2_space(data[r]):
                r += 1
        e = _keyword_at(data, r, j, _DEFS)
        if e > 0 and e < j and _re2_space(data[e]):                             # (func and function: \\s+ decides)
            k = e
            while k < j and _re2_space(data[k]):
                k += 1
            m = k
            while k < j and (_word_byte(data[k]) or data[k] == 36):
                k += 1
            if k > m:
                while k < j and _re2_space(data[k]):
                    k += 1
                if k < j and (data[k] == 40 or data[k] == 60):
                    return True
        e = _keyword_at(data, p, j, _BLOCKS)                # block headers ending with ":"
        if e > 0 and last == 58 and q - 1 >= e:
            return True
        e = _keyword_at(data, p, j, _STOPS)                 # return ... not ending . ! ?
        if e > 0 and (q <= e or not (last == 46 or last == 33 or last == 63)):
            return True
    return False


@numba.njit(inline="always", cache=True)
def _colon_at(data, r, j):
    """Bytes of the ":" or "：" (EF BC 9A) at r, else 0."""
    if data[r] == 58:
        return 1
    if data[r] == 0xEF and r + 2 < j and data[r + 1] == 0xBC and data[r + 2] == 0x9A:
        return 3
    return 0


@numba.njit(cache=True, nogil=True, boundscheck=False, _nrt=False)
def _label(data, s, j):
    """Does LABEL_RE match the raw line data[s:j]: 1 yes, 0 no, 2 only its heading alternative can tell (a "#"
    heading with no ASCII letter and non-ASCII bytes: \\p{L} needs RE2; the other two alternatives do not match).
    RE2's \\s is \\t \\n \\f \\r and space (\\v is not), \\w is ASCII. Each alternative has one way to match: its
    runs of spaces, "#", name and word bytes can only match whole."""
    p = s
    while p < j and _re2_space(data[p]):
        p += 1
    unknown = False
    k = p                                   # ^\s*#{1,6}\s.*\p{L}
    while k < j and data[k] == 35:
        k += 1
    if 1 <= k - p <= 6 and k < j and _re2_space(data[k]):
        for t in range(k + 1, j):
            if _ascii_letter(data[t]):
                return 1
            if data[t] >= 0x80:
                unknown = True
    k = p                                   # ^\s*(?:-\s+)?[A-Za-z_][\w.-]*:\s+\S
    if k < j and data[k] == 45:
        k += 1
        while k < j and _re2_space(data[k]):
            k += 1
        if k == p + 1:
            k = j                           # "-" not followed by \s: no name can start at it
    if k < j and (_ascii_letter(data[k]) or data[k] == 95):
        k += 1
        while k < j and (_word_byte(data[k]) or data[k] == 46 or data[k] == 45):
            k += 1
        if k < j and data[k] == 58:
            u = k + 1
            while u < j and _re2_space(data[u]):
                u += 1
            if u > k + 1 and u < j:
                return 1
    k = p                                   # ^\s*W(?:[ \t]+W){0,3}[:\x{FF1A}]\s*$, W = [^\s:\x{FF1A}]{1,30}
    words = 0
    while True:
        r = k
        nc = 0                              # code points of the word
        while r < j and not _re2_space(data[r]) and _colon_at(data, r, j) == 0:
            nc += (data[r] & 0xC0) != 0x80
            r += 1
        if nc == 0 or nc > 30:
            break
        words += 1
        if words > 4:
            break
        if r < j and _colon_at(data, r, j):
            u = r + _colon_at(data, r, j)
            while u < j and _re2_space(data[u]):
                u += 1
            if u == j:
                return 1
            break
        if r < j and (data[r] == 32 or data[r] == 9):
            while r < j and (data[r] == 32 or data[r] == 9):
                r += 1
            k = r
            continue
        break
    return 2 if unknown else 0


_LEADS = _keywords("async", "await", "break", "class", "continue", "def", "fn", "func", "function", "for", "finally",
                   "from", "if", "import", "pass", "package", "return", "raise", "try", "throw", "using", "yield")
_DIRECTIVES = _keywords("include", "define", "undef", "ifdef", "ifndef", "if", "elif", "else", "endif", "pragma")


@numba.njit(inline="always", cache=True)
def _code_start(data, p, q, f, last):
    """The line data[p:q] (f, last: its first and last bytes) may match one of CODE_RE's alternatives that need a
    start: a _code_first byte, and then what that alternative needs after it: for a lowercase letter one of their
    keywords (RE2's \\b after it); "#" a directive; a quote the key or literal of a dict or table
    ("..." then \\s* and ":", "," at the end or before "#", or "#"); "0" a hex key (0x41:); "/" and "*" a
    comment (// /* */); "[" and "{" the other end (] or } last, or before a last ","). (Prose lines starting
    "a", "that", a quote, "* " or "#### 18" were most of the lines RE2 found no code in.)"""
    if 97 <= f <= 122:
        return _code_first(f) and _keyword_at(data, p, q, _LEADS) > 0
    if f == 35:
        k = p + 1
        while k < q and _re2_space(data[k]):
            k += 1
        return _keyword_at(data, k, q, _DIRECTIVES) > 0
    if f == 34 or f == 39:                  # "[^"]*" or '[^']*', then \s* and : or , or #
        k = p + 1
        while k < q and data[k] != f:
            k += 1
        k += 1
        while k < q and _re2_space(data[k]):
            k += 1
        if k >= q:
            return False
        if data[k] == 58 or data[k] == 35:
            return True
        if data[k] != 44:
            return False
        k += 1
        while k < q and _re2_space(data[k]):
            k += 1
        return k >= q or data[k] == 35
    if f == 48:                             # 0[xX][0-9a-fA-F]+\s*:
        k = p + 1
        if k >= q or not (data[k] == 120 or data[k] == 88):
            return False
        k += 1
        m = k
        while k < q and (48 <= data[k] <= 57 or 97 <= data[k] <= 102 or 65 <= data[k] <= 70):
            k += 1
        while k > m and k < q and _re2_space(data[k]):
            k += 1
        return k > m and k < q and data[k] == 58
    if f == 47:                             # // /*
        return p + 1 < q and (data[p + 1] == 47 or data[p + 1] == 42)
    if f == 42:                             # */
        return p + 1 < q and data[p + 1] == 47
    if f == 91 or f == 123:                 # [ ... ] or { ... }, then an optional ","
        t = q - 1
        if last == 44:
            t -= 1
            while t > p and _re2_space(data[t]):
                t -= 1
        return t > p and (data[t] == 93 or data[t] == 125)
    return _code_first(f)


@numba.njit(inline="always", cache=True)
def _code_gate(data, p, q, f, last, has_eq):
    """CODE_RE may match the line data[p:q] (ASCII whitespace trimmed: f = data[p], last = data[q - 1]; has_eq: it
    holds an "="): it starts like code (`_code_start`); or ends with { } |; or starts with a name that a call's "("
    follows ([A-Za-z_$][\\w$.]*\\() and ends with ")" or with [;:,] after ")" and [\\s;:,{]*; or ends with ";"
    after ")" or a brace (and whitespace, ";" ":" ","), or with ";" and holds an "="; or ends with ":" and starts
    with e or w (else, elif, except, while, with); or is an assignment: a name, then . -> :: [ or an operator or
    "=" after whitespace. Every alternative of CODE_RE needs one of these (tests check it on real text)."""
    if _code_start(data, p, q, f, last) or last == 123 or last == 125 or last == 124:
        return True
    if last == 59 and has_eq:                           # =[^=].*;\s*$
        return True
    if last == 58 and (f == 101 or f == 119):           # block headers that start with no _code_first byte
        return True
    tail = last == 41 or last == 59 or last == 58 or last == 44
    if not (tail or has_eq):
        return False
    ident = _ascii_letter(f) or f == 95 or f == 36
    if ident and has_eq:                                # name (.x | ->x | ::x | [..])* \s* op? =
        k = p + 1
        while k < q and (_word_byte(data[k]) or data[k] == 36):
            k += 1
        if k < q:
            b = data[k]
            if b == 46 or b == 45 or b == 58 or b == 91:
                return True
            while k < q and _ascii_space(data[k]):
                k += 1
            if k < q:
                b = data[k]
                if (b == 61 or b == 45 or b == 43 or b == 42 or b == 47 or b == 37 or b == 38 or b == 124
                        or b == 94 or b == 60 or b == 62):
                    return True
    call = False
    if ident and tail:                                  # name(  (the "." of a.b( included)
        k = p + 1
        while k < q and (_word_byte(data[k]) or data[k] == 36 or data[k] == 46):
            k += 1
        call = k < q and data[k] == 40
    if last == 41:
        return call
    if tail:
        t = q - 1
        while t >= p:
            b = data[t]
            if b == 123:
                return True
            if not (_ascii_space(b) or b == 59 or b == 58 or b == 44):
                return b == 125 or (b == 41 and (call or last == 59))
            t -= 1
    return False


@numba.njit(cache=True, nogil=True, boundscheck=False, _nrt=False)
def code_candidates(data, rs, rt, flags, rows, out):
    """out[t]: the line rows[t] (raw span rs..rt, its `flags` from scan_lines) passes `_code_gate`, a tighter
    necessary condition of CODE_RE than GATE_CODE. Run on the lines that would go to RE2 only: prose lines ending
    with ":" "," ")" or holding an "=" pass GATE_CODE and made two thirds of them (none matched), and the
    tighter test on every line in scan_lines cost as much as it saved."""
    for t in range(rows.shape[0]):
        i = rows[t]
        p, q = _ascii_trimmed(data, rs[i], rt[i])
        out[t] = q > p and _code_gate(data, p, q, data[p], data[q - 1], (flags[i] & HAS_EQ) != 0)
    return 0


@numba.njit(cache=True, nogil=True, boundscheck=False, _nrt=False)
def _line_flags(data, s, j, seen):
    """FENCE and the GATE_* flags of the non-blank raw line data[s:j] (`seen`: _EQ and _COLON, the scan's notes);
    a SURE_CODE line gets no gates but GATE_CODE (and HAS_EQ)."""
    p, q = _ascii_trimmed(data, s, j)       # first and last bytes that are not ASCII whitespace
    if p >= q:
        return 0
    f = data[p]
    last = data[q - 1]
    fl = 0
    r = s                                   # FENCE_RE: ^\s*(?:```|~~~)
    while r < j and _re2_space(data[r]):
        r += 1
    if r + 3 <= j and ((data[r] == 96 and data[r + 1] == 96 and data[r + 2] == 96)
                       or (data[r] == 126 and data[r + 1] == 126 and data[r + 2] == 126)):
        fl |= FENCE
    if seen & _EQ:
        fl |= HAS_EQ
    if _code_first(f) or _code_last(last) or ((seen & _EQ) and (_ascii_letter(f) or f == 95 or f == 36)):
        fl |= GATE_CODE
        if _sure_code(data, s, j):          # code is in no other class: its other gates do not matter
            return fl | SURE_CODE
    label = f == 35 or last == 58 or last == 0x9A          # "#", ends with ":" or "：" (EF BC 9A)
    if not label and (seen & _COLON):                      # key: value (optionally after "- ")
        k = p
        if f == 45:
            k += 1
            if k < j and _ascii_space(data[k]):
                while k < j and _ascii_space(data[k]):
                    k += 1
            else:
                k = j
        if k < j and (_ascii_letter(data[k]) or data[k] == 95):
            k += 1
            while k < j and (_ascii_letter(data[k]) or 48 <= data[k] <= 57 or data[k] == 95
                             or data[k] == 46 or data[k] == 45):
                k += 1
            label = k < j and data[k] == 58
    if label:                               # decided here, but for some headings (see _label)
        m = _label(data, s, j)
        if m == 1:
            fl |= GATE_LABEL | SURE_LABEL
        elif m == 2:
            fl |= GATE_LABEL
    t = p                                   # no letter or digit (a Chinese line holds letters); most lines
    ascii = True                            # have one in their first bytes
    while t < q and not _ALNUM[data[t]]:
        ascii &= data[t] < 0x80
        t += 1
    if t >= q:                              # ASCII only: SYMBOLS_RE matches for sure (\p{L} \p{N} need RE2)
        fl |= GATE_SYMBOLS | (SURE_SYMBOLS if ascii else 0)
    if (f == 45 or f == 42 or f == 43 or f == 40 or f == 91 or 48 <= f <= 57 or f == 0xC2 or f == 0xE2
            or (_ascii_letter(f) and p + 1 < j and (data[p + 1] == 46 or data[p + 1] == 41))):
        fl |= GATE_LIST
    return fl


@numba.njit(cache=True, nogil=True, boundscheck=False, _nrt=False)
def scan_lines(data, off, newlines, cls, code_share, min_code_lines, doc, rs, rt, ts, tt, raw_chars, chars, flags):
    """Every line of the texts data[off[d]:off[d + 1]] (split on "\\n"; a text of n newlines has n + 1 lines):
    its raw span rs..rt, trimmed span ts..tt, code points raw and trimmed, and `flags`: FENCE (exact: FENCE_RE)
    and GATE_* (the line may match CODE_RE / LABEL_RE / SYMBOLS_RE / LIST_RE; never unset where the regex
    matches, but a SURE_CODE line, which is in no other class, has GATE_CODE only), HAS_EQ, SURE_CODE (it matches
    CODE_RE: `_sure_code`), FENCED (a fence or inside a fenced block: after an odd number of fences of its text).

    A code file (its SURE_CODE and FENCED lines are >= min_code_lines and >= code_share of its non-blank lines)
    counts nowhere in the check, whatever its lines are: it becomes one empty line (empty spans at its start, no
    code points, no flags), so nothing after the scan looks at its lines. Its scan stops as soon as those lines
    reach code_share of all its lines (`newlines[d]` + 1, a bound of the non-blank ones), else at its end: half
    the bytes and 60% of the lines of mixed text with code, most of them never scanned.
    An infinite code_share: no code files. Output capacity: newlines + texts. Returns the number of lines."""
    ruled = code_share < np.inf
    n = 0
    for d in range(off.shape[0] - 1):
        end = off[d + 1]
        s = off[d]
        first = n
        nonblank = 0
        sure = 0
        inside = False                          # after an odd number of fences of the text
        settle = max(float(min_code_lines), code_share * (newlines[d] + 1))
        code_file = False
        while True:
            j, nc, seen = _line_end(data, s, end)
            a, z, cut = _trim(data, s, j, cls)  # trim (Unicode whitespace, as Arrow)
            fl = 0
            if z > a:
                nonblank += 1
                fl = _line_flags(data, s, j, seen)
                fence = (fl & FENCE) != 0
                if fence or inside:
                    fl |= FENCED
                inside ^= fence
                sure += (fl & (SURE_CODE | FENCED)) != 0
                if sure >= settle:
                    code_file = True
                    break
            doc[n] = d
            rs[n] = s
            rt[n] = j
            ts[n] = a
            tt[n] = z
            raw_chars[n] = nc
            chars[n] = nc - cut
            flags[n] = fl
            n += 1
            if j >= end:
                break
            s = j + 1
        if code_file or (ruled and sure >= max(float(min_code_lines), code_share * nonblank)):
            n = first
            doc[n] = d
            rs[n] = rt[n] = ts[n] = tt[n] = off[d]
            raw_chars[n] = chars[n] = flags[n] = 0
            n += 1
    return n


@numba.njit(inline="always", cache=True)
def _line_end(data, s, end):
    """(the end of the line that starts at s: its "\\n" or `end`, its code points, _EQ | _COLON if it holds an "="
    or a ":"): 64 bytes at a time (`swar.in_ranges64`; the line scan took ~10% less time than with eight), byte
    by byte in the buffer's last 64 bytes."""
    j = s
    cont = np.uint64(0)                     # UTF-8 continuation bytes: code points = bytes - cont
    eq = np.uint64(0)
    colon = np.uint64(0)
    nb = data.shape[0]
    while j < end and j + 64 <= nb:
        nl = in_ranges64(data, j, 10, 1, 0, 0)
        if end - j < 64:                    # the text ends in this block: stop there as at a newline
            nl |= _ALL << np.uint64(end - j)
        k = np.int64(trailing_zeros(nl))    # (64: none)
        keep = (_ONE << np.uint64(k)) - _ONE if k < 64 else _ALL
        cont += popcount(in_ranges64(data, j, 0x80, 0x40, 0, 0) & keep)
        eq |= in_ranges64(data, j, 61, 1, 0, 0) & keep
        colon |= in_ranges64(data, j, 58, 1, 0, 0) & keep
        if k < 64:
            j += k
            return j, (j - s) - np.int64(cont), _seen(eq, colon)
        j += 64
    seen = _seen(eq, colon)
    nc = (j - s) - np.int64(cont)
    while j < end:
        x = data[j]
        if x == 10:
            break
        seen |= _EQ if x == 61 else (_COLON if x == 58 else 0)
        nc += (x & 0xC0) != 0x80
        j += 1
    return j, nc, seen


@numba.njit(inline="always", cache=True)
def _seen(eq, colon):
    return (_EQ if eq else 0) | (_COLON if colon else 0)


@numba.njit(inline="always", cache=True)
def _marker_end(data, p, j):
    """End of the list marker of LIST_RE that data[p:j] starts with (before its \\s+), or -1: - * + • ◦ ▪ ‣ · –,
    \\d{1,3}[.)], [A-Za-z][.)], \\(\\w{1,4}\\), \\[[ xX]\\] (RE2's ASCII \\d and \\w; no two alternatives start
    alike, so each has one way to match)."""
    if p >= j:
        return -1
    b = data[p]
    if b == 45 or b == 42 or b == 43:
        return p + 1
    if b == 0xC2:                                           # · (C2 B7)
        return p + 2 if p + 1 < j and data[p + 1] == 0xB7 else -1
    if b == 0xE2:                                           # • ‣ – (E2 80 A2 / A3 / 93) ◦ (E2 97 A6) ▪ (E2 96 AA)
        if p + 2 >= j:
            return -1
        c = data[p + 1]
        e = data[p + 2]
        if (c == 0x80 and (e == 0xA2 or e == 0xA3 or e == 0x93)) or (c == 0x97 and e == 0xA6) or (
                c == 0x96 and e == 0xAA):
            return p + 3
        return -1
    if 48 <= b <= 57:                                       # 1 to 3 digits, then . or )
        k = p
        while k < j and 48 <= data[k] <= 57 and k - p < 4:
            k += 1
        return k + 1 if k - p <= 3 and k < j and (data[k] == 46 or data[k] == 41) else -1
    if _ascii_letter(b):
        return p + 2 if p + 1 < j and (data[p + 1] == 46 or data[p + 1] == 41) else -1
    if b == 40:                                             # ( 1 to 4 word bytes )
        k = p + 1
        while k < j and _word_byte(data[k]) and k - p <= 5:
            k += 1
        n = k - p - 1
        return k + 1 if 1 <= n <= 4 and k < j and data[k] == 41 else -1
    if b == 91:                                             # [ ] [x] [X]
        if p + 2 < j and (data[p + 1] == 32 or data[p + 1] == 120 or data[p + 1] == 88) and data[p + 2] == 93:
            return p + 3
    return -1


@numba.njit(cache=True, nogil=True, boundscheck=False, _nrt=False)
def list_items(data, rs, rt, ts, tt, rows, out_start):
    """For the lines `rows` (raw spans rs..rt, trimmed ts..tt): out_start[t] = -1 where LIST_RE does not match the
    raw line, else where the item's text starts once "^" + _MARKER is cut from its trimmed text (the marker and
    the RE2 whitespace after it; ts when that whitespace was all trailing, as the regex then finds no match)."""
    for t in range(rows.shape[0]):
        i = rows[t]
        j = rt[i]
        p = _skip_re2_space(data, rs[i], j)
        m = _marker_end(data, p, j)
        if m < 0 or m >= j or not _re2_space(data[m]):
            out_start[t] = -1
            continue
        c = m                                   # (the marker starts the trimmed text: p == ts[i])
        while c < tt[i] and _re2_space(data[c]):
            c += 1
        out_start[t] = c if c > m and c < tt[i] else ts[i]
    return 0


@numba.njit(cache=True, nogil=True, boundscheck=False, _nrt=False)
def count_newlines(data, off, out):
    """out[d]: the "\\n" bytes of text data[off[d]:off[d + 1]] (`swar.count_byte`: 64, then eight at a time, ~4x
    faster than numpy's count_nonzero(data == 10) with eight alone); returns their sum."""
    total = 0
    for d in range(off.shape[0] - 1):
        out[d] = count_byte(data, 10, off[d], off[d + 1])
        total += out[d]
    return total


@numba.njit(cache=True, nogil=True, boundscheck=False, _nrt=False)
def count_words(data, starts, stops, out):
    """out[i]: the words of data[starts[i]:stops[i]] as RE2's \\S+ finds them (runs of bytes that are not \\t \\n
    \\f \\r or space: its \\s is ASCII, so a multi-byte character is never one). 64 bytes at a time: a word starts
    where a byte that is not a space follows one (or the span's start), counted from the space bits of the 64
    (`in_ranges64`) without a branch per byte; a span's last bytes too, in a block that reads past its end when the
    buffer has the bytes."""
    for i in range(starts.shape[0]):
        t, z = starts[i], stops[i]
        n = 0
        before = _ONE                   # the byte before the span counts as a space
        while t + 64 <= z:
            space = in_ranges64(data, t, 9, 2, 12, 2) | in_ranges64(data, t, 32, 1, 0, 0)
            n += popcount(~space & ((space << _ONE) | before))
            before = space >> np.uint64(63)
            t += 64
        if t < z and t + 64 <= data.shape[0]:   # the last bytes in one block too; those past the span are spaces
            space = in_ranges64(data, t, 9, 2, 12, 2) | in_ranges64(data, t, 32, 1, 0, 0) | (_ALL << np.uint64(z - t))
            n += popcount(~space & ((space << _ONE) | before))
            t = z
        inside = before == 0
        while t < z:
            space = _re2_space(data[t])
            n += not space and not inside
            inside = not space
            t += 1
        out[i] = n
    return 0


@numba.njit(cache=True, nogil=True, boundscheck=False, _nrt=False)
def continuation_counts(data, starts, stops, out):
    """out[i]: the UTF-8 continuation bytes of data[starts[i]:stops[i]] (its code points: bytes - out[i])."""
    for i in range(starts.shape[0]):
        n = 0
        for t in range(starts[i], stops[i]):
            n += (data[t] & 0xC0) == 0x80
        out[i] = n
    return 0


@numba.njit(cache=True, nogil=True, boundscheck=False)
def gather_spans(data, starts, stops, out_off, out_data):
    """Copy the spans one after another (Arrow string buffers: out_off[i]..out_off[i + 1])."""
    o = 0
    out_off[0] = 0
    for i in range(starts.shape[0]):
        m = stops[i] - starts[i]
        out_data[o:o + m] = data[starts[i]:stops[i]]
        o += m
        out_off[i + 1] = o
    return o


# --------------------------------------------------------------------------------------------- sentences

@numba.njit(inline="always", cache=True)
def _latin_end(data, i, end):       # . ! ? … (E2 80 A6)
    b = data[i]
    if b == 46 or b == 33 or b == 63:
        return 1
    if b == 0xE2 and i + 2 < end and data[i + 1] == 0x80 and data[i + 2] == 0xA6:
        return 3
    return 0


@numba.njit(inline="always", cache=True)
def _latin_closer(data, i, end):    # " ' ) ] ” ’ (E2 80 9D / 99) » (C2 BB)
    b = data[i]
    if b == 34 or b == 39 or b == 41 or b == 93:
        return 1
    if b == 0xE2 and i + 2 < end and data[i + 1] == 0x80 and (data[i + 2] == 0x9D or data[i + 2] == 0x99):
        return 3
    if b == 0xC2 and i + 1 < end and data[i + 1] == 0xBB:
        return 2
    return 0


@numba.njit(inline="always", cache=True)
def _cjk_end(data, i, end):         # 。(E3 80 82) ！(EF BC 81) ？(EF BC 9F)
    b = data[i]
    if i + 2 >= end:
        return 0
    if b == 0xE3 and data[i + 1] == 0x80 and data[i + 2] == 0x82:
        return 3
    if b == 0xEF and data[i + 1] == 0xBC and (data[i + 2] == 0x81 or data[i + 2] == 0x9F):
        return 3
    return 0


@numba.njit(inline="always", cache=True)
def _cjk_closer(data, i, end):      # ” ’ (E2 80 9D / 99) 」 』 (E3 80 8D / 8F) ）(EF BC 89)
    b = data[i]
    if i + 2 >= end:
        return 0
    c = data[i + 1]
    e = data[i + 2]
    if b == 0xE2 and c == 0x80 and (e == 0x9D or e == 0x99):
        return 3
    if b == 0xE3 and c == 0x80 and (e == 0x8D or e == 0x8F):
        return 3
    if b == 0xEF and c == 0xBC and e == 0x89:
        return 3
    return 0


_LATIN_END, _LATIN_CLOSER, _CJK_END, _CJK_CLOSER = 0, 1, 2, 3


@numba.njit(inline="always", cache=True)
def _skip(data, i, end, kind):
    """The end of the run of characters of one kind (the _LATIN_END ... constants) that starts at i."""
    while i < end:
        if kind == _LATIN_END:
            w = _latin_end(data, i, end)
        elif kind == _LATIN_CLOSER:
            w = _latin_closer(data, i, end)
        elif kind == _CJK_END:
            w = _cjk_end(data, i, end)
        else:
            w = _cjk_closer(data, i, end)
        if w == 0:
            break
        i += w
    return i


@numba.njit(inline="always", cache=True)
def _emit(data, a, z, cls, li, k, out_line, out_start, out_stop, out_chars, out_hash):
    """Trim data[a:z] and append it as sentence k unless empty (only counted once the outputs are full); returns
    the new count."""
    a, z, _ = _trim(data, a, z, cls)
    if z <= a:
        return k
    if k >= out_line.shape[0]:
        return k + 1
    h, cont = _span_hash(data, a, z)
    out_line[k] = li
    out_start[k] = a
    out_stop[k] = z
    out_chars[k] = (z - a) - cont
    out_hash[k] = h
    return k + 1


@numba.njit(cache=True, nogil=True, boundscheck=False, _nrt=False)
def split_sentences(data, starts, stops, cls, sentence_bytes, out_line, out_start, out_stop, out_chars, out_hash):
    """The sentences of the texts data[starts[i]:stops[i]], cut where the check's SENTENCE_END_RE matches
    (leftmost, greedy, as RE2 splits: [.!?…]+ closers* then ASCII whitespace or the end; or [。！？]+ closers*
    ASCII whitespace*), trimmed, empty ones dropped. `sentence_bytes`: SENTENCE_BYTES. Returns the number of
    sentences; more than the outputs hold when they were too short (they hold the first ones then)."""
    k = 0
    nb = data.shape[0]
    for li in range(starts.shape[0]):
        e = stops[li]
        piece = starts[li]
        i = piece
        while i < e:
            while i + 64 <= nb:                 # most bytes: no sentence end can start here; 64 at a time (a byte
                m = (in_ranges64(data, i, 33, 1, 46, 1)     # of SENTENCE_BYTES: ! . ? E2 E3 EF)
                     | in_ranges64(data, i, 63, 1, 0xE2, 2) | in_ranges64(data, i, 0xEF, 1, 0, 0))
                if m or i + 64 >= e:
                    i = min(i + np.int64(trailing_zeros(m)), e)
                    break
                i += 64
            while i < e and sentence_bytes[data[i]] == 0:
                i += 1                          # (a loop of its own: ~5% faster than a branch of the main loop)
            if i >= e:
                break
            t = sentence_bytes[data[i]]
            w = _latin_end(data, i, e) if t == 1 else 0
            if w:
                q = _skip(data, i + w, e, _LATIN_END)
                r = _skip(data, q, e, _LATIN_CLOSER)
                if r < e and not _re2_space(data[r]):
                    i = q                       # no shorter run or fewer closers can end at whitespace
                    continue
            else:
                w = _cjk_end(data, i, e)
                if w == 0:
                    i += 1
                    continue
                r = _skip(data, _skip(data, i + w, e, _CJK_END), e, _CJK_CLOSER)
            while r < e and _re2_space(data[r]):
                r += 1
            k = _emit(data, piece, i, cls, li, k, out_line, out_start, out_stop, out_chars, out_hash)
            piece = r
            i = r
        k = _emit(data, piece, e, cls, li, k, out_line, out_start, out_stop, out_chars, out_hash)
    return k


# A hash set per document: a table sized for the largest document, cleared slot by slot after each one.

@numba.njit(inline="always", cache=True)
def _group_end(group, i):
    """The end of the run of values equal to group[i] (`group` non-decreasing: a document's items)."""
    j = i
    while j < group.shape[0] and group[j] == group[i]:
        j += 1
    return j


@numba.njit(cache=True, nogil=True, boundscheck=False)
def _group_table(group):
    """(keys, used, slots): a table for the largest run of equal values of `group` (`_find_or_add`), its size in
    the keys."""
    most = 0
    i = 0
    while i < group.shape[0]:
        j = _group_end(group, i)
        most = max(most, j - i)
        i = j
    size = _table_size(most)
    return np.empty(size, np.uint64), np.zeros(size, np.bool_), np.empty(max(most, 1), np.int64)


@numba.njit(inline="always", cache=True)
def _table_size(k):
    """A power of two >= 16 and >= 2k: an open-addressing table for k keys, at most half full."""
    size = 16
    while size < 2 * k:
        size *= 2
    return size


@numba.njit(inline="always", cache=True)
def _group_at(group, i):
    """(the end of the group that starts at i, the mask of a table for it: its size - 1, used by `_find_or_add`)."""
    j = _group_end(group, i)
    return j, np.uint64(_table_size(j - i) - 1)


@numba.njit(inline="always", cache=True)
def _find_or_add(keys, used, slots, filled, h, mask):
    """(the slot of key h in the table keys/used (mask: its size - 1), h was new): a new key is added and its slot
    noted in slots[filled] for `_clear`."""
    p = np.int64(h & mask)
    while used[p] and keys[p] != h:
        p = np.int64((np.uint64(p) + np.uint64(1)) & mask)
    if used[p]:
        return p, False
    used[p] = True
    keys[p] = h
    slots[filled] = p
    return p, True


@numba.njit(inline="always", cache=True)
def _clear(used, slots, filled):
    for s in range(filled):
        used[slots[s]] = False


@numba.njit(cache=True, nogil=True, boundscheck=False)
def sentence_runs(doc, hashes, chars, min_chars, run_gap, best, at):
    """The longest run of each document (`text_repetition.sentence_runs`, whose numpy twin gives the same) from
    its sentences in order: doc (non-decreasing), content hash and code points of each. A sentence of fewer than
    min_chars code points holds its place but is not counted; a run continues while its sentence comes back
    within run_gap sentences. best[d]: the longest run (>= 2; left alone otherwise), at[d]: the index of its
    first sentence (the first in the text on ties). One document at a time, its sentences in an open-addressing
    table sized for it."""
    n = doc.shape[0]
    keys, used, slots = _group_table(doc)
    last = np.empty(keys.shape[0], np.int64)    # place of the sentence's last occurrence in its document
    run = np.empty(keys.shape[0], np.int64)     # length of its current run
    first = np.empty(keys.shape[0], np.int64)   # first sentence of its current run
    i = 0
    while i < n:
        d = doc[i]
        j, mask = _group_at(doc, i)
        filled = 0
        top = 0
        top_at = -1
        for t in range(i, j):
            if chars[t] < min_chars:
                continue
            p, new = _find_or_add(keys, used, slots, filled, hashes[t], mask)
            filled += new
            if new or t - last[p] > run_gap:
                run[p] = 1
                first[p] = t
            else:
                run[p] += 1
            last[p] = t
            if run[p] > top or (run[p] == top and first[p] < top_at):
                top = run[p]
                top_at = first[p]
        _clear(used, slots, filled)
        if top >= 2:
            best[d] = top
            at[d] = top_at
        i = j
    return 0


@numba.njit(cache=True, nogil=True, boundscheck=False)
def line_repeats(data, start, stop, length, rows, doc, dup_lines, dup_chars):
    """The repeated lines of each document (`text_repetition.line_stats`, whose numpy twin gives the same): of the
    lines `rows` (line i: text data[start[i]:stop[i]], code points length[i]; doc[t]: the document of rows[t],
    non-decreasing), every occurrence of a line after its first in the same document adds 1 to dup_lines[doc]
    and its code points to dup_chars[doc]. One document at a time, its line hashes in an open-addressing table
    sized for it. The document's hashes first, then the table: a hash computed between two probes waited for the
    probe loop's mispredicted exits (~40% more time)."""
    n = rows.shape[0]
    keys, used, slots = _group_table(doc)
    hashes = np.empty(slots.shape[0], np.uint64)
    i = 0
    while i < n:
        d = doc[i]
        j, mask = _group_at(doc, i)
        for t in range(i, j):
            r = rows[t]
            hashes[t - i] = _span_hash(data, start[r], stop[r])[0]
        filled = 0
        for t in range(i, j):
            _, new = _find_or_add(keys, used, slots, filled, hashes[t - i], mask)
            filled += new
            if not new:
                dup_lines[d] += 1
                dup_chars[d] += length[rows[t]]
        _clear(used, slots, filled)
        i = j
    return 0
