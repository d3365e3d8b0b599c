#!/usr/bin/env python
"""Recall of the `pii` and `secrets` checks on planted values, their flag rate on real text, and their speed.

  recall      per kind: realistic generated values (emails, phones in several national formats, public IPv4/IPv6,
              Luhn-valid card numbers; AWS keys, PEM private keys, JWTs, GitHub/Slack/Stripe tokens, random values
              after `password =` / `api_key:`), each planted once in a real record: a tinyshakespeare paragraph
              (prose) or a Python standard library line (code), half each. A planted record counts when the check
              flags it and its first finding (what `locate` highlights) covers the planted value.
  flag rate   on the real records with nothing planted, per corpus: tinyshakespeare paragraphs and Python standard
              library lines (the code corpus: ../shared/data holds no code), held to the target; the WebDataset
              passages and chat turns (LLaMA-Factory demos), whose flags are listed only: they hold real values
              (web pages' contact phones and emails, a password generator tool's outputs). Every flag is listed
              (kind and masked value), the first 20 per corpus.
  throughput  MB/s on one core of each check over the tinyshakespeare paragraphs (and the code lines).

Targets: recall >= 0.95 for every kind, flag rate <= 0.1% on every corpus. Exit 1 with --strict when one is missed.

    .venv/bin/python benchmarks/pii_secrets_recall.py [--per-kind 200] [--strict]
"""
from __future__ import annotations

import argparse
import base64
import gzip
import json
import random
import string
import sys
import sysconfig
import tarfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402

_common.single_core_env()
sys.path.insert(0, str(_common.REPO))

import pyarrow as pa  # noqa: E402

from dataaudit.checks.pii import find_pii, luhn, pii  # noqa: E402
from dataaudit.checks.secrets import find_secrets, secrets  # noqa: E402
from tests.paths import SHARED_DATA  # noqa: E402

TARGET_RECALL, TARGET_RATE = 0.95, 0.001
ALNUM = string.ascii_letters + string.digits


# ------------------------------------------------------------------------------------------------ real text

def shakespeare() -> list[str]:
    text = (SHARED_DATA / "corpora" / "tinyshakespeare.txt").read_text()
    return [p for p in text.split("\n\n") if p.strip()]


def webdataset() -> list[str]:
    out = []
    with tarfile.open(SHARED_DATA / "webdataset" / "testgz.tar") as tar:
        for m in tar:
            if m.name.endswith(".txt.gz"):
                out.append(gzip.decompress(tar.extractfile(m).read()).decode("utf-8", "replace"))
    return out


def chat_turns() -> list[str]:
    out = []
    for line in (SHARED_DATA / "chat" / "v1_sft_demo.jsonl").read_text().splitlines():
        for msg in json.loads(line).get("messages", []):
            for part in msg.get("content", []):
                if isinstance(part, dict) and isinstance(part.get("value"), str):
                    out.append(part["value"])
    for conv in json.loads((SHARED_DATA / "chat" / "glaive_toolcall_zh_demo.json").read_text()):
        out += [t["value"] for t in conv["conversations"] if isinstance(t.get("value"), str)]
    return out


def code_lines(limit_bytes: int = 8_000_000) -> list[str]:
    """Non-blank lines of the Python standard library's own modules (tests aside), up to `limit_bytes`."""
    root = Path(sysconfig.get_paths()["stdlib"])
    out, size = [], 0
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).parts
        if rel[0] in ("test", "site-packages", "idlelib") or "tests" in rel:
            continue
        for line in path.read_text(errors="replace").splitlines():
            if line.strip():
                out.append(line)
                size += len(line) + 1
        if size >= limit_bytes:
            break
    return out


# ---------------------------------------------------------------------------------------------- planted values

def _r(rng, chars, n):
    return "".join(rng.choice(chars) for _ in range(n))


def _digits(rng, n):
    return _r(rng, string.digits, n)


