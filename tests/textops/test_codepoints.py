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
