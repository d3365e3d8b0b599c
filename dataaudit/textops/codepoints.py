"""Per-code-point tables of a one-character RE2 pattern (a class such as "[\\s\\p{Han}]", or an alternation
of classes), and two row statistics over them: the longest run of code points the pattern does not match, and
the number of code points it matches. The numba kernels (`_codepoint_kernels.py`) read the Arrow string buffers
directly; without numba the same results come from Arrow's RE2 kernels (the reference implementation, tested
equal). Also here: the rows whose bytes hold 0xC3 or U+FFFD (`holds_c3_or_fffd`, numpy twin), where mojibake
can start. And `prose_counts`, the language pre-pass's counts in one pass (classes and marker words outside code
spans), and `prose_text`, that prose itself for some rows, cut (their twins: checks.language_id's RE2 passes). A
table is built once per class by matching
the class against every code point with the same RE2, so both paths agree on every character, including
Unicode script and category properties. The kernels also get the table's ASCII part as ranges and as a table
of byte pairs (`ascii_ranges`, `ascii_pairs`: their eight-bytes-at-a-time path), kept per pattern.
"""
from __future__ import annotations

import functools
import hashlib
import os
import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dataaudit.cache import cache_folder

from .arrow import flatten_lists, string_buffers, to_int64
from .hashing import GOLD, numba_kernels

_KERNELS = "dataaudit.textops._codepoint_kernels"
_SIZE = 1 << 21                 # every value a (possibly malformed) UTF-8 sequence decodes to


@functools.lru_cache(maxsize=1)
def _every() -> tuple[np.ndarray, pa.Array]:
    """Every code point but the surrogates, ascending, and all of them as one string."""
    cps = np.concatenate([np.arange(0xD800), np.arange(0xE000, 0x110000)])
    data = _utf8(cps)
    every = pa.Array.from_buffers(pa.large_string(), 1, [None, pa.py_buffer(np.array([0, len(data)], np.int64)),
                                                         pa.py_buffer(data)])
    return cps, every


@functools.lru_cache(maxsize=8)
def table(pattern: str) -> np.ndarray:
    """uint8 per code point: 1 where RE2 matches the one-character `pattern` (surrogates 0; beyond U+10FFFF as
    U+FFFD). Kept on disk between runs (~0.15 s per table to build; `cache_folder`), rebuilt when unreadable."""
    path = _cache_file(pattern)
    try:
        bits = np.load(path, allow_pickle=False)
        if bits.dtype == np.uint8 and bits.shape == (_SIZE // 8,):
            return np.unpackbits(bits)
    except (OSError, ValueError):
        pass
    out = _build(pattern)
    try:   # a cache file, not an output: a temporary beside it, then a rename, so a reader never sees half
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path.parent, suffix=".tmp", delete=False) as f:
            np.save(f, np.packbits(out), allow_pickle=False)
        os.replace(f.name, path)
    except OSError:
        pass   # a read-only home: build the table each run
    return out


def _cache_file(pattern: str) -> Path:
    # the table is RE2's answer: keyed by the pattern and the pyarrow (RE2) version that gave it
    key = hashlib.sha256(f"{pa.__version__}\0{pattern}".encode()).hexdigest()[:32]
    return cache_folder() / "codepoints" / f"{key}.npy"


def _build(pattern: str) -> np.ndarray:
    cps, every = _every()
    # the string of every code point cut at each match: the k-th cut sits after the first k pieces and k - 1
    # matched characters (one RE2 scan: ~20x faster than a match per character)
    pieces = pc.list_flatten(pc.split_pattern_regex(every, pattern=pattern))
    lengths = to_int64(pc.utf8_length(pieces))
    at = np.cumsum(lengths[:-1] + 1) - 1
    out = np.zeros(_SIZE, np.uint8)
    out[cps[at]] = 1
    out[0x110000:] = out[0xFFFD]
    return out


def _utf8(cps: np.ndarray) -> np.ndarray:
    """UTF-8 bytes of ascending code points (no surrogates), one width group after the other."""
    parts = []
    for lo, hi, width, lead in ((0, 0x80, 1, 0), (0x80, 0x800, 2, 0xC0), (0x800, 0x10000, 3, 0xE0),
                                (0x10000, 0x110000, 4, 0xF0)):
        c = cps[(cps >= lo) & (cps < hi)]
        m = np.empty((len(c), width), np.uint8)
        for j in range(width):                              # byte j carries bits 6*(width-1-j) and up
            bits = (c >> (6 * (width - 1 - j))) & (0x3F if j else 0xFF)
            m[:, j] = bits | (0x80 if j else lead)
        parts.append(m.ravel())
    return np.concatenate(parts)


def _buffers(arr: pa.Array):
    if isinstance(arr, pa.ChunkedArray):
        arr = pa.concat_arrays(arr.chunks) if arr.num_chunks else pa.array([], pa.string())
    return string_buffers(arr)


