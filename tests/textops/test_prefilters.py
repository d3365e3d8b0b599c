"""`textops.prefilters.pii_gate` and `secrets_gate` pass every row their check's RE2 prefilter matches (they may pass
more, never fewer), so the gated candidates are the prefilter's own; pii's lines holding a core are the same found by
the kernel and by Arrow; and the secrets check's `_triggered` holds for every text its Python prefilter matches, case folds included, where
trying the prefilter near the triggers finds what `finditer` finds."""
from __future__ import annotations

import random

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from dataaudit.checks.pii import _PREFILTER as PII_PREFILTER
from dataaudit.checks.pii import candidates, find_pii
from dataaudit.checks.secrets import _PREFILTER as SECRETS_PREFILTER
from dataaudit.checks.secrets import _PY_PREFILTER, _prefilter_matches, _triggered, find_secrets
from dataaudit.textops.hashing import numba_kernels
from dataaudit.textops.prefilters import pii_gate, secrets_gate

needs_numba = pytest.mark.skipif(numba_kernels("dataaudit.textops._prefilter_kernels") is None,
                                 reason="numba is not installed")

# Each branch of pii's prefilter at its edges, next to shapes one byte short of it.
PII_ROWS = [
    "mail a.b@c.de now", "x@y", "@x.com", "a@", "+1 5", "+12", "+1x", "+0 55", "+1(2", "415 555", "415.55",
    "(415) 555-2671", "415) 55", "41 555", "020 79", "0201234 56", "01/23", "00 12", "a01-22", "1.2.3.4", "1.2.3",
    "1234.5.6.7", "1.2345.6.7", "1.2.3.", "1.2.3.x4", "10.0.0.1:80", "dead:beef::1", "a::", "a:b", ":ab:",
    "12345678901", "123456789012", "x" * 70 + "+44 20", "y" * 63 + "1.2.3.4", "z" * 64 + "@a", "é@b", "ɑ12:", "",
    None, "Answer: 42", "1:2", "3 : 4",
]


def _re2(arr: pa.Array, pattern: str) -> np.ndarray:
    return np.asarray(pc.fill_null(pc.match_substring_regex(arr, pattern=pattern), False)
                      .to_numpy(zero_copy_only=False), bool)


def _random_rows(seed: int, n: int) -> list[str]:
    rng = random.Random(seed)
    alphabet = list("0123456789" * 4 + ".-+() /:@aAbBfFxX_\n") + ["é", "训"]
    words = ["192.168.1.1", "+44 20", "(415) 555-2671", "020 7946", "dead:beef::1", "a@b.cc", "1234567890123"]
    return ["".join(rng.choice(words) if rng.random() < 0.05 else rng.choice(alphabet)
                    for _ in range(rng.randint(0, 90))) for _ in range(n)]


@needs_numba
def test_the_pii_gate_passes_every_row_the_prefilter_matches():
    arr = pa.array(PII_ROWS, pa.string())
    gate, full = pii_gate(arr), _re2(arr, PII_PREFILTER)
    assert not (full & ~gate).any()
    matched = [0, 4, 5, 8, 9, 10, 11, 12, 14, 15, 16, 19, 21, 25, 26, 27, 31, 32, 33]
    assert np.flatnonzero(full).tolist() == matched
    # more: "x@y" (an "@" between address characters, no domain after it), "a01-22" (the prefilter wants a word
    # boundary before the 0), the "@a" after 64 bytes; the look-alikes one byte short fail both
    assert np.flatnonzero(gate).tolist() == sorted(matched + [1, 18, 34])


@needs_numba
def test_the_pii_gate_on_random_rows_and_the_candidates_it_gives():
    arr = pa.array(_random_rows(7, 20000), pa.string())
    gate, full = pii_gate(arr), _re2(arr, PII_PREFILTER)
    assert not (full & ~gate).any()
    assert full.sum() > 10000 and gate.sum() - full.sum() < 0.2 * full.sum()
    assert candidates(arr, PII_PREFILTER, pii_gate).tolist() == np.flatnonzero(full).tolist()


def test_without_numba_there_is_no_gate_and_the_candidates_are_the_same(monkeypatch):
    arr = pa.array(PII_ROWS, pa.string())
    expected = np.flatnonzero(_re2(arr, PII_PREFILTER)).tolist()
    monkeypatch.setenv("DATAAUDIT_NO_NUMBA", "1")
    assert pii_gate(arr) is None
    assert candidates(arr, PII_PREFILTER, pii_gate).tolist() == expected
    arr = pa.array(SECRET_ROWS, pa.string())
    assert secrets_gate(arr) is None
    expected = np.flatnonzero(_re2(arr, SECRETS_PREFILTER)).tolist()
    assert candidates(arr, SECRETS_PREFILTER, secrets_gate).tolist() == expected