def email(rng):
    first = rng.choice(["john", "maria", "wei", "aisha", "lars", "priya", "tom", "olga", "kenji", "fatima"])
    last = rng.choice(["smith", "garcia", "chen", "khan", "berg", "patel", "muller", "ivanova", "sato", "diallo"])
    local = rng.choice([f"{first}.{last}", f"{first}{rng.randint(1, 99)}", f"{first[0]}{last}", f"{first}_{last}"])
    domain = rng.choice(["gmail.com", "yahoo.co.uk", "outlook.de", "proton.me", "acme-corp.io", "uni-heidelberg.de",
                         "mail.ru", "company.org", "fastmail.fm", "web.de"])
    return local + "@" + domain


def phone(rng):
    nxx = lambda: str(rng.randint(2, 9)) + _digits(rng, 2)  # noqa: E731
    return rng.choice([
        lambda: f"+1 {nxx()} {nxx()} {_digits(rng, 4)}",
        lambda: f"({nxx()}) {nxx()}-{_digits(rng, 4)}",
        lambda: f"{nxx()}-{nxx()}-{_digits(rng, 4)}",
        lambda: f"{nxx()}.{nxx()}.{_digits(rng, 4)}",
        lambda: f"+44 20 {_digits(rng, 4)} {_digits(rng, 4)}",
        lambda: f"+44 7700 {_digits(rng, 6)}",
        lambda: f"+49 30 {_digits(rng, 8)}",
        lambda: f"+33 6 {_digits(rng, 2)} {_digits(rng, 2)} {_digits(rng, 2)} {_digits(rng, 2)}",
        lambda: f"+91 {rng.randint(6, 9)}{_digits(rng, 4)} {_digits(rng, 5)}",
        lambda: f"+1{nxx()}{nxx()}{_digits(rng, 4)}",
        lambda: f"020 {_digits(rng, 4)} {_digits(rng, 4)}",
        lambda: f"07{_digits(rng, 3)} {_digits(rng, 6)}",
        lambda: f"0{rng.randint(1, 9)} {_digits(rng, 2)} {_digits(rng, 2)} {_digits(rng, 2)} {_digits(rng, 2)}",
        lambda: f"030 {_digits(rng, 8)}",
    ])()


def ipv4(rng):
    import ipaddress
    while True:
        ip = ipaddress.IPv4Address(rng.randint(1 << 24, (224 << 24) - 1))
        if ip.is_global and not ip.is_reserved and not ip.is_multicast:
            return str(ip)


def ipv6(rng):
    import ipaddress
    groups = [rng.choice(["2001", "2a00", "2a02", "2600", "2604", "2803", "2c0f", "2400"])]
    groups += [f"{rng.randint(0, 0xffff):x}" for _ in range(7)]
    ip = ipaddress.IPv6Address(":".join(groups))
    return ip.compressed if rng.random() < 0.5 else ip.exploded if rng.random() < 0.5 else ":".join(groups)


def card(rng):
    prefix, n = rng.choice([("4", 16), ("51", 16), ("55", 16), ("2221", 16), ("34", 15), ("37", 15), ("6011", 16),
                            ("65", 16), ("3530", 16), ("36", 14)])
    body = prefix + _digits(rng, n - len(prefix) - 1)
    check = next(d for d in string.digits if luhn(body + d))
    digits = body + check
    sep = rng.choice([" ", "-", ""])
    if n == 16:
        return sep.join(digits[i:i + 4] for i in range(0, 16, 4))
    if n == 15:
        return sep.join((digits[:4], digits[4:10], digits[10:]))
    return sep.join((digits[:4], digits[4:10], digits[10:]))


def aws(rng):
    return rng.choice(["AKIA", "ASIA"]) + _r(rng, string.ascii_uppercase + string.digits, 16)


