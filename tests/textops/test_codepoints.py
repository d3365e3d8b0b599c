"""Code-point tables and the two row statistics over them (dataaudit/textops/codepoints.py): the numba kernels
equal their Arrow RE2 twins on random Unicode and real text, and the tables equal RE2 on every code point."""
from __future__ import annotations

import random

import numpy as np
import pyarrow as pa
import pytest

from dataaudit.checks.text import _BOX_RE, _BREAK, _NON_TEXT_RE
from dataaudit.textops import codepoints
from dataaudit.textops.hashing import numba_kernels
from tests.paths import needs_shared

BREAK = "[" + _BREAK + "]"
needs_numba = pytest.mark.skipif(numba_kernels(codepoints._KERNELS) is None, reason="numba is not installed")


def _both(monkeypatch, fn, *args):
    fast = fn(*args)
    monkeypatch.setenv("DATAAUDIT_NO_NUMBA", "1")
    slow = fn(*args)
    monkeypatch.delenv("DATAAUDIT_NO_NUMBA")
    return fast, slow


def _random_texts(n: int, seed: int) -> list[str | None]:
    rng = random.Random(seed)
    alphabet = (list("ab Z9.\t\n\x0b\x0c\r\x1c") + ["\u00a0", "\u1680", "\u2009", "\u3000", "\u200b", "\u0085",
                "é", "中", "文", "ア", "한", "ไ", "€", "😀", "\u2500", "\ue000", "\U0010fffd", "\u0378", "\x7f",
                "\u0301", "—", "ー", "\uff21"])
    out: list[str | None] = [None, ""]
    for _ in range(n):
        out.append("".join(rng.choice(alphabet) for _ in range(rng.randint(0, 60))))
    return out


@needs_numba
def test_kernels_equal_twins_on_random_unicode(monkeypatch):
    arr = pa.array(_random_texts(400, 7))
    fast, slow = _both(monkeypatch, codepoints.longest_run, arr, BREAK)
    np.testing.assert_array_equal(fast, slow)
    fast, slow = _both(monkeypatch, codepoints.count_matching, arr, _NON_TEXT_RE, _BOX_RE)
    np.testing.assert_array_equal(fast[0], slow[0])
    np.testing.assert_array_equal(fast[1], slow[1])
    # a sliced array reads the right rows
    runs = codepoints.longest_run(arr, BREAK)
    np.testing.assert_array_equal(codepoints.longest_run(arr.slice(5, 50), BREAK), runs[5:55])


def test_exact_values():
    arr = pa.array(["ab  cde", None, "", "中文abc中", "x" * 7 + "\u3000" + "y" * 3, "😀😀a"])
    assert codepoints.longest_run(arr, BREAK).tolist() == [3, 0, 0, 3, 7, 3]
    count, length = codepoints.count_matching(arr, _NON_TEXT_RE, _BOX_RE)
    assert count.tolist() == [0, 0, 0, 0, 0, 2] and length.tolist() == [7, 0, 0, 6, 11, 3]


def test_table_is_re2_on_every_code_point():
    import pyarrow.compute as pc
    cps = [0x20, 0x41, 0x85, 0xA0, 0x1680, 0x200B, 0x3000, 0x30FC, 0x4E00, 0xAC00, 0x0E01, 0xFF21, 0x1F600,
           0xE000, 0x10FFFD, 0x0378, 0x2500, 0x259F, 0x25A0]
    chars = pa.array([chr(c) for c in cps])
    for pattern in (BREAK, _NON_TEXT_RE):
        expected = pc.match_substring_regex(chars, pattern=pattern).to_pylist()
        assert codepoints.table(pattern)[cps].astype(bool).tolist() == expected


