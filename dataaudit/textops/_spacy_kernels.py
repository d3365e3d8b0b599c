"""numba kernels of the pretraining quality rules: spaCy's English tokenizer over whitespace-free chunks (spacy_en.py's
Python emulation is its twin and decides every chunk the kernel hands back), and one-pass splits into chunks
(`split_chunks`), lines (`split_lines`, Python's `str.splitlines`) and words (`line_words`), whose twins are the
regex splits of pyarrow in spacy_en.split_chunks and checks/quality_common.py, and FineWeb's line statistics
(`fineweb_lines`; its twin is the pyarrow path of checks/quality_fineweb.py).

`chunk_rows` tokenizes each chunk as `Tables.split` + `Tables.apply_matcher` do (prefixes and suffixes peeled off
one at a time, then the infixes) and writes the statistics `spacy_en._chunk_row` gives. A chunk is handed back
(status 1) where the kernel does not decide by itself: a substring that may be a special case (its hash is one of
the rules' keys), or a middle that may be a URL and holds an infix. A hash is only ever a reason to hand back or
is confirmed by comparing the text, so a collision costs time, not exactness.

The helpers are inlined (`inline="always"`): a call of a compiled function with array arguments otherwise increfs
and decrefs each array, with atomic operations, on every call (it made the line split 10x slower).

`props` holds per code point the character classes of spaCy's affix regexes and of the statistics (bits P_*,
built by spacy_kernel_tables.py from the same tables the Python emulation compiles).
"""
from __future__ import annotations

import numba
import numpy as np

from .spacy_kernel_tables import (HASH_MUL, P_ALNUM, P_ALPHA, P_DEC, P_INF_LOW, P_INF_UP, P_INFSYM, P_ISALPHA,
                                  P_ISP, P_LITEND, P_PRE1, P_PUNCTCH, P_PUNCTSET, P_SUF1, P_SUF_DOT, P_SUF_UP,
                                  P_TLD)
from .words import multibyte_ws

# the row: spacy_en.ROW
R_TOKENS, R_NONSYM, R_NONSYM_CHARS, R_ALPHA, R_STOP, R_C0, R_DECISIVE, R_OUT, R_FIRST_WORD, R_FIRST_ID, R_LAST_ID, \
    R_HAS_MATCH = range(12)


@numba.njit(inline="always", cache=True, nogil=True, boundscheck=False)
def _hash(cp, a, b):
    h = np.uint64(0)
    for i in range(a, b):
        h = h * HASH_MUL + np.uint64(cp[i] + 1)
    return h


@numba.njit(inline="always", cache=True, nogil=True, boundscheck=False)
def _in_sorted(arr, h):
    j = np.searchsorted(arr, h)
    return j < arr.shape[0] and arr[j] == h


@numba.njit(inline="always", cache=True, nogil=True, boundscheck=False)
def _maybe_rule(cp, a, b, rule_hashes, max_rule):
    return b - a <= max_rule and _in_sorted(rule_hashes, _hash(cp, a, b))


@numba.njit(inline="always", cache=True, nogil=True, boundscheck=False)
def _is09(c):
    return 48 <= c <= 57


@numba.njit(inline="always", cache=True, nogil=True, boundscheck=False)
def _ends_with(cp, a, b, lits, lit_off, k):
    """Does cp[a:b] end with literal k?"""
    s, e = lit_off[k], lit_off[k + 1]
    n = e - s
    if n > b - a:
        return False
    for j in range(n):
        if cp[b - n + j] != lits[s + j]:
            return False
    return True


@numba.njit(inline="always", cache=True, nogil=True, boundscheck=False)
def _prefix_len(cp, a, b, props):
    """The prefix regex's match at the start of cp[a:b] (its first alternative that matches)."""
    c = cp[a]
    if c == 46:                                          # ^\.\.+
        j = a
        while j < b and cp[j] == 46:
            j += 1
        return j - a if j - a >= 2 else 0
    if c == 43:                                          # ^\+(?![0-9])
        return 1 if a + 1 == b or not _is09(cp[a + 1]) else 0
    if c == 85 and b - a >= 3 and cp[a + 1] == 83 and cp[a + 2] == 36:      # ^US\$
        return 3
    if (c == 67 or c == 65) and b - a >= 2 and cp[a + 1] == 36:             # ^C\$, ^A\$
        return 2
    return 1 if props[c] & P_PRE1 else 0


