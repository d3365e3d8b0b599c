"""Tests for the `pii` and `secrets` checks (dataaudit/checks/pii.py, secrets.py) and the report's masking of what
they find (register(masks=...), dataaudit/audit/batch.py `_snippet`).

Exact flags, values and masked details per kind; look-alikes that must not be flagged (dates, versions, ISBNs,
UUIDs, git SHAs, ordinary numbers, documentation addresses and IP ranges, placeholder passwords); and, end to end,
a planted AWS key, private key, email and card number never printed by `dataaudit audit` (report.json, report.html,
flags.parquet, the console). Recall and flag rates on real data: benchmarks/pii_secrets_recall.py.
"""
from __future__ import annotations

import json
import random
import string

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

import dataaudit.checks  # noqa: F401  (registers every check)
from dataaudit.audit.batch import _snippet
from dataaudit.checks.base import REGISTRY
from dataaudit.checks.pii import find_pii, luhn
from dataaudit.extras import available

needs_ds = pytest.mark.skipif(not available("detect_secrets"), reason="detect-secrets is not installed")


def run(name: str, rows: list[str]):
    spec = REGISTRY[name]
    out = spec.fn(pa.array(rows, pa.string()), **spec.params)
    assert out.flagged.dtype == np.bool_ and out.value.dtype == np.float64 and len(out.flagged) == len(rows)
    return out


def details(name: str, rows: list[str]) -> list:
    out = run(name, rows)
    return [(float(out.value[i]), out.detail[i]) if out.flagged[i] else None for i in range(len(rows))]


# ---------------------------------------------------------------------------------------------------- pii

PII_POSITIVES = [
    ("Write to john.doe@gmail.com today", "email j***@g***.com"),
    ("mail MARIA_K@Uni-Heidelberg.DE", "email M***@U***.DE"),
    ("Call +1 415 555 2671 now", "phone +* *** *** **71"),
    ("Call (415) 555-2671.", "phone (***) ***-**71"),
    ("or 415.555.2671", "phone ***.***.**71"),
    ("E.164: +14155552671", "phone +*********71"),
    ("London +44 20 7946 0958", "phone +** ** **** **58"),
    ("ring 020 7946 0958 today", "phone *** **** **58"),
    ("Paris 01 23 45 67 89", "phone ** ** ** ** 89"),
    ("Berlin 030 12345678", "phone *** ******78"),
    ("login from 81.2.69.160 at noon", "IP address 81.*.*.*"),
    ("peer 2a00:1450:4001:80b::200e ok", "IP address 2a00:****"),
    ("card 4111 1111 1111 1111 exp 04/27", "credit card (Visa) **** **** **** 1111"),
    ("card 5500-0000-0000-0004", "credit card (Mastercard) **** **** **** 0004"),
    ("amex 3782 822463 10005", "credit card (American Express) **** **** **** 0005"),
]

PII_NEGATIVES = [
    "dates 2024-01-15, 15.01.2024, 01/15/2024, 2024/01/15 10:30:45",
    "version 1.2.3.4 and v2.10.3.1 and 2.7.3.8 Fixed a bug; section 8.2.4.44",
    "ISBN 978-3-16-148410-0 and ISBN 0-306-40615-2, ISBN-13: 9783161484100",
    "uuid 123e4567-e89b-12d3-a456-426614174000",
    "commit 3f786850e387550fdab836ed7e6dc881de23001b",
    "ordinary numbers 1234567890, 1,234,567, 3.14159265358979, +3.14159265, $1,299.99, 1e10",
    "the card 4111 1111 1111 1112 fails its checksum; 1234567890123456 has no issuer",
    "docs: info@example.com, admin@mail.example.org, root@host.test, alice@email.com",
    "an address the regular expression matches: `John.Doe-123%+@example-domain.com`",   # a real Alpaca reply
    "private 192.168.1.1, 10.0.0.1, 172.16.5.4, loopback 127.0.0.1, 0.0.0.0, doc 192.0.2.1 198.51.100.7 203.0.113.9",
    "multicast 224.0.0.1, broadcast 255.255.255.255, ::1, fe80::1, 2001:db8::1, time 12:30:45",
    "a @decorator, x@self.weight, user@localhost, C++ std::vector<int>::iterator",
    "+1 more, 555-1234, 800 pages, room 101 202 3030, tel. ext 42",
    "Now is the winter of our discontent\nMade glorious summer by this sun of York;",
]