# Each branch of the secrets prefilter at its edges, next to look-alikes: a value one character short, a space in it,
# a bracket that is not "[digits]", the two case folds RE2 makes (K for k, ſ for s), a \v that RE2's \s leaves out.
SECRET_ROWS = [
    "api_key = 'aB3xYz9Qw'", "api_key = 'aB3xY'", "the key to it: patience", "my_password_hash: x9f8e7d6c5",
    "PASSWORD:=hunter2hunter2", "secret => @('abcdefgh", "secret = \"abc defgh\"", "pwd[0] = 'abcdefgh'",
    "pwd [12] :  abcdefgh", "pwd[x] = 'abcdefgh'", "api_key.assign(abcdefgh)", "api_key.Assign(abcdefgh)",
    "contraseña: qwertyuiop", "CONTRASENA=qwertyuiop", "passport = 'abcdefgh'", "api_\u212aey = abcdefgh",
    "db_pa\u017f\u017f = abcdefgh", "api_key =\vabcdefg", "AKIAABCDEFGHIJKLMNOP", "AKIAABCDEFGHIJKLMNO",
    "A3T1ABCDEFGHIJKLMNOP", "ASIA abcdefghijklmnop", "-----BEGIN RSA PRIVATE KEY-----", "BEGIN",
    "PuTTY-User-Key-File-2: ssh-rsa", "PuTTY-User-Key-File-3", "token eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0", "eyj",
    "ghp_" + "a" * 36, "ghx_" + "a" * 36, "XOXB-1234", "xoxq-1234", "https://hooks.slack.com/services/T000",
    "hooks.slacker", "sk_live_" + "a" * 24, "rk_live_abc", "k_live_" + "a" * 24,
    "AWS secret 'AbCdEfGhIjKlMnOpQrStUvWxYz0123456789/+ab'", "aws: 'AbCdEfGhIjKlMnOpQrStUvWxYz0123456789/+a'",
    "x" * 70 + "password = hunter2hunter2", "y" * 64 + "eyJ", "Plain prose: nothing to see here. It's fine (really)!",
    "", None,
]


def _secret_rows(seed: int, n: int) -> list[str]:
    """Prose around 0..8 pieces of every branch, its look-alikes and the bytes the gate reads (some rows over 64
    bytes before the first piece: the kernel's 64-byte steps)."""
    rng = random.Random(seed)
    pieces = ["api_key", "KEY", "\u212aey", "db_pa\u017f\u017f", "Pass", "pwd", "secret", "contraseña", "CONTRASEÑA",
              "aws", "AKIA", "A3TX", "ASIA", "ghp_", "ghs_", "xoxb-1", "XOXP-2", "sk_live_", "rk_live_", "eyJ",
              "BEGIN RSA PRIVATE KEY", "PuTTY-User-Key-File-2", "hooks.slack.com/services/T",
              "HOOKS.SLACK.COM/SERVICES/T",
              "api_key = '", "database_pass=", "private_key: ", "password: ", "passwd(", "=", ":", ":=", "=>", "!",
              "(", ".assign", "'", '"', "`", " ", "\t", "\n", "\x0b", "a", "7", "/", "+", "_", "[0]", "[", "]", "@",
              "abcdefgh", "abcd", "0123456789ABCDEF", "aB3#xyz9Qw", "é", "İ", "ſ", "ñ", "训", "x", "J", "ey", "live_",
              "0123456789abcdefABCDEF0123456789abcdef/+"]
    prose = ["the ", "a ", "Water ", "is ", "wet. ", "\n", "I'm ", "OK ", "x", "1"]
    return ["".join(rng.choice(prose) for _ in range(rng.randint(0, 40)))
            + "".join(rng.choice(pieces) for _ in range(rng.randint(0, 8)))
            + "".join(rng.choice(prose) for _ in range(rng.randint(0, 20))) for _ in range(n)]


@needs_numba
def test_the_secrets_gate_passes_every_row_the_prefilter_matches():
    arr = pa.array(SECRET_ROWS, pa.string())
    gate, full = secrets_gate(arr), _re2(arr, SECRETS_PREFILTER)
    matched = [0, 3, 4, 5, 7, 8, 10, 12, 13, 15, 16, 17, 18, 20, 22, 24, 26, 28, 30, 32, 34, 37, 39]
    assert np.flatnonzero(full).tolist() == matched
    # more: "pass" in "passport" (the gate reads "key", "pass", "pwd", "secret" and "contrase" in the word before an
    # assignment, not the whole keywords), a hooks.slack without the rest, an rk_live_ without its 24 characters,
    # an eyJ without a token after it
    assert np.flatnonzero(gate).tolist() == sorted(matched + [14, 33, 35, 40])


