"""Credentials in text, by the rules of detect-secrets (an optional extra: `pip install 'dataaudit[secrets]'`).

AWS access keys (and 40-character secret keys next to "aws ... key"), private keys (PEM blocks, PuTTY key
files), JSON web tokens, GitHub, Slack and Stripe tokens: detect-secrets' detectors as they are. Values in a
key/value context (`password = "..."`, `api_key: ...`): its KeywordDetector, with its heuristic filters (templates,
`$VAR`, indirect references, UUIDs, sequences, ids) and, since training text is full of `password = "secret"`
examples, a value only counts when it looks random: its Shannon entropy over the base64 alphabet is at least
`min_entropy`, it is at least 8 characters, and holds a letter and a digit or symbol.

The plugins are used as plain objects (`analyze_string` on one line): no detect-secrets setting is read or
changed (its `transient_settings` / `default_settings` swap a process-wide singleton, which a library must not do
under a caller that also uses detect-secrets). One RE2 pass over the batch (pyarrow.compute) keeps only the texts
with a candidate (a key prefix, a PEM header, a keyword before an assignment), reading only the rows a numba gate
passes (`textops.prefilters.secrets_gate`, ~2.5x faster than RE2 on chat text); Python runs on those alone, line by
line. Values are never shown: a detail names the kind and keeps at most a non-secret prefix (`AKIA****`), and the
audit masks every span in the report's snippets.
"""
from __future__ import annotations

import json
import math
import re
from functools import cache
from itertools import chain

from dataaudit.textops.prefilters import passes, secrets_gate

from .base import CheckOutput, register
from .pii import Finding, found_values

# detect-secrets' keyword list (plugins/keyword.py DENYLIST), for the prefilter
_KEYWORDS = (r"api_?key|auth_?key|service_?key|account_?key|db_?key|database_?key|priv_?key|private_?key|"
             r"client_?key|db_?pass|database_?pass|key_?pass|password|passwd|pwd|secret|contraseña|contrasena")
# A superset of what the detectors below match: texts without any never reach Python.
_PREFILTER = "|".join([
    r"(?:A3T[A-Z0-9]|ABIA|ACCA|AKIA|ASIA)[0-9A-Z]{16}",
    r"BEGIN (?:DSA |EC |OPENSSH |RSA |SSH2 ENCRYPTED |PGP )?PRIVATE KEY|PuTTY-User-Key-File-2",
    r"eyJ[A-Za-z0-9_=-]+\.[A-Za-z0-9_=-]+",
    r"gh[pousr]_[A-Za-z0-9_]{36}",
    r"(?i:xox[abposr]-[0-9])|(?i:hooks\.slack\.com/services/T)",
    r"[rs]k_live_[0-9a-zA-Z]{24}",
    r"(?i:" + _KEYWORDS + r")[\w\]'\"]*\s*(?:\[[0-9]*\])?\s*(?::=|=>|[:=!(]|\.assign)\s*@?\(?['\"`]?[^\s'\"`]{8}",
    r"(?i:aws).{0,20}['\"][0-9a-zA-Z/+]{40}['\"]",
])
_PY_PREFILTER = re.compile(_PREFILTER.replace("(?i:", "(?i:"))
# Every match of the prefilter holds one of these, in some case (a necessary condition: Python tries the prefilter
# only near them, `_prefilter_matches`, and a text holding none is not read at all). Ignoring case,
# Python's `re` also takes ſ for s, K (Kelvin) for k, and ı and İ for i: a text holding one of `_FOLDED` is read
# (İ lowers to two characters, i and a combining dot).
_TRIGGERS = ("a3t", "abia", "acca", "akia", "asia", "begin ", "eyj", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "xox",
             "hooks.slack.com/services/t", "k_live_", "key", "pass", "pwd", "secret", "contrase", "aws")
_FOLDED = ("\u017f", "\u212a", "\u0131", "\u0130")
# A match starts at most this many characters before the first trigger it holds ("PuTTY-User-" before "key",
# "database_" before "pass").
_LEAD = 11