@numba.njit(inline="always", cache=True, nogil=True, boundscheck=False)
def _suffix_len(cp, a, b, props, lits, lit_off, n_plain):
    """The suffix regex's search over cp[a:b] (its lookbehinds see nothing before a): every alternative ends at
    the end, so the leftmost match is the longest suffix any alternative matches. Literals 0..n_plain-1 need no
    lookbehind, the others a digit [0-9] before them."""
    best = 0
    last = cp[b - 1]
    if props[last] & P_SUF1:
        best = 1
    if last == 46:
        j = b
        while j > a and cp[j - 1] == 46:
            j -= 1
        if b - j >= 2 and b - j > best:                 # \.\.+$
            best = b - j
        if best == 0 and b - a >= 2:
            p = props[cp[b - 2]]
            if p & P_SUF_DOT:                            # (?<=C1)\.$
                best = 1
            elif b - a >= 3 and props[cp[b - 3]] & P_SUF_UP and p & P_SUF_UP:     # (?<=C2C2)\.$
                best = 1
            elif b - a >= 3 and cp[b - 3] == 0xB0 and (cp[b - 2] == 70 or cp[b - 2] == 102 or cp[b - 2] == 67
                                                        or cp[b - 2] == 99 or cp[b - 2] == 75 or cp[b - 2] == 107):
                best = 1                                 # (?<=°[FfCcKk])\.$
    if last == 43 and best == 0 and b - a >= 2 and _is09(cp[b - 2]):            # (?<=[0-9])\+$
        best = 1
    if not props[last] & P_LITEND:
        return best
    for k in range(lit_off.shape[0] - 1):
        n = lit_off[k + 1] - lit_off[k]
        if n <= best:
            continue
        if k >= n_plain and (b - a < n + 1 or not _is09(cp[b - n - 1])):
            continue
        if _ends_with(cp, a, b, lits, lit_off, k):
            best = n
    return best


@numba.njit(inline="always", cache=True, nogil=True, boundscheck=False)
def _infix_at(cp, a, b, i, props):
    """The length of the infix regex's match at i in cp[a:b] (lookbehinds see nothing before a), 0: none."""
    c = cp[i]
    if c == 46 and i + 1 < b and cp[i + 1] == 46:      # \.\.+
        j = i
        while j < b and cp[j] == 46:
            j += 1
        return j - i
    if props[c] & P_INFSYM:                             # … and the symbol class
        return 1
    if i == a:
        return 0
    prev = cp[i - 1]
    nxt = cp[i + 1] if i + 1 < b else -1
    if _is09(prev) and (c == 43 or c == 45 or c == 42 or c == 94) and nxt >= 0 and (_is09(nxt) or nxt == 45):
        return 1                                         # (?<=[0-9])[+\-\*^](?=[0-9-])
    if c == 46:
        return 1 if props[prev] & P_INF_LOW and nxt >= 0 and props[nxt] & P_INF_UP else 0
    if c == 44:
        return 1 if props[prev] & P_ALPHA and nxt >= 0 and props[nxt] & P_ALPHA else 0
    if not props[prev] & P_ALNUM:
        return 0
    # (?:-|–|—|--|---|——|~)(?=alpha), alternatives in order
    if c == 45:
        if nxt >= 0 and props[nxt] & P_ALPHA:
            return 1
        if nxt == 45:
            if i + 2 < b and props[cp[i + 2]] & P_ALPHA:
                return 2
            if i + 2 < b and cp[i + 2] == 45 and i + 3 < b and props[cp[i + 3]] & P_ALPHA:
                return 3
        return 0
    if c == 0x2013:
        return 1 if nxt >= 0 and props[nxt] & P_ALPHA else 0
    if c == 0x2014:
        if nxt >= 0 and props[nxt] & P_ALPHA:
            return 1
        if nxt == 0x2014 and i + 2 < b and props[cp[i + 2]] & P_ALPHA:
            return 2
        return 0
    if c == 126 or c == 58 or c == 60 or c == 62 or c == 61 or c == 47:       # ~ and [:<>=/]
        return 1 if nxt >= 0 and props[nxt] & P_ALPHA else 0
    return 0