@needs_numba
def test_the_secrets_gate_on_random_rows_and_the_candidates_it_gives():
    arr = pa.array(_secret_rows(3, 30000), pa.string())
    gate, full = secrets_gate(arr), _re2(arr, SECRETS_PREFILTER)
    assert not (full & ~gate).any()
    assert 5000 < full.sum() < 20000 and gate.sum() < 1.7 * full.sum()
    assert candidates(arr, SECRETS_PREFILTER, secrets_gate).tolist() == np.flatnonzero(full).tolist()


def test_secret_triggers_hold_for_every_prefilter_match_case_folds_included():
    rng = random.Random(11)
    pieces = ["key", "KEY", "\u212aey", "pa\u017f\u017f", "Pass", "pwd", "secret", "contraseña", "aws", "AKIA",
              "ghp_", "xoxb-1", "sk_live_", "eyJ", "BEGIN RSA PRIVATE KEY", "hooks.slack.com/servıces/T",
              "api_key = '", "password: ", "=", ":", "'", '"', " ", "a", "Z", "7", "/", "+", "x", "_"]
    rows = ["".join(rng.choice(pieces) for _ in range(rng.randint(1, 30))) for _ in range(20000)]
    rows += ["api_\u212aey = 'aB3#xyz9Qw'", "pa\u017f\u017fword: hunter2hunter2", "HOOKS.SLACK.COM/SERVİCES/T"]
    matched = [r for r in rows if _PY_PREFILTER.search(r)]
    assert len(matched) > 5000 and all(_triggered(r) for r in matched)
    assert all(_PY_PREFILTER.search(r) for r in rows[-3:])          # the folds are real matches
    assert not _triggered("Plain prose about the weather, nothing else.")


def test_secret_prefilter_matches_tried_near_triggers_are_finditer_s():
    # every branch, keywords after their longest lead ("database_", "PuTTY-User-"), matches that cross lines, folds
    rng = random.Random(5)
    pieces = ["key", "KEY", "\u212aey", "Pass", "pwd", "secret", "contraseña", "AWS", "AKIA", "A3TX", "ghp_", "xoxb-1",
              "sk_live_", "eyJ", "BEGIN RSA PRIVATE KEY", "PuTTY-User-Key-File-2", "hooks.slack.com/services/T",
              "api_key = '", "database_pass=", "private_key: ", "password: ", "passwd(", "=", ":", ":=", "=>",
              ".assign", "'", '"', "`", " ", "\n", "a", "7", "/", "_", "[0]", "@", "(", "abcdefgh", "0123456789ABCDEF",
              "aB3#xyz9Qw", "é", "İ", "ſ"]
    rows = ["".join(rng.choice(pieces) for _ in range(rng.randint(1, 40))) for _ in range(6000)]
    spans = [[m.span() for m in _PY_PREFILTER.finditer(r)] for r in rows]
    assert sum(map(bool, spans)) > 3000
    assert [[m.span() for m in _prefilter_matches(r)] for r in rows] == spans
    assert [m.span() for m in _prefilter_matches("x database_pass = 'aB3#xyz9Qw'")] == [(2, 27)]   # (the prefilter reads 8 characters of the value)


def test_find_skips_what_a_text_cannot_hold():
    assert find_secrets("nothing to see here at all") == []
    assert [f.kind for f in find_pii("no digits, no at sign, no colon")] == []
    assert [f.kind for f in find_pii("mail j.doe@gmail.com, call (415) 555-2671, host 2a00:1450:4001:80b::200e")] \
        == ["email", "phone", "ip"]


def test_core_lines_the_kernel_and_arrow_find_the_same_lines(monkeypatch):
    from dataaudit.checks.pii import _CORES, _NEEDS, core_lines

    rows = _random_rows(3, 3000) + ["", "\n", "a\n\nb@c.de\n", "é\n训 415-555-2671\r\na:b:c\n", "1\n2\n3"]
    rows = [r.replace("_", "\n") for r in rows]           # many lines, empty ones too
    arr = pa.array(rows, pa.string())
    fast = core_lines(arr, _CORES, _NEEDS) if numba_kernels("dataaudit.textops._prefilter_kernels") else None
    monkeypatch.setenv("DATAAUDIT_NO_NUMBA", "1")
    slow = core_lines(arr, _CORES, _NEEDS)
    every = core_lines(arr, _CORES)                         # no needs: every line read
    assert slow == every and sum(len(s) for d in slow for s in d.values()) > 1000
    assert slow[-3] == {0: [(3, 9)]} and slow[-2] == {2: [(2, 17)], 4: [(18, 23)]}   # code points; "\r" in its line
    if fast is not None:
        assert fast == slow