def _triggered(text: str) -> bool:
    """Whether `text` holds a trigger: false, and the prefilter finds nothing in it (what `_prefilter_matches`
    relies on; the tests check it)."""
    low = text.lower()
    return any(t in low for t in _TRIGGERS) or any(f in text for f in _FOLDED)


def _prefilter_matches(text: str):
    """`_PY_PREFILTER.finditer(text)`, trying a match only where one can start: up to _LEAD characters before a
    trigger (8x faster than `re` trying every place, on the texts holding a trigger in 100 MB of long real records).
    A text holding one of `_FOLDED`, or whose lower case is longer (İ), is read at every place."""
    low = text.lower()
    if len(low) != len(text) or any(f in text for f in _FOLDED):
        yield from _PY_PREFILTER.finditer(text)
        return
    places: set[int] = set()
    for t in _TRIGGERS:
        i = low.find(t)
        while i >= 0:
            places.update(range(max(0, i - _LEAD), i + 1))
            i = low.find(t, i + 1)
    pos = 0
    for q in sorted(places):
        if q >= pos and (m := _PY_PREFILTER.match(text, q)) is not None:
            yield m
            pos = m.end()


def may_hold_secret(text: str) -> bool:
    """Whether `text` holds anything the detectors below could find (the prefilter, a superset; no detect-secrets
    needed): what another check quotes from such a text is masked."""
    return next(_prefilter_matches(text), None) is not None


_JWT_TAIL = re.compile(r"[A-Za-z0-9_.+/=-]*")
_PEM = re.compile(r"-----BEGIN ((?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?)-----.*?(?:-----END [A-Z0-9 ]*-----|\Z)", re.S)
_PUTTY = re.compile(r"PuTTY-User-Key-File-[0-9]:.*?(?:Private-MAC: [0-9a-f]+|\Z)", re.S)


@cache
def detectors():
    """(kind, plugin, shown prefix length) for every detector used; built once (detect-secrets imported here)."""
    from detect_secrets.plugins.aws import AWSKeyDetector
    from detect_secrets.plugins.github_token import GitHubTokenDetector
    from detect_secrets.plugins.jwt import JwtTokenDetector
    from detect_secrets.plugins.keyword import KeywordDetector
    from detect_secrets.plugins.private_key import PrivateKeyDetector
    from detect_secrets.plugins.slack import SlackDetector
    from detect_secrets.plugins.stripe import StripeDetector
    return (("AWS key", AWSKeyDetector(), 4), ("private key", PrivateKeyDetector(), 0),
            ("JSON web token", JwtTokenDetector(), 3), ("GitHub token", GitHubTokenDetector(), 4),
            ("Slack token", SlackDetector(), 5), ("Stripe key", StripeDetector(), 8),
            ("secret in key/value context", KeywordDetector(), 0))


@cache
def _keyword_groups():
    """The KeywordDetector's patterns for quoted values (code) and for `key: value` (config files)."""
    from detect_secrets.plugins import keyword
    return (keyword.QUOTES_REQUIRED_DENYLIST_REGEX_TO_GROUP, keyword.CONFIG_DENYLIST_REGEX_TO_GROUP)


_B64 = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/-_=")


def entropy(value: str) -> float:
    """Shannon entropy in bits per character (detect-secrets' measure, over every character)."""
    n = len(value)
    counts: dict[str, int] = {}
    for c in value:
        counts[c] = counts.get(c, 0) + 1
    return -sum(k / n * math.log2(k / n) for k in counts.values())


_PLACEHOLDER = re.compile(r"(?i)x{4,}|\*{3,}|\.{3}|your|example|sample|dummy|placeholder|changeme|redacted|"
                          r"hidden|secret|password|passwd|test|fake|todo|fixme|none|null|undefined|getenv|environ|"
                          r"config|settings")
# a code expression, not a value: `authkey = self._manager._authkey`
_IDENTIFIER_PATH = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+|[A-Za-z_]+")
# detect-secrets' value pattern must start with a word character: a quoted value that starts with a symbol
# (`password = "?@q6Bf..."`) is found by this one, after its own patterns found nothing on the line
_SYMBOL_FIRST = re.compile(r"(?i)(?:" + _KEYWORDS + r")\w*['\"\]]{0,2}\s*(?:=|:|=>)\s*(['\"`]?)([^\w\s'\"`][^\s'\"`]{7,})\1")