@numba.njit(inline="always", cache=True, nogil=True, boundscheck=False)
def _maybe_url(cp, a, b, props):
    """False when the URL regex cannot match cp[a:b]: a host needs a "." then a top-level domain of 2+ of its
    letters followed by the end, ":", "/", "?" or "#"; an IPv4 address needs three dots between decimal digits."""
    ip_dots = 0
    for i in range(a, b):
        if cp[i] != 46:
            continue
        if i > a and i + 1 < b and props[cp[i - 1]] & P_DEC and props[cp[i + 1]] & P_DEC:
            ip_dots += 1
            if ip_dots >= 3:
                return True
        j = i + 1
        while j < b and props[cp[j]] & P_TLD:
            j += 1
        if j - i - 1 >= 2 and (j == b or cp[j] == 58 or cp[j] == 47 or cp[j] == 63 or cp[j] == 35):
            return True
    return False


@numba.njit(inline="always", cache=True, nogil=True, boundscheck=False)
def _token_id(cp, a, b, vocab_h, vocab_id, vocab_cp, vocab_off):
    """The id of cp[a:b] among the matcher's tokens (its hash found, then its text compared), -1: none."""
    h = _hash(cp, a, b)
    j = np.searchsorted(vocab_h, h)
    if j == vocab_h.shape[0] or vocab_h[j] != h or vocab_off[j + 1] - vocab_off[j] != b - a:
        return -1
    for q in range(b - a):
        if vocab_cp[vocab_off[j] + q] != cp[a + q]:
            return -1
    return vocab_id[j]


@numba.njit(inline="always", cache=True, nogil=True, boundscheck=False)
def _same_ids(tid, a, b, pat_ids, pat_off, j):
    """Are tid[a:b] pattern j's ids?"""
    if pat_off[j + 1] - pat_off[j] != b - a:
        return False
    for q in range(b - a):
        if pat_ids[pat_off[j] + q] != tid[a + q]:
            return False
    return True


@numba.njit(inline="always", cache=True, nogil=True, boundscheck=False)
def _tokenize(cp, n, props, rule_hashes, max_rule, lits, lit_off, n_plain, max_chunk, ts, te):
    """The tokens of cp[0:n] before the matcher into ts/te (start, end); their number, or -1: hand back."""
    if n > max_chunk:
        ts[0] = 0
        te[0] = n
        return 1
    a, b = 0, n
    npre = 0
    nsuf = 0
    last = -1
    # suffixes go to the end of ts/te backwards (reversed at the end, as spaCy does)
    cap = ts.shape[0]
    while b > a and b - a != last:
        if _maybe_rule(cp, a, b, rule_hashes, max_rule):
            return -1
        last = b - a
        pre = _prefix_len(cp, a, b, props)
        if pre and b - a - pre > 0 and _maybe_rule(cp, a + pre, b, rule_hashes, max_rule):
            return -1
        suf = _suffix_len(cp, a + pre, b, props, lits, lit_off, n_plain) if b > a + pre else 0
        if suf and b - a - suf > 0 and _maybe_rule(cp, a, b - suf, rule_hashes, max_rule):
            return -1
        if pre and suf and pre + suf <= b - a:
            ts[npre] = a
            te[npre] = a + pre
            npre += 1
            nsuf += 1
            ts[cap - nsuf] = b - suf
            te[cap - nsuf] = b
            a += pre
            b -= suf
        elif pre:
            ts[npre] = a
            te[npre] = a + pre
            npre += 1
            a += pre
        elif suf:
            nsuf += 1
            ts[cap - nsuf] = b - suf
            te[cap - nsuf] = b
            b -= suf
    k = npre
    if b > a:
        if _maybe_rule(cp, a, b, rule_hashes, max_rule):
            return -1
        start = a
        i = a
        url_checked = False
        while i < b:
            m = _infix_at(cp, a, b, i, props)
            if m == 0:
                i += 1
                continue
            if not url_checked:
                if _maybe_url(cp, a, b, props):
                    return -1
                url_checked = True
            if i != a:                                   # an infix at the very start is skipped
                if i != start:
                    ts[k] = start
                    te[k] = i
                    k += 1
                ts[k] = i
                te[k] = i + m
                k += 1
                start = i + m
            i += m
        if start < b:
            ts[k] = start
            te[k] = b
            k += 1
    for j in range(nsuf):                                # suffixes, the last peeled first
        ts[k] = ts[cap - nsuf + j]
        te[k] = te[cap - nsuf + j]
        k += 1
    return k