@pytest.mark.parametrize("text,detail", PII_POSITIVES)
def test_pii_finds_each_kind_with_a_masked_detail(text, detail):
    (got,) = details("pii", [text])
    assert got == (1.0, detail)
    found = find_pii(text)
    start, end = REGISTRY["pii"].locate(text)
    assert (start, end) == (found[0].start, found[0].end)
    value = text[start:end]
    assert value not in detail and any(c.isdigit() or c == "@" for c in value)


def test_pii_counts_every_value_and_names_the_others():
    out = details("pii", ["mail a.b@gmail.com or c@yahoo.fr, call +1 415 555 2671, server 81.2.69.160"])
    assert out == [(4.0, "email a***@g***.com (+1 email, 1 phone, 1 ip)")]


@pytest.mark.parametrize("text", PII_NEGATIVES)
def test_pii_leaves_look_alikes_alone(text):
    assert details("pii", [text]) == [None], find_pii(text)


def test_pii_null_and_empty():
    out = run("pii", [None, "", "plain"])
    assert not out.flagged.any() and (out.value == 0).all()


def test_pii_reads_each_candidate_for_the_kinds_whose_core_it_holds_only():
    """The vectorized per-kind pass (the kinds' cores over the candidates) changes nothing: every positive, every
    look-alike and texts holding several kinds give the findings a scan of all five kinds gives."""
    from dataaudit.checks.pii import _CORES, _NEEDS, _PREFILTER, found_values

    rows = [t for t, _ in PII_POSITIVES] + PII_NEGATIVES + [
        "Janet has 16 ducks: 16 - 3 - 4 = 9 eggs, 9 * 2 = $18 <<9*2=18>> 18 and 415-555-2671 once",
        "write j.doe@gmail.com or card 4111 1111 1111 1111 from 81.2.69.160 and 2a00:1450:4001:80b::200e",
        "card 4111-1111-1111-1111 is also 16 digits a phone pattern could read", "", None]
    # lines: the text before a line is still read (an ISBN label), a line's end reads as the "\n" after it would
    rows += ["ISBN:\n020 7946 0958\n", "first\n(415) 555-2671\nfrom 81.2.69.160\n\nj.doe@gmail.com\n4111 1111 1111 1111",
             "415-555-2671\n.5 and 2a00:1450:4001:80b::200e\n:1", "\n\n+44 20 7946 0958\n"]
    arr = pa.array(rows, pa.string())
    every = found_values(arr, _PREFILTER, find_pii)
    gated = found_values(arr, _PREFILTER, find_pii, _CORES)
    assert gated.value.tolist() == every.value.tolist() and list(gated.detail) == list(every.detail)
    lines = found_values(arr, _PREFILTER, find_pii, _CORES, needs=_NEEDS)
    assert lines.value.tolist() == every.value.tolist() and list(lines.detail) == list(every.detail)
    assert gated.value.tolist()[-9:-6] == [1.0, 4.0, 1.0] and gated.value.tolist()[-4:] == [0.0, 4.0, 2.0, 1.0]
    assert find_pii("Call (415) 555-2671.", kinds=[0, 1, 3, 4]) == []   # phone (2) not asked for
    # the check gives each flagged text's span, the one `locate` finds reading the whole text again
    from dataaudit.checks.pii import locate_pii, pii

    out = pii(arr)
    assert out.span is not None and out.flagged.sum() > 20
    assert [out.span[i] for i in np.flatnonzero(out.flagged)] == [locate_pii(rows[i]) for i in np.flatnonzero(out.flagged)]
    assert out.span[len(rows) - 3] == (6, 20) and all(out.span[i] is None for i in np.flatnonzero(~out.flagged))


def _pii_look_alikes(n: int, seed: int) -> list[str]:
    """Texts made of values, their pieces and every boundary character (Unicode letters and digits, which Python's
    \\w holds and RE2's does not, among them)."""
    rng = random.Random(seed)
    tokens = ["4111 1111 1111 1111", "4111-1111-1111-1111", "4111111111111111", "81.2.69.160", "8.8.4.4",
              "2a00:1450:4001:80b::200e", "fe80::1", "::", "+44 20 7946 0958", "(415) 555-2671", "415.555.2671",
              "020 7946 0958", "06.12.34.56.78", "j.doe@gmail.com", "a@b.co", "1234", "123456", "12", "0", "7",
              " ", " ", "-", ".", ",", ":", "/", "+", "@", "(", ")", "_", "%", "\n", "x", "Z", "é", "\u0663", "std",
              "ab.com", "ISBN ", "v", "version "]
    return ["".join(rng.choice(tokens) for _ in range(rng.randint(1, 12))) for _ in range(n)]