def _keyword_value_ok(value: str, line: str, min_entropy: float) -> bool:
    """A KeywordDetector value that looks like a real credential: detect-secrets' heuristic filters, then random
    looking (entropy, length, a letter and a digit or symbol), and no placeholder word."""
    from detect_secrets.filters import heuristic
    if (heuristic.is_templated_secret(value) or heuristic.is_prefixed_with_dollar_sign(value)
            or heuristic.is_indirect_reference(line) or heuristic.is_sequential_string(value)
            or heuristic.is_potential_uuid(value) or heuristic.is_not_alphanumeric_string(value)):
        return False
    if (len(value) < 8 or " " in value.strip() or _PLACEHOLDER.search(value)
            or _IDENTIFIER_PATH.fullmatch(value.rstrip(",;)"))):     # `f(api_key=self.token,`
        return False
    if not any(c.isalpha() for c in value) or not any(not c.isalpha() for c in value):
        return False
    return entropy(value) >= min_entropy


# Words before a key/value pair in its line that say the value is made up, not leaked: "Here is a randomly
# generated 8-character password: rT8$jLpZ" (an assistant's reply), "for example, password = ...". Whole words
# only: `random_password = "..."` or `SAMPLE_KEY=...` in a config are still read.
_ILLUSTRATION = re.compile(r"(?i)\b(?:generated|randomly|random|example|sample|e\.g\.|for instance|dummy|placeholder"
                           r"|fake)(?![\w])")


def _mask(value: str, keep: int) -> str:
    return value[:keep] + "*" * min(max(len(value) - keep, 4), 16) + f" ({len(value)} chars)"


def _spans(kind: str, plugin, line: str, min_entropy: float) -> list[tuple[int, int, str]]:
    """(start, end, value) of every value one detector finds in one line. A regex detector's own patterns are run
    for their places (its `analyze_string` yields a capture group, which for GitHub tokens is the prefix alone): a
    group long enough to be the secret (the 40 characters after "aws ... key") is taken, else the whole match."""
    if kind == "secret in key/value context":
        quoted, config = _keyword_groups()
        values = list(plugin.analyze_string(line, quoted)) or list(plugin.analyze_string(line, config)) or \
            [m.group(2) for m in _SYMBOL_FIRST.finditer(line)]
        out = []
        for v in values:
            v = v.rstrip()     # the line's own newline is not part of a value
            at = line.find(v) if v else -1
            if at >= 0 and _keyword_value_ok(v, line, min_entropy) and not _ILLUSTRATION.search(line, 0, at):
                out.append((at, at + len(v), v))
        return out
    out = []
    for rx in plugin.denylist:
        for m in rx.finditer(line):
            g = 1 if m.re.groups and len(m.group(1) or "") >= 16 else 0
            start, end = m.span(g)
            v = line[start:end]
            if kind == "JSON web token":
                end = _JWT_TAIL.match(line, end).end()     # its pattern ends lazily: the signature too
                v = line[start:end]
                if not plugin.is_formally_valid(v):
                    continue
            if kind == "AWS key" and v.endswith("EXAMPLE"):     # AWS's documentation keys (AKIAIOSFODNN7EXAMPLE)
                continue
            out.append((start, end, v))
    return out


# A text that is one short JSON object alone is a tool's call or result in a conversation: `{"password": "aB3#..."}`
# from a password generator (2% of glaive's tool-call records) is what the tool made, not a leaked credential. The
# key/value rule reads configs and code; the key and token detectors still read these.
TOOL_OBJECT_CHARS = 1000


def _tool_object(text: str) -> bool:
    """Whether `text` is one JSON object of under TOOL_OBJECT_CHARS characters and nothing else."""
    s = text.strip()
    if len(s) >= TOOL_OBJECT_CHARS or not (s.startswith("{") and s.endswith("}")):
        return False
    try:
        return isinstance(json.loads(s), dict)
    except ValueError:
        return False