@numba.njit(cache=True, nogil=True, boundscheck=False)
def chunk_rows(data, offsets, props, rule_hashes, max_rule, lits, lit_off, n_plain, vocab_h, vocab_id, vocab_cp,
               vocab_off, pat_h, pre_h, pat_ids, pat_off, piece_off, pieces, longest, stops, stop_off, stop_bits,
               max_chunk, rows, status):
    """For each chunk data[offsets[i]:offsets[i+1]] (UTF-8, no whitespace): rows[i] = spacy_en.ROW, status[i] = 0,
    or status[i] = 1 where the Python emulation must decide it."""
    maxlen = 0
    for i in range(offsets.shape[0] - 1):
        if offsets[i + 1] - offsets[i] > maxlen:
            maxlen = offsets[i + 1] - offsets[i]
    cp = np.empty(maxlen + 1, np.int64)
    ts = np.empty(2 * maxlen + 4, np.int64)
    te = np.empty(2 * maxlen + 4, np.int64)
    tid = np.empty(2 * maxlen + 4, np.int64)
    ts2 = np.empty(2 * maxlen + 4, np.int64)
    te2 = np.empty(2 * maxlen + 4, np.int64)
    covered = np.zeros(2 * maxlen + 4, np.bool_)
    keep_at = np.empty(2 * maxlen + 4, np.int64)
    mcap = (2 * maxlen + 4) * max(longest, 1)
    ma = np.empty(mcap, np.int64)
    mb = np.empty(mcap, np.int64)
    mp = np.empty(mcap, np.int64)
    for r in range(offsets.shape[0] - 1):
        # UTF-8 -> code points
        n = 0
        j = offsets[r]
        end = offsets[r + 1]
        while j < end:
            c = np.int64(data[j])
            if c < 0x80:
                j += 1
            elif c < 0xE0:
                c = ((c & 0x1F) << 6) | (np.int64(data[j + 1]) & 0x3F)
                j += 2
            elif c < 0xF0:
                c = ((c & 0x0F) << 12) | ((np.int64(data[j + 1]) & 0x3F) << 6) | (np.int64(data[j + 2]) & 0x3F)
                j += 3
            else:
                c = ((c & 0x07) << 18) | ((np.int64(data[j + 1]) & 0x3F) << 12) | \
                    ((np.int64(data[j + 2]) & 0x3F) << 6) | (np.int64(data[j + 3]) & 0x3F)
                j += 4
            cp[n] = c
            n += 1
        k = _tokenize(cp, n, props, rule_hashes, max_rule, lits, lit_off, n_plain, max_chunk, ts, te)
        if k < 0:
            status[r] = 1
            continue
        # the special-case matcher: the tokens' ids in its patterns' vocabulary, every (start, end) matching a
        # pattern, filtered as Tables.apply_matcher does, each kept match replaced by its special case's pieces
        for t in range(k):
            tid[t] = _token_id(cp, ts[t], te[t], vocab_h, vocab_id, vocab_cp, vocab_off)
        first_id = tid[0] if k else -1
        last_id = tid[k - 1] if k else -1
        nm = 0
        if k > 1:
            for t in range(k):
                if tid[t] < 0:
                    continue
                h = np.uint64(0)
                for u in range(t, min(k, t + longest)):
                    if tid[u] < 0:
                        break
                    h = h * HASH_MUL + np.uint64(tid[u] + 1)
                    if not _in_sorted(pre_h, h):            # no pattern starts so: no longer one either
                        break
                    j = np.searchsorted(pat_h, h)
                    if j < pat_h.shape[0] and pat_h[j] == h and _same_ids(tid, t, u + 1, pat_ids, pat_off, j):
                        ma[nm] = t
                        mb[nm] = u + 1
                        mp[nm] = j
                        nm += 1
        if nm:
            # longest first, then the earlier start (insertion sort: a chunk has few matches)
            for x in range(1, nm):
                y = x
                while y > 0 and (ma[y] - mb[y] < ma[y - 1] - mb[y - 1] or
                                 (ma[y] - mb[y] == ma[y - 1] - mb[y - 1] and ma[y] < ma[y - 1])):
                    ma[y], ma[y - 1] = ma[y - 1], ma[y]
                    mb[y], mb[y - 1] = mb[y - 1], mb[y]
                    mp[y], mp[y - 1] = mp[y - 1], mp[y]
                    y -= 1
            for t in range(k):
                covered[t] = False
                keep_at[t] = -1
            for x in range(nm):
                if not covered[ma[x]] and not covered[mb[x] - 1]:
                    keep_at[ma[x]] = x
                for t in range(ma[x], mb[x]):
                    covered[t] = True
            # rebuild the tokens into ts2/te2
            k2 = 0
            t = 0
            while t < k:
                x = keep_at[t]
                if x < 0:
                    ts2[k2] = ts[t]
                    te2[k2] = te[t]
                    k2 += 1
                    t += 1
                    continue
                pos = ts[t]
                for q in range(piece_off[mp[x]], piece_off[mp[x] + 1]):
                    ts2[k2] = pos
                    pos += pieces[q]
                    te2[k2] = pos
                    k2 += 1
                t = mb[x]
            for t in range(k2):
                ts[t] = ts2[t]
                te[t] = te2[t]
            k = k2
        # the statistics of spacy_en._token_stats
        nonsym = 0
        nonsym_chars = 0
        alpha = 0
        stop = 0
        c0 = 0
        seen = False
        decisive = False
        out = 0
        first_word = False
        for t in range(k):
            s, e = ts[t], te[t]
            ns = False
            al = False
            allp = True
            for q in range(s, e):
                p = props[cp[q]]
                if not p & P_PUNCTSET:
                    ns = True
                if p & P_ISALPHA:
                    al = True
                if not p & P_ISP:
                    allp = False
            if ns:
                nonsym += 1
                nonsym_chars += e - s
            if al:
                alpha += 1
            for w in range(stop_bits.shape[0]):
                ws, we = stop_off[w], stop_off[w + 1]
                if we - ws != e - s:
                    continue
                same = True
                for q in range(e - s):
                    if stops[ws + q] != cp[s + q]:
                        same = False
                        break
                if same:
                    stop |= stop_bits[w]
            in_chars = e - s == 1 and props[cp[s]] & P_PUNCTCH != 0
            if not in_chars and not allp:
                if seen:
                    c0 += 1
                    seen = False
                if not decisive:
                    first_word = True
                decisive = True
                out = 0
            elif in_chars:
                seen = True
                decisive = True
                out = 1
        rows[r, R_TOKENS] = k
        rows[r, R_NONSYM] = nonsym
        rows[r, R_NONSYM_CHARS] = nonsym_chars
        rows[r, R_ALPHA] = alpha
        rows[r, R_STOP] = stop
        rows[r, R_C0] = c0
        rows[r, R_DECISIVE] = 1 if decisive else 0
        rows[r, R_OUT] = out
        rows[r, R_FIRST_WORD] = 1 if first_word else 0
        rows[r, R_FIRST_ID] = first_id
        rows[r, R_LAST_ID] = last_id
        rows[r, R_HAS_MATCH] = 1 if nm else 0
        status[r] = 0