def private_key(rng):
    kind = rng.choice(["RSA ", "EC ", "OPENSSH ", ""])
    body = "\n".join(_r(rng, string.ascii_letters + string.digits + "+/", 64) for _ in range(rng.randint(4, 12)))
    return f"-----BEGIN {kind}PRIVATE KEY-----\n{body}\n-----END {kind}PRIVATE KEY-----"


def _b64(obj) -> str:
    return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")


def jwt(rng):
    return ".".join((_b64({"alg": rng.choice(["HS256", "RS256"]), "typ": "JWT"}),
                     _b64({"sub": _digits(rng, 8), "name": email(rng), "iat": rng.randint(1.5e9, 1.8e9)}),
                     _r(rng, ALNUM + "-_", 43)))


def github(rng):
    return rng.choice(["ghp_", "gho_", "ghs_"]) + _r(rng, ALNUM, 36)


def slack(rng):
    return f"xox{rng.choice('bpa')}-{_digits(rng, 12)}-{_digits(rng, 13)}-{_r(rng, ALNUM, 24)}"


def stripe(rng):
    return rng.choice(["sk_live_", "rk_live_"]) + _r(rng, ALNUM, 24)


def password(rng):
    return _r(rng, ALNUM + "!#%&*+-_?@", rng.randint(12, 24))


# kind -> (check, generator, prose templates, code templates); {v} is the value
KINDS = {
    "email": ("pii", email, ["Write to {v} for the tickets.", "(contact: {v})", "my email is {v}"],
              ['AUTHOR_EMAIL = "{v}"', "# maintainer: {v}", '    msg["To"] = "{v}"']),
    "phone": ("pii", phone, ["Call me on {v} tonight.", "phone: {v}", "ring {v} after six"],
              ['SUPPORT_PHONE = "{v}"', "# on call: {v}", '    "phone": "{v}",']),
    "ipv4": ("pii", ipv4, ["The server at {v} went down.", "login from {v} at noon"],
             ['HOST = "{v}"', "    sock.connect(('{v}', 443))", "# allow {v}"]),
    "ipv6": ("pii", ipv6, ["The host {v} answered.", "from {v} today"],
             ['HOST6 = "{v}"', "# peer {v}"]),
    "credit card": ("pii", card, ["My card number is {v} exp 04/27.", "paid with {v}"],
                    ['CARD = "{v}"', "# card {v}"]),
    "AWS key": ("secrets", aws, ["my key is {v}, don't share", "use {v} for the bucket"],
                ["aws_access_key_id = {v}", 'AWS_KEY = "{v}"', "    client(key_id='{v}')"]),
    "private key": ("secrets", private_key, ["here is the key:\n{v}\nthanks"], ['KEY = """\n{v}\n"""']),
    "JSON web token": ("secrets", jwt, ["the token was {v} yesterday"],
                       ['headers = {{"Authorization": "Bearer {v}"}}', "TOKEN = '{v}'"]),
    "GitHub token": ("secrets", github, ["push with {v} please"], ['GITHUB_TOKEN = "{v}"', "# token {v}"]),
    "Slack token": ("secrets", slack, ["the bot uses {v}"], ['SLACK_BOT_TOKEN = "{v}"']),
    "Stripe key": ("secrets", stripe, ["charge it with {v}"], ["stripe.api_key = '{v}'"]),
    "secret in key/value context": ("secrets", password, ['password = "{v}"', "api_key: {v}"],
                                    ['    password = "{v}"', 'DB_PASSWORD = "{v}"', "api_key: {v}",
                                     '    "client_secret": "{v}",', "SECRET_KEY = '{v}'"]),
}


def plant(rng, kind: str, prose: list[str], code: list[str]) -> tuple[str, int, int]:
    """A real record with one value planted: (text, start, end) of the value in it."""
    _, gen, prose_t, code_t = KINDS[kind]
    value = gen(rng)
    if rng.random() < 0.5:
        host = rng.choice(prose)
        lines = host.split("\n")
        at = rng.randrange(len(lines) + 1)
        planted = rng.choice(prose_t)
    else:
        host = "\n".join(code[(k := rng.randrange(len(code) - 10)):k + 10])
        lines = host.split("\n")
        at = rng.randrange(len(lines) + 1)
        planted = rng.choice(code_t)
    line = planted.format(v=value)
    text = "\n".join(lines[:at] + [line] + lines[at:])
    start = text.index(line) + line.index(value)
    return text, start, start + len(value)