@needs_numba
@needs_shared
def test_kernels_equal_twins_on_real_text(shared_data, monkeypatch):
    import json
    glaive = json.loads((shared_data / "chat" / "glaive_toolcall_zh_demo.json").read_text(encoding="utf-8"))
    raw = (shared_data / "corpora" / "tinyshakespeare.txt").read_text(encoding="utf-8")
    texts = [t["value"] for r in glaive for t in r["conversations"]] + [raw[i:i + 3000] for i in range(0, 300000, 3000)]
    arr = pa.array(texts)
    fast, slow = _both(monkeypatch, codepoints.longest_run, arr, BREAK)
    np.testing.assert_array_equal(fast, slow)
    fast, slow = _both(monkeypatch, codepoints.count_matching, arr, _NON_TEXT_RE, _BOX_RE)
    np.testing.assert_array_equal(np.stack(fast), np.stack(slow))


def test_tables_are_kept_on_disk_and_rebuilt_when_unreadable(tmp_path, monkeypatch):
    from dataaudit.textops import codepoints

    monkeypatch.setenv("DATAAUDIT_CACHE_DIR", str(tmp_path))
    pattern = r"[\p{Greek}]"
    codepoints.table.cache_clear()
    built = codepoints.table(pattern)
    files = list((tmp_path / "codepoints").glob("*.npy"))
    assert len(files) == 1 and files[0].stat().st_size < 300_000        # bits, not bytes
    assert int(built.sum()) == int(codepoints._build(pattern).sum()) and built[ord("α")] == 1 and built[ord("a")] == 0
    codepoints.table.cache_clear()
    assert np.array_equal(codepoints.table(pattern), built)             # read back from the file
    files[0].write_bytes(b"not an npy file")
    codepoints.table.cache_clear()
    assert np.array_equal(codepoints.table(pattern), built)             # rebuilt, and written again
    assert np.array_equal(np.unpackbits(np.load(files[0])), built)
    codepoints.table.cache_clear()
    monkeypatch.setenv("DATAAUDIT_CACHE_DIR", str(tmp_path / "file-not-folder"))
    (tmp_path / "file-not-folder").write_text("x")
    assert np.array_equal(codepoints.table(pattern), built)             # an unwritable cache: built each time
    codepoints.table.cache_clear()


def test_large_string_counts_on_both_paths(monkeypatch):
    # large_string (the Hugging Face datasets layout) gives int64 counts zero-copy: a read-only view on the Arrow path
    arr = pa.array(["hello ☃☃☃ world", None, "ab"], pa.large_string())
    fast, slow = _both(monkeypatch, codepoints.count_matching, arr, r"[\p{So}\s]", r"\s")
    for counts, lengths in (fast, slow):
        assert counts.tolist() == [3, 0, 0] and lengths.tolist() == [15, 0, 2]


# ---- the eight-bytes-at-a-time ASCII path of the kernels, against the byte-by-byte walk they replaced

def _walk(row: bytes, t: np.ndarray) -> tuple[int, int, int]:
    """(longest run of entry 0, code points of entry 1, code points) of the UTF-8 bytes `row`, one code point at
    a time as the kernels' `_decode` reads them (a malformed or cut byte is one U+FFFD)."""
    i, run, best, marked, n = 0, 0, 0, 0, 0
    while i < len(row):
        b, left = row[i], len(row) - i
        if b < 0x80:
            cp, w = b, 1
        elif b >= 0xF0 and left > 3:
            cp, w = (b & 7) << 18 | (row[i + 1] & 63) << 12 | (row[i + 2] & 63) << 6 | row[i + 3] & 63, 4
        elif 0xE0 <= b < 0xF0 and left > 2:
            cp, w = (b & 15) << 12 | (row[i + 1] & 63) << 6 | row[i + 2] & 63, 3
        elif 0xC0 <= b < 0xE0 and left > 1:
            cp, w = (b & 31) << 6 | row[i + 1] & 63, 2
        else:
            cp, w = 0xFFFD, 1
        i += w
        n += 1
        if t[cp]:
            marked += 1
            best, run = max(best, run), 0
        else:
            run += 1
    return max(best, run), marked, n