def test_pii_bounded_cores_miss_no_value_on_random_look_alikes():
    """The RE2 cores carry the Python patterns' boundaries (`_Bounded.re2`): reading only the lines where a core
    matches finds what reading every whole text finds."""
    from dataaudit.checks.pii import _CORES, _NEEDS, _PREFILTER, found_values

    arr = pa.array(_pii_look_alikes(3000, 11), pa.string())
    every = found_values(arr, _PREFILTER, find_pii)
    lines = found_values(arr, _PREFILTER, find_pii, _CORES, needs=_NEEDS)
    assert lines.value.tolist() == every.value.tolist() and list(lines.detail) == list(every.detail)
    assert (every.value > 0).sum() > 500


def test_masks_and_places_read_past_the_gate_equal_a_whole_read():
    """A snippet's masks and a flag's place skip a text the check's gate does not pass: the same spans as reading it."""
    from dataaudit.checks.pii import locate_pii, mask_spans_pii
    from dataaudit.checks.secrets import find_secrets, locate_secret, mask_spans_secrets

    texts = _pii_look_alikes(2000, 5) + [t for t, _ in PII_POSITIVES] + PII_NEGATIVES
    assert [mask_spans_pii(t) for t in texts] == [[(f.start, f.end) for f in find_pii(t)] for t in texts]
    assert [locate_pii(t) for t in texts] == [(lambda f: (f[0].start, f[0].end) if f else None)(find_pii(t, first=True))
                                             for t in texts]
    if available("detect_secrets"):
        texts += [t for t, _, _ in SECRET_POSITIVES] + SECRET_NEGATIVES
        assert [mask_spans_secrets(t) for t in texts] == [[(f.start, f.end) for f in find_secrets(t)] for t in texts]
        assert [locate_secret(t) for t in texts] == [(lambda f: (f[0].start, f[0].end) if f else None)(
            find_secrets(t, first=True)) for t in texts]
        assert sum(bool(mask_spans_secrets(t)) for t in texts) >= len(SECRET_POSITIVES)


def test_secrets_gives_each_flagged_texts_span_as_locate_does():
    from dataaudit.checks.secrets import locate_secret, secrets

    rng = random.Random(9)
    pieces = ["password = 'aB3#xyz9Qw'", "api_key: 'Zq8mX2pL0vR7'", "-----BEGIN RSA PRIVATE KEY-----", "MIIEowIBAAKCAQEA",
              "-----END RSA PRIVATE KEY-----", "PuTTY-User-Key-File-2: ssh-rsa", "AKIAQWERTYUIOPASDFGH", "\n", " ", "x",
              "ghp_" + "a1B2" * 9, "xoxb-1234-5678-abcdef", "secret=", "s3cr3tV4lu3!", '"password": "Qw8#e"']
    rows = ["".join(rng.choice(pieces) for _ in range(rng.randint(1, 20))) for _ in range(2000)]
    out = secrets(pa.array(rows, pa.string()))
    flagged = np.flatnonzero(out.flagged)
    assert flagged.size > 1000
    assert [out.span[i] for i in flagged] == [locate_secret(rows[i]) for i in flagged]


def test_luhn():
    assert luhn("4111111111111111") and luhn("378282246310005") and not luhn("4111111111111112")


# ------------------------------------------------------------------------------------------------ secrets

def _rand(chars: str, n: int, seed: int = 1) -> str:
    rng = random.Random(seed)
    return "".join(rng.choice(chars) for _ in range(n))


AWS = "AKIA" + _rand(string.ascii_uppercase + string.digits, 16)
PEM = ("-----BEGIN RSA PRIVATE KEY-----\n" + "\n".join(_rand(string.ascii_letters + "+/", 64, k) for k in range(4))
       + "\n-----END RSA PRIVATE KEY-----")
JWT = ("eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIy"
       "fQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c")
GITHUB = "ghp_" + _rand(string.ascii_letters + string.digits, 36)
SLACK = "xoxb-123456789012-1234567890123-" + _rand(string.ascii_letters + string.digits, 24)
STRIPE = "sk_live_" + _rand(string.ascii_letters + string.digits, 24)