@numba.njit(cache=True, nogil=True, boundscheck=False)
def split_chunks(off, data, cls, out_data, out_off, parent, gap):
    """The chunks (runs between `str.isspace` characters) of the texts data[off[d]:off[d+1]]: their bytes packed
    into out_data with out_off, the text of each (parent) and what comes before it (gap: 0 nothing or the
    text's leading whitespace, 1 one " ", 2 other whitespace). Returns the number of chunks."""
    k = 0
    o = 0
    out_off[0] = 0
    for d in range(off.shape[0] - 1):
        i = off[d]
        end = off[d + 1]
        in_chunk = False
        started = False
        gap_start = i
        while i < end:
            c = cls[data[i]]
            w = 0
            if c == 1:
                w = 1
            elif c == 2:
                w = multibyte_ws(data, i, end)
            if w:
                if in_chunk:
                    out_off[k] = o
                    in_chunk = False
                    gap_start = i
                i += w
                continue
            if not in_chunk:
                parent[k] = d
                if not started:
                    gap[k] = 0
                elif i - gap_start == 1 and data[gap_start] == 32:
                    gap[k] = 1
                else:
                    gap[k] = 2
                k += 1
                started = True
                in_chunk = True
            out_data[o] = data[i]
            o += 1
            i += 1
        if in_chunk:
            out_off[k] = o
    return k