def _raw_array(rows: list[bytes | None]) -> pa.Array:
    """A string array over exactly these bytes (malformed UTF-8 too; the last row ends the data buffer)."""
    data = b"".join(r or b"" for r in rows)
    off = np.concatenate([[0], np.cumsum([len(r or b"") for r in rows])]).astype(np.int32)
    valid = pa.array([r is not None for r in rows]).buffers()[1]
    return pa.Array.from_buffers(pa.string(), len(rows), [valid, pa.py_buffer(off), pa.py_buffer(data)])


_MARKS = " #Q\x00_1\x7f\x0b\n"


def _chunk_rows(seed: int) -> list[bytes | None]:
    rng = random.Random(seed)
    rows: list[bytes | None] = [None, b"", b"a", b"abcdefg", b"abcdefgh", b"abcdefghi"]
    # one or two run ends at every position of rows up to three chunks long: runs that end, start and cross
    # chunk boundaries at every alignment, rows ending mid-chunk and on a chunk boundary
    for n in range(25):
        for p in range(n):
            for q in range(p, n, 3):
                row = ["b"] * n
                row[p], row[q] = _MARKS[(p + n) % len(_MARKS)], _MARKS[q % len(_MARKS)]
                rows.append("".join(row).encode())
    # long all-ASCII rows, every ASCII byte
    rows += [bytes(rng.choice(range(128)) for _ in range(rng.randint(9, 200))) for _ in range(300)]
    rows += [bytes(rng.choice(b"abc  \n") for _ in range(rng.randint(9, 200))) for _ in range(100)]
    # chunks that mix ASCII with 2-4 byte characters at every offset, and malformed or cut sequences
    wide = ["é", "中", "😀", "\u3000", "\u00a0", "\u0085", "\u2500", "\x9f"]
    for _ in range(400):
        row = b"".join(rng.choice(_MARKS).encode() if rng.random() < 0.2 else
                       rng.choice(wide).encode() if rng.random() < 0.1 else b"x"
                       for _ in range(rng.randint(0, 60)))
        if rng.random() < 0.2:
            k = rng.randint(0, len(row))
            row = row[:k] + rng.choice([b"\xe4\xb8", b"\xf0", b"\x80\x80", b"\xc3", b"\xff"]) + row[k:]
        rows.append(row)
    # long rows whose 64-byte blocks are all ASCII or not at every offset: ASCII stretches of every length between
    # wide or cut characters (the 64-byte path, the eight-byte path and the walk take turns within a row)
    for _ in range(300):
        row = b""
        while len(row) < rng.randint(64, 400):
            row += bytes(rng.choice(_MARKS.encode() + b"xxxxyz") for _ in range(rng.choice([1, 7, 8, 9, 63, 64, 65, 130])))
            row += rng.choice(wide).encode() if rng.random() < 0.8 else rng.choice([b"\xe4\xb8", b"\xff"])
        rows.append(row)
    rows += [b"", None, b"z" * 8 * 5, b"y" * 43, b"w" * 64 * 3]   # the buffer ends on long ASCII rows
    return rows


# the checks' tables, and tables marking unusual ASCII bytes: a few ranges (the add-and-mask path), many ranges
# (the table-lookup paths), none (no ASCII byte marked) and a range from 0
_PATTERNS = [BREAK, "[#0-3Q\\x7f]", "[aceg#_\\x00\\x7f\\x0b]", "[\\p{Han}]", "[\\x00-\\x20]", "[^a-z]"]