# --------------------------------------------------------------------------------------------------- measuring

def recall(per_kind: int, seed: int, prose: list[str], code: list[str]) -> dict[str, tuple[float, list]]:
    rng = random.Random(seed)
    out = {}
    for kind, (check, *_r_) in KINDS.items():
        cases = [plant(rng, kind, prose, code) for _ in range(per_kind)]
        fn, find = (pii, find_pii) if check == "pii" else (secrets, find_secrets)
        flagged = fn(pa.array([t for t, _, _ in cases])).flagged
        hit, missed = 0, []
        for (text, a, b), f in zip(cases, flagged):
            first = next((x for x in find(text) if x.start < b and a < x.end), None) if f else None
            if first is not None:
                hit += 1
            else:
                missed.append(text[a:b])
        out[kind] = (hit / per_kind, missed[:3])
    return out


def flag_rate(texts: list[str]) -> tuple[dict, list]:
    arr = pa.array(texts)
    rates, shown = {}, []
    for name, fn in (("pii", pii), ("secrets", secrets)):
        out = fn(arr)
        rows = [int(i) for i in out.flagged.nonzero()[0]]
        rates[name] = (len(rows), len(texts))
        shown += [(name, out.detail[i], texts[i][:0]) for i in rows]
    return rates, shown


def throughput(texts: list[str], repeat: int = 5) -> dict[str, float]:
    arr = pa.array(texts * repeat)
    mb = arr.nbytes / 1e6
    out = {}
    for name, fn in (("pii", pii), ("secrets", secrets)):
        fn(arr.slice(0, 100))
        t = time.perf_counter()
        fn(arr)
        out[name] = mb / (time.perf_counter() - t)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--per-kind", type=int, default=200)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--strict", action="store_true")
    args = ap.parse_args()
    _common.single_core_libs()
    prose, code = shakespeare(), code_lines()
    ok = True

    print(f"recall on {args.per_kind} planted values per kind (half in tinyshakespeare paragraphs, half in "
          "Python stdlib code):")
    for kind, (r, missed) in recall(args.per_kind, args.seed, prose, code).items():
        ok &= r >= TARGET_RECALL
        print(f"  {kind:30s} {r:6.3f}" + (f"   missed e.g. {missed}" if missed else ""))

    print("flag rate on real records with nothing planted:")
    # (texts, held to the target): the web passages and chat demos hold real values (news tip lines, support
    # addresses; a password generator tool's outputs), so their flags are listed, not held to the rate
    corpora = {"tinyshakespeare paragraphs": (prose, True), "python stdlib code lines": (code, True),
               "webdataset passages": (webdataset(), False), "chat turns (LLaMA-Factory demos)": (chat_turns(), False)}
    for name, (texts, target) in corpora.items():
        rates, shown = flag_rate(texts)
        for check, (k, n) in rates.items():
            ok &= k / n <= TARGET_RATE or not target
            print(f"  {name:34s} {check:8s} {k:5d} / {n:6d} = {100 * k / n:.3f}%" + ("" if target else "  (listed)"))
        for check, detail, _ in shown[:20]:
            print(f"      {check}: {detail}")

    for name, texts in (("tinyshakespeare paragraphs", prose), ("python stdlib code lines", code)):
        tp = throughput(texts)
        print(f"throughput on {name}, one core: " + ", ".join(f"{k} {v:,.0f} MB/s" for k, v in tp.items()))
    print("targets met" if ok else "TARGET MISSED")
    return 0 if ok or not args.strict else 1


if __name__ == "__main__":
    sys.exit(main())