SECRET_POSITIVES = [
    (f"aws_access_key_id = {AWS}", AWS, "AWS key AKIA**************** (20 chars)"),
    (f"here is my key:\n{PEM}\nthanks", PEM, "private key (RSA PRIVATE KEY)"),
    (f"Authorization: Bearer {JWT}", JWT, f"JSON web token eyJ**************** ({len(JWT)} chars)"),
    (f"GITHUB_TOKEN={GITHUB}", GITHUB, "GitHub token ghp_**************** (40 chars)"),
    (f"slack {SLACK}", SLACK, "Slack token xoxb-**************** (56 chars)"),
    (f"stripe.api_key = '{STRIPE}'", STRIPE, "Stripe key sk_live_**************** (32 chars)"),
    ('    password = "Xk9#mP2$vL8qR4"', "Xk9#mP2$vL8qR4",
     "secret in key/value context: password = ************** (14 chars)"),
    ("api_key: q8Zt3Lw9Xv2Rk7Pm", "q8Zt3Lw9Xv2Rk7Pm", "secret in key/value context: api_key = **************** (16 chars)"),
    ('random_password = "Xk9#mP2$vL8qR4"', "Xk9#mP2$vL8qR4",    # a name, not the word "random": still read
     "secret in key/value context: random_password = ************** (14 chars)"),
    ('creds = {"client_secret": "?@q6BfrhnuII#X"}', "?@q6BfrhnuII#X",
     "secret in key/value context: client_secret = ************** (14 chars)"),
    # a config line with its newline: the value stops before it
    ("password = hunter2Xq9zz\nuser = bob\n", "hunter2Xq9zz",
     "secret in key/value context: password = ************ (12 chars)"),
]

SECRET_NEGATIVES = [
    'password = "password123"', 'password = "hunter2"', 'password = "${DB_PASS}"', 'api_key = "<your-api-key>"',
    'db_password = os.environ["DB_PASSWORD"]', "password: str", "My secret: never tell anyone",
    "authkey = self._manager._authkey", 'api_key = "xxxxxxxxxxxxxxxx"', 'SECRET_KEY = "changeme-in-production"',
    # code: a variable or attribute passed on, at a line's end (real lines of installed packages)
    "        username, password = parsed.auth_decoded\n        return username\n",
    "client = Client(\n    api_key=self.token,\n    private_key=private_key,\r\n)\n",
    "AWS's documentation key AKIAIOSFODNN7EXAMPLE", "a JWT starts with eyJ, a GitHub token with ghp_",
    "uuid 123e4567-e89b-12d3-a456-426614174000, sha 3f786850e387550fdab836ed7e6dc881de23001b",
    "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA\n-----END PUBLIC KEY-----",
    "I told him my secret: the password is in the drawer.",
    # an assistant's made-up value (a real Alpaca reply); a whole word before the key says so
    "Here is a randomly generated 8-character password: rT8$jLpZ.", "For example, password = Xk9#mP2$vL8qR4",
]


@needs_ds
@pytest.mark.parametrize("text,value,detail", SECRET_POSITIVES)
def test_secrets_finds_each_kind_with_a_masked_detail(text, value, detail):
    (got,) = details("secrets", [text])
    assert got == (1.0, detail)
    start, end = REGISTRY["secrets"].locate(text, **REGISTRY["secrets"].params)
    assert text[start:end] == value          # a private key: the whole PEM block
    assert value not in detail


@needs_ds
@pytest.mark.parametrize("text", SECRET_NEGATIVES)
def test_secrets_leaves_placeholders_and_look_alikes_alone(text):
    assert details("secrets", [text]) == [None]


@needs_ds
def test_secrets_uses_no_detect_secrets_setting():
    from detect_secrets.settings import get_settings
    before = get_settings().json()
    run("secrets", [f"key {AWS}", 'password = "Xk9#mP2$vL8qR4"'])
    assert get_settings().json() == before


def test_secrets_skipped_without_detect_secrets(monkeypatch):
    from dataaudit.checks import runnable
    from dataaudit.config import build_config
    monkeypatch.setattr(runnable, "available", lambda module: module != "detect_secrets")
    why = runnable.skip_reason("secrets", build_config({}), {"text": True}, "this shard")
    assert why == "needs detect-secrets, which is not installed: pip install 'dataaudit[secrets]'"
    assert runnable.skip_reason("pii", build_config({}), {"text": True}, "this shard") is None


# ------------------------------------------------------------------------------------------------ masking

def test_snippet_masks_every_span_a_masking_check_finds_and_keeps_the_highlight():
    spec = REGISTRY["pii"]
    text = "mail a.b@gmail.com or c@yahoo.fr please"
    out = _snippet(spec, "text", {}, text, ((spec, {}),))
    assert out == {"snippet": "mail ************* or ********** please", "span": [5, 18]}
    # another check's example of the same text is masked too
    other = REGISTRY["control_chars"]
    out = _snippet(other, "text", other.params, text + "\x07", ((spec, {}),))
    assert "gmail" not in out["snippet"] and "yahoo" not in out["snippet"] and out["span"] == [39, 40]
    # without maskers the text is shown as it is
    assert _snippet(other, "text", other.params, text)["snippet"] == text