@numba.njit(cache=True, nogil=True, boundscheck=False)
def count_chunks(off, data, cls):
    """How many chunks split_chunks finds (to size its outputs)."""
    k = 0
    for d in range(off.shape[0] - 1):
        i = off[d]
        end = off[d + 1]
        in_chunk = False
        while i < end:
            c = cls[data[i]]
            w = 0
            if c == 1:
                w = 1
            elif c == 2:
                w = multibyte_ws(data, i, end)
            if w:
                in_chunk = False
                i += w
                continue
            if not in_chunk:
                k += 1
                in_chunk = True
            i += 1
    return k


@numba.njit(inline="always", cache=True, nogil=True, boundscheck=False)
def _line_break(data, i, end):
    """The bytes of the `str.splitlines` line break at i (\\r\\n is one), else 0."""
    b = data[i]
    if b == 10 or b == 11 or b == 12 or b == 28 or b == 29 or b == 30:
        return 1
    if b == 13:
        return 2 if i + 1 < end and data[i + 1] == 10 else 1
    if b == 0xC2:
        return 2 if i + 1 < end and data[i + 1] == 0x85 else 0
    if b == 0xE2:
        return 3 if i + 2 < end and data[i + 1] == 0x80 and (data[i + 2] == 0xA8 or data[i + 2] == 0xA9) else 0
    return 0


@numba.njit(cache=True, nogil=True, boundscheck=False)
def split_lines(off, data, out_data, out_off, parent):
    """`str.splitlines()` of the texts data[off[d]:off[d+1]]: the lines' bytes packed into out_data with out_off,
    the text of each (parent; capacity: count_lines). Returns the number of lines."""
    k = 0
    o = 0
    out_off[0] = 0
    for d in range(off.shape[0] - 1):
        i = off[d]
        end = off[d + 1]
        start = i
        while i < end:
            b = data[i]
            if (b > 30 and b != 0xC2 and b != 0xE2) or (b > 13 and b < 28) or b < 10:
                i += 1                        # no break starts here (tested first: 10x faster than the call alone)
                continue
            w = _line_break(data, i, end)
            if w == 0:
                i += 1
                continue
            for j in range(start, i):
                out_data[o] = data[j]
                o += 1
            parent[k] = d
            k += 1
            out_off[k] = o
            i += w
            start = i
        if start < end:                       # no line after a final break
            for j in range(start, end):
                out_data[o] = data[j]
                o += 1
            parent[k] = d
            k += 1
            out_off[k] = o
    return k


@numba.njit(cache=True, nogil=True, boundscheck=False)
def count_lines(off, data):
    k = 0
    for d in range(off.shape[0] - 1):
        i = off[d]
        end = off[d + 1]
        start = i
        while i < end:
            b = data[i]
            if (b > 30 and b != 0xC2 and b != 0xE2) or (b > 13 and b < 28) or b < 10:
                i += 1                        # no break starts here (tested first: 10x faster than the call alone)
                continue
            w = _line_break(data, i, end)
            if w == 0:
                i += 1
                continue
            k += 1
            i += w
            start = i
        if start < end:
            k += 1
    return k


@numba.njit(cache=True, nogil=True, boundscheck=False)
def line_words(off, data, cls, words, longest):
    """Per text data[off[d]:off[d+1]]: its words (`str.split()`) and the characters of its longest word."""
    for d in range(off.shape[0] - 1):
        i = off[d]
        end = off[d + 1]
        n = 0
        chars = 0
        best = 0
        while i < end:
            c = cls[data[i]]
            w = 0
            if c == 1:
                w = 1
            elif c == 2:
                w = multibyte_ws(data, i, end)
            if w:
                if chars > best:
                    best = chars
                chars = 0
                i += w
                continue
            if chars == 0:
                n += 1
            if data[i] & 0xC0 != 0x80:
                chars += 1
            i += 1
        if chars > best:
            best = chars
        words[d] = n
        longest[d] = best