def _line_findings(line: str, offset: int, min_entropy: float, keywords: bool = True) -> list[Finding]:
    found: list[Finding] = []
    for kind, plugin, keep in detectors():
        if not keywords and kind == "secret in key/value context":
            continue
        for at, stop, v in _spans(kind, plugin, line, min_entropy):
            start, end = offset + at, offset + stop
            if any(f.start < end and start < f.end for f in found):
                continue    # the AWS detector and the keyword detector find the same value: the first kind wins
            if kind == "private key":
                masked = f"private key ({v.replace('BEGIN ', '').replace('PuTTY-User-Key-File-2', 'PuTTY key')})"
            elif kind == "secret in key/value context":
                key = (re.findall(r"[\w.-]+", line[:at]) or ["key"])[-1][-40:]
                masked = f"secret in key/value context: {key} = " + _mask(v, 0)
            else:
                masked = f"{kind} " + _mask(v, keep)
            found.append(Finding(kind, start, end, masked))
    return found


def find_secrets(text: str, min_entropy: float = 3.0, first: bool = False, **params) -> list[Finding]:
    """Every secret in `text`, in order (`first`: stop at the first line that holds one). A private key's span is its
    whole PEM block (header to END line). One regex scan finds the candidate lines; only those are analysed."""
    matches = _prefilter_matches(text)
    first_match = next(matches, None)
    if first_match is None:             # most texts: no JSON parse, no detector
        return []
    found: list[Finding] = []
    done = -1
    keywords = not _tool_object(text)
    for m in chain((first_match,), matches):
        if m.start() < done:
            continue
        start = text.rfind("\n", 0, m.start()) + 1
        end = text.find("\n", m.end())
        end = len(text) if end < 0 else end + 1
        done = end
        found += _line_findings(text[start:end], start, min_entropy, keywords)
        if first and found:
            break
    out = []
    for f in found:
        if f.kind == "private key":
            m = (_PEM if "PuTTY" not in f.masked else _PUTTY).search(text, max(0, f.start - 16))
            if m is not None and m.start() <= f.end:
                f = Finding(f.kind, m.start(), m.end(), f.masked)
        if any(g.start < f.end and f.start < g.end for g in out):
            continue
        out.append(f)
    return sorted(out, key=lambda f: f.start)


def locate_secret(text: str, **params) -> tuple[int, int] | None:
    found = find_secrets(text, first=True, **params) if passes(secrets_gate, text) else []
    return (found[0].start, found[0].end) if found else None


def mask_spans_secrets(text: str, **params) -> list[tuple[int, int]]:
    return [(f.start, f.end) for f in find_secrets(text, **params)] if passes(secrets_gate, text) else []


@register(
    "secrets", target="text", severity="warning", params={"min_entropy": 3.0}, needs="detect_secrets",
    locate=locate_secret, masks=mask_spans_secrets,
    detail="{value:.0f} secrets (keys, tokens, passwords)",
    description="Credentials, by detect-secrets' detectors: AWS keys, private keys (PEM blocks), JSON web tokens, "
                "GitHub, Slack and Stripe tokens, and values in a key/value context (`password = \"...\"`, "
                "`api_key: ...`) that pass its heuristic filters and look random (Shannon entropy >= min_entropy "
                "bits per character, 8+ characters, no placeholder word; a quoted value that starts with a symbol, "
                "which its pattern skips, counts too; not in a text that is one short JSON object alone: a tool's "
                "call or result, such as a password generator's output; nor after a word that says it is made up, "
                "earlier in its line: generated, random(ly), example, sample, e.g., for instance, dummy, "
                "placeholder, fake). Needs the `secrets` extra. The detail "
                "names the kind and masks the value; the report masks it in snippets. value = number of secrets.",
)
def secrets(arr, min_entropy: float = 3.0, **params) -> CheckOutput:
    # `locate_secret`'s span is the first of all the secrets found: it reads up to the first line holding one, whose
    # secrets come first (a private key is stretched to its own PEM block; the same on each of 29,000 flagged texts,
    # generated around PEM blocks and real)
    return found_values(arr, _PREFILTER, lambda text: find_secrets(text, min_entropy), gate=secrets_gate,
                        span=lambda text, found, lines: (found[0].start, found[0].end))


__all__ = ["secrets", "find_secrets", "entropy"]