def ascii_ranges(t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The kernels' view of the marked ASCII bytes (entry 1 among t[:128]): per maximal range [a, b] of them,
    128 - a and 127 - b in all eight bytes of a uint64 (the kernels' eight-bytes-at-a-time ASCII path)."""
    r = np.array(_ranges(t), np.int64).reshape(-1, 2)
    ones = np.uint64(0x0101010101010101)
    return (128 - r[:, 0]).astype(np.uint64) * ones, (128 - r[:, 0] - r[:, 1]).astype(np.uint64) * ones


def ascii_pairs(t: np.ndarray) -> np.ndarray:
    """Marked bytes among two ASCII bytes b0, b1 (entries of t[:128]), at b0 | b1 << 8 (uint8, 32 kB)."""
    out = np.zeros((128, 256), np.uint8)
    a = (t[:128] != 0).astype(np.uint8)
    out[:, :128] = a[:, None] + a[None, :]
    return out.ravel()


def ascii_calls(t: np.ndarray) -> np.ndarray:
    """The marked ASCII bytes (entry 1 among t[:128]) as rows of two ranges, (first, length, first, length) (a
    length of 0: no range): the kernels' 64-bytes-at-a-time path, one vector compare per row."""
    pairs = _ranges(t)
    pairs += [(0, 0)] * (len(pairs) % 2)
    return np.array([x for r in pairs for x in r], np.int64).reshape(-1, 4)


@functools.lru_cache(maxsize=8)
def _kernel_tables(pattern: str, minus: str | None) -> tuple[np.ndarray, ...]:
    """(table of `pattern` less `minus`, `ascii_ranges`, `ascii_pairs`, `ascii_calls`): what the kernels read, once
    per pattern (masking one 2 MB table by another cost ~0.35 ms per call)."""
    t = table(pattern) if minus is None else table(pattern) & ~table(minus)
    return (t, *ascii_ranges(t), ascii_pairs(t), ascii_calls(t))


def longest_run(arr: pa.Array, pattern: str) -> np.ndarray:
    """Per row, the most consecutive code points `pattern` (one character) does not match (int64; null -> 0)."""
    k = numba_kernels(_KERNELS, work=arr.nbytes)
    if k is None:
        pieces, _, counts = flatten_lists(pc.split_pattern_regex(arr, pattern=f"(?:{pattern})+"))
        lengths = to_int64(pc.utf8_length(pieces))
        out = np.zeros(len(counts), np.int64)
        nonempty = counts > 0
        if nonempty.any():
            out[nonempty] = np.maximum.reduceat(lengths, (np.cumsum(counts) - counts)[nonempty])
        return out
    off, data = _buffers(arr)
    out = np.zeros(len(off) - 1, np.int64)
    t, lo, hi, _, calls = _kernel_tables(pattern, None)
    k.longest_run(off, data, t, lo, hi, calls, out)
    return out


def count_matching(arr: pa.Array, pattern: str, minus: str | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Per row, (code points `pattern` matches and `minus` does not, all code points), int64 (null -> 0, 0).
    `minus` matches a subset of what `pattern` matches."""
    k = numba_kernels(_KERNELS, work=arr.nbytes)
    if k is None:
        count = to_int64(pc.count_substring_regex(arr, pattern=pattern))
        if minus is not None:
            count = count - to_int64(pc.count_substring_regex(arr, pattern=minus))  # to_int64 may be a read-only view
        return count, to_int64(pc.utf8_length(arr))
    off, data = _buffers(arr)
    marked = np.zeros(len(off) - 1, np.int64)
    length = np.zeros(len(off) - 1, np.int64)
    k.count_marked(off, data, *_kernel_tables(pattern, minus), marked, length)
    return marked, length


def holds_c3_or_fffd(arr: pa.Array) -> np.ndarray:
    """bool per row: its UTF-8 bytes hold 0xC3 or U+FFFD (EF BF BD)."""
    off, data = _buffers(arr)
    out = np.zeros(len(off) - 1, bool)
    if not data.size:
        return out
    k = numba_kernels(_KERNELS, work=data.size)
    if k is not None:
        k.holds_c3_or_fffd(off, data, out)
        return out
    pos = np.flatnonzero(data == 0xC3)
    ef = np.flatnonzero(data[:-2] == 0xEF)
    ef = ef[(data[ef + 1] == 0xBF) & (data[ef + 2] == 0xBD)]
    for p in (pos, ef):
        if p.size:
            out[np.searchsorted(off, p, side="right") - 1] = True
    return out


WORD_LETTERS = "(?i)[A-Za-z]"       # the letters of a marker word: RE2 folds two more onto them (U+017F, U+212A)


@functools.lru_cache(maxsize=4)
def _prose_tables(classes: tuple[str, ...], words: tuple[str, ...]):
    """What `prose_counts`' kernel reads: (per code point: bit k for classes[k], bit 6 for WORD_LETTERS; per such
    byte, bit k moved to bit 10k; per two ranges of a class's ASCII bytes, (first, length, first, length, 10k);
    the ASCII word letters as two ranges (first, length) and the words' shortest and longest length, and as
    `ascii_ranges`; the non-ASCII ones as cp << 8 | the lower-case letter RE2 folds them onto; each word's key
    (its letters, the first lowest) at key * GOLD >> (64 - log2(size)) of a table holding 1 elsewhere, the size
    doubled until no two words share a slot)."""
    t = np.zeros(_SIZE, np.uint8)
    for k, pattern in enumerate(classes):
        t |= table(pattern) << k
    letters = table(WORD_LETTERS)
    t |= letters << 6
    wlo, whi = ascii_ranges(letters)
    lengths = [len(w) for w in words] or [1, 0]
    wr = np.array(([x for lo, n in _ranges(letters) for x in (lo, n)] + [0, 0] * 2)[:4] + [min(lengths), max(lengths)],
                  np.int64)
    if len(wlo) > 2:
        raise ValueError(f"{WORD_LETTERS} has more than two ranges of ASCII letters")
    calls = []                  # two ranges of a class's ASCII bytes at a time, and where its count goes
    for k, pattern in enumerate(classes):
        pairs = _ranges(table(pattern))
        for a in range(0, len(pairs), 2):
            two = pairs[a:a + 2] + [(0, 0)]
            calls.append([*two[0], *two[1], 10 * k])
    spread = np.array([sum(1 << 10 * k for k in range(6) if v >> k & 1) for v in range(256)], np.uint64)
    fold = []
    for cp in np.flatnonzero(letters[0x80:0x110000]) + 0x80:
        one = pa.array([chr(cp)])
        low = [c for c in "abcdefghijklmnopqrstuvwxyz" if pc.match_substring_regex(one, f"(?i)^{c}$")[0].as_py()]
        fold.append(int(cp) << 8 | ord(low[0]))
    keys = np.array([int.from_bytes(w.lower().encode(), "little") for w in {w.lower() for w in words}], np.uint64)
    bits = 4
    with np.errstate(over="ignore"):                                    # the multiplication wraps, as the kernel's
        while len(set(h := ((keys * GOLD) >> np.uint64(64 - bits)).tolist())) < len(keys):
            bits += 1
    slots = np.ones(1 << bits, np.uint64)
    slots[np.array(h, np.int64)] = keys
    return t, spread, np.array(calls, np.int64).reshape(-1, 5), wr, wlo, whi, np.array(fold, np.int64), slots


def _ranges(t: np.ndarray) -> list[tuple[int, int]]:
    """The maximal ranges of marked ASCII bytes (entry 1 among t[:128]) as (first, length)."""
    marked = np.concatenate([[0], t[:128] != 0, [0]]).astype(np.int8)
    edges = np.diff(marked)
    a, b = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
    return [(int(x), int(y - x)) for x, y in zip(a, b)]


def prose_counts(arr: pa.Array, classes: tuple[str, ...], words: tuple[str, ...]) -> np.ndarray | None:
    """Per row, over its prose (fenced and inline code read as one space, as checks.language_id's RE2 `_CODE`
    replacement gives it): the code points of each of the (at most six) one-character patterns `classes`, then how
    many of its words are among `words` (one to seven ASCII letters each) as that module's `_EN_RE` counts them;
    int64, one column per class and one for the words (null -> 0). One compiled pass; None without numba (or for a
    small input before the kernels are loaded): the caller counts with RE2 (language_id's twin, tested equal)."""
    if len(classes) > 6 or not all(w.isascii() and w.isalpha() and 0 < len(w) < 8 for w in words):
        raise ValueError("prose_counts takes at most six classes and words of one to seven ASCII letters")
    k = numba_kernels(_KERNELS, work=arr.nbytes)
    if k is None:
        return None
    off, data = _buffers(arr)
    out = np.zeros((len(off) - 1, 7), np.int64)
    k.prose_counts(off, data, *_prose_tables(tuple(classes), tuple(words)), out)
    return np.ascontiguousarray(out[:, list(range(len(classes))) + [6]])


def prose_text(arr: pa.Array, rows: np.ndarray, limit: int) -> list[bytes] | None:
    """The UTF-8 bytes of rows `rows`' prose (code spans as one space, as `prose_counts` reads them), each cut to
    its first `limit` code points (null -> b""). One compiled pass; None without numba: the caller's RE2 twin
    (checks.language_id: the regex replacement, then Arrow's utf8_slice_codeunits)."""
    k = numba_kernels(_KERNELS, work=arr.nbytes)
    if k is None:
        return None
    off, data = _buffers(arr)
    rows = np.ascontiguousarray(rows, np.int64)
    out_off = np.zeros(len(rows) + 1, np.int64)
    out = np.empty(int((off[rows + 1] - off[rows]).sum()), np.uint8)
    k.prose_text(off, data, rows, int(limit), out_off, out)
    raw = out.tobytes()
    return [raw[a:b] for a, b in zip(out_off[:-1].tolist(), out_off[1:].tolist())]