@needs_numba
@pytest.mark.parametrize("pattern", _PATTERNS)
def test_kernels_equal_the_byte_walk(pattern):
    rows = _chunk_rows(3)
    t = codepoints.table(pattern)
    expected = np.array([_walk(r or b"", t) for r in rows])
    for start in (0, 1, 5):                 # the same rows at other byte alignments
        arr = _raw_array(rows[start:])
        np.testing.assert_array_equal(codepoints.longest_run(arr, pattern), expected[start:, 0])
        marked, length = codepoints.count_matching(arr, pattern)
        np.testing.assert_array_equal(marked, expected[start:, 1])
        np.testing.assert_array_equal(length, expected[start:, 2])


@needs_numba
def test_count_with_minus_equals_the_byte_walk():
    rows = _chunk_rows(4)
    t = codepoints.table(_NON_TEXT_RE) & ~codepoints.table(_BOX_RE)
    expected = np.array([_walk(r or b"", t) for r in rows])
    marked, length = codepoints.count_matching(_raw_array(rows), _NON_TEXT_RE, _BOX_RE)
    np.testing.assert_array_equal(marked, expected[:, 1])
    np.testing.assert_array_equal(length, expected[:, 2])


def test_ascii_calls():
    t = np.zeros(1 << 21, np.uint8)
    t[[0, 1, 2, 35, 100, 101, 127, 200]] = 1
    assert codepoints.ascii_calls(t).tolist() == [[0, 3, 35, 1], [100, 2, 127, 1]]
    t[127] = 0
    assert codepoints.ascii_calls(t).tolist() == [[0, 3, 35, 1], [100, 2, 0, 0]]
    assert codepoints.ascii_calls(np.zeros(1 << 21, np.uint8)).shape == (0, 4)


def test_ascii_ranges():
    t = np.zeros(1 << 21, np.uint8)
    t[[0, 1, 2, 35, 100, 101, 127, 200]] = 1
    lo, hi = codepoints.ascii_ranges(t)
    ones = 0x0101010101010101
    assert lo.tolist() == [128 * ones, 93 * ones, 28 * ones, 1 * ones]
    assert hi.tolist() == [125 * ones, 92 * ones, 26 * ones, 0]
    pairs = codepoints.ascii_pairs(t)
    assert pairs[0 | 1 << 8] == 2 and pairs[35 | 3 << 8] == 1 and pairs[3 | 3 << 8] == 0


# ---- the rows where mojibake can start (checks.text: mojibake runs its regex on those rows only)

def test_holds_c3_or_fffd_exact_rows():
    rows = ["plain", None, "naïve", "训练，好", "bad \ufffd", "x" * 70 + "é", "x" * 70 + "\ufffd" + "y" * 64, "",
            "x" * 64 + "中" * 30]
    assert np.flatnonzero(codepoints.holds_c3_or_fffd(pa.array(rows))).tolist() == [2, 4, 5, 6]


@needs_numba
def test_holds_c3_or_fffd_kernel_equals_twin_on_random_bytes(monkeypatch):
    """Rows of random lengths (across the kernel's 64-byte blocks) sprinkled with the bytes C3, EF, BF, BD: the
    kernel and the numpy twin mark the same rows, on whole and sliced arrays."""
    rng = np.random.default_rng(0)
    sprinkle = np.array([0xC3, 0xEF, 0xBF, 0xBD, 0x0A, 0xE4, 0x20], np.uint8)
    marked = 0
    for _ in range(200):
        n = int(rng.integers(1, 40))
        lens = rng.integers(0, 200, n)
        size = int(lens.sum())
        data = np.where(rng.random(size) < 0.02, rng.choice(sprinkle, size), 0x61).astype(np.uint8)
        off = np.zeros(n + 1, np.int32)
        np.cumsum(lens, out=off[1:])
        arr = pa.StringArray.from_buffers(n, pa.py_buffer(off), pa.py_buffer(data.tobytes()))
        for a in (arr, arr.slice(n // 3)):
            fast, slow = _both(monkeypatch, codepoints.holds_c3_or_fffd, a)
            np.testing.assert_array_equal(fast, slow)
            marked += int(fast.sum())
    assert marked > 500          # the inputs do hold both kinds of row