@numba.njit(cache=True, nogil=True, boundscheck=False)
def _same_bytes(data, a, b, c, d):
    if b - a != d - c:
        return False
    for j in range(b - a):
        if data[a + j] != data[c + j]:
            return False
    return True


@numba.njit(cache=True, nogil=True, boundscheck=False)
def fineweb_lines(off, data, cls, terminal, short_len, stats):
    """FineWeb's line statistics of each text data[off[d]:off[d+1]], its lines split at "\\n" only and a line
    blank when all its characters are `str.isspace`: stats[d] = (non-blank lines, those whose last character is
    in `terminal` (sorted code points), those of at most short_len characters, the characters of the non-blank
    lines equal to an earlier one of the text, "\\n" count, characters)."""
    cap = 16
    ls = np.empty(cap, np.int64)
    le = np.empty(cap, np.int64)
    lh = np.empty(cap, np.uint64)
    lc = np.empty(cap, np.int64)
    for d in range(off.shape[0] - 1):
        end = off[d + 1]
        i = off[d]
        nl = 0
        punct = 0
        short = 0
        newlines = 0
        chars = 0
        start = i
        blank = True
        h = np.uint64(0)
        n = 0
        while True:
            if i == end or data[i] == 10:
                if not blank:
                    if nl == cap:
                        cap *= 2
                        ls2 = np.empty(cap, np.int64)
                        le2 = np.empty(cap, np.int64)
                        lh2 = np.empty(cap, np.uint64)
                        lc2 = np.empty(cap, np.int64)
                        ls2[:nl] = ls[:nl]
                        le2[:nl] = le[:nl]
                        lh2[:nl] = lh[:nl]
                        lc2[:nl] = lc[:nl]
                        ls, le, lh, lc = ls2, le2, lh2, lc2
                    ls[nl] = start
                    le[nl] = i
                    lh[nl] = h
                    lc[nl] = n
                    # the last character's code point
                    j = i - 1
                    while data[j] & 0xC0 == 0x80:
                        j -= 1
                    c = np.int64(data[j])
                    if c >= 0xF0:
                        c = ((c & 0x07) << 18) | ((np.int64(data[j + 1]) & 0x3F) << 12) | \
                            ((np.int64(data[j + 2]) & 0x3F) << 6) | (np.int64(data[j + 3]) & 0x3F)
                    elif c >= 0xE0:
                        c = ((c & 0x0F) << 12) | ((np.int64(data[j + 1]) & 0x3F) << 6) | (np.int64(data[j + 2]) & 0x3F)
                    elif c >= 0xC0:
                        c = ((c & 0x1F) << 6) | (np.int64(data[j + 1]) & 0x3F)
                    t = np.searchsorted(terminal, c)
                    if t < terminal.shape[0] and terminal[t] == c:
                        punct += 1
                    if n <= short_len:
                        short += 1
                    nl += 1
                if i == end:
                    break
                newlines += 1
                i += 1
                start = i
                blank = True
                h = np.uint64(0)
                n = 0
                continue
            b = data[i]
            if b & 0xC0 != 0x80:
                n += 1
                chars += 1
            if blank:
                c = cls[b]
                w = 0
                if c == 1:
                    w = 1
                elif c == 2:
                    w = multibyte_ws(data, i, end)
                if w == 0:
                    blank = False
                else:
                    for q in range(i, i + w):           # a whitespace character's bytes
                        h = h * HASH_MUL + np.uint64(data[q] + 1)
                    i += w
                    continue
            h = h * HASH_MUL + np.uint64(b + 1)
            i += 1
        # characters in lines seen before: equal hashes, then equal bytes with an earlier line
        dup = 0
        if nl > 1:
            order = np.argsort(lh[:nl], kind="mergesort")
            g = 0
            while g < nl:
                e = g + 1
                while e < nl and lh[order[e]] == lh[order[g]]:
                    e += 1
                for x in range(g + 1, e):
                    p = order[x]
                    for y in range(g, x):
                        q = order[y]
                        if _same_bytes(data, ls[q], le[q], ls[p], le[p]):
                            dup += lc[p]
                            break
                g = e
        stats[d, 0] = nl
        stats[d, 1] = punct
        stats[d, 2] = short
        stats[d, 3] = dup
        stats[d, 4] = newlines
        stats[d, 5] = chars