def test_snippet_masks_a_span_past_the_first_window():
    spec = REGISTRY["pii"]
    text = "x " * 200 + "call +1 415 555 2671 now"
    out = _snippet(spec, "text", {}, text, ((spec, {}),))
    assert out["snippet_start"] == 345 and "415" not in out["snippet"]
    assert out["snippet"][out["span"][0]:out["span"][1]] == "***************"


def test_snippet_left_out_when_a_masker_fails():
    spec = REGISTRY["pii"]

    def broken(text, **params):
        raise RuntimeError("no")

    from dataclasses import replace
    assert _snippet(spec, "text", {}, "a@gmail.com", ((replace(spec, masks=broken), {}),)) == {"snippet": None}


@needs_ds
def test_audit_never_prints_a_planted_secret_or_personal_data(tmp_path):
    from dataaudit.cli import main
    card = "4111 1111 1111 1111"
    mail = "jane.roe@gmail.com"
    rows = [{"text": f"Deploy with aws_access_key_id = {AWS} and region eu-west-1."},
            {"text": f"Here is the server key, keep it safe:\n{PEM}\nbye"},
            {"text": f"Pay with {card}, receipt to {mail}. " + "x" * 150 + "\x07"},   # control_chars shows it too
            {"text": "Nothing to see here."}]
    shard = tmp_path / "data" / "rows.jsonl"
    shard.parent.mkdir()
    shard.write_text("".join(json.dumps(r) + "\n" for r in rows))
    config = tmp_path / "audit.toml"
    config.write_text('[checks.secrets]\nseverity = "error"\n')
    res = CliRunner().invoke(main, ["audit", str(shard), "--out", str(tmp_path / "out"), "--engine", "local",
                                    "--config", str(config)])
    assert res.exit_code == 1, res.output           # secrets raised to an error
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["checks"]["secrets"]["flagged"] == 2 and report["checks"]["pii"]["flagged"] == 1
    flags = pq.read_table(tmp_path / "out" / "flags.parquet").to_pylist()
    assert {(f["row"], f["check"]) for f in flags} >= {(0, "secrets"), (1, "secrets"), (2, "pii"), (2, "control_chars")}
    texts = {
        "report.json": (tmp_path / "out" / "report.json").read_text(),
        "report.html": (tmp_path / "out" / "report.html").read_text(),
        "flags.parquet": json.dumps(flags),
        "console": res.output,
    }
    pem_body = PEM.splitlines()[1]
    for where, text in texts.items():
        for value in (AWS, AWS[4:], pem_body, pem_body[:20], card, card.replace(" ", ""), mail, "jane.roe"):
            assert value not in text, (where, value)
    secret_examples = report["examples"]["secrets"]
    assert all("*" * 16 in e["snippet"] for e in secret_examples)
    (cc,) = report["examples"]["control_chars"]
    assert "*" * len(card) in cc["snippet"]


@needs_ds
def test_a_tool_result_alone_is_not_a_key_value_secret():
    """A password generator's output as a tool result (glaive's tool-call data) is what the tool made; the same
    value in a config line is flagged, and a key inside a tool object still is."""
    out = run("secrets", ['{"password": "aB3#fG6&kL9@"}', 'db_password = "aB3#fG6&kL9@"',
                          f'{{"result": "ok", "key": "{AWS}"}}'])
    assert out.flagged.tolist() == [False, True, True]


def test_a_long_run_holding_a_token_is_not_quoted():
    """long_unbroken_run quotes the start of the run it flags, unless the run holds what pii or secrets mask."""
    jwt = ("eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5"
           "MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c")
    out = run("long_unbroken_run", [f"token: {jwt}", "x" * 150])
    assert out.detail.tolist() == [
        "longest run without whitespace: 155 chars (max 100): [masked: it holds a key, token or personal data]",
        "longest run without whitespace: 150 chars (max 100): " + "x" * 47 + "\u2026"]


def test_a_looping_sentence_holding_personal_data_is_not_quoted():
    from dataaudit.checks.text import _GOPHER

    sentence_runs_only = {**dict.fromkeys(_GOPHER, 0), "max_word_repeats": 0}
    spec = REGISTRY["repetition"]
    out = spec.fn(pa.array(["Write to jane.roe@gmail.com now. " * 8, "Write to us now please. " * 8]),
                  **{**spec.params, **sentence_runs_only})
    assert out.detail.tolist() == ["sentence_run=8 > 5: '[masked: it holds a key, token or personal data]'",
                                   "sentence_run=8 > 5: 'Write to us now please'"]
