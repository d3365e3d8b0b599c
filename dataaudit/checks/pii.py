"""Personal data in text: email addresses, phone numbers, public IP addresses and payment card numbers.

One RE2 pass over the whole batch (pyarrow.compute) finds the texts that may hold one; Python runs only on those
few, and confirms each candidate: a real top-level domain, the digit count and grouping of a phone number, an IP
address that is globally routable (Python's `ipaddress`), a card number's issuer prefix and Luhn checksum. The
values are never shown: a detail names the kind and a masked value (`email j***@e***.com`,
`credit card **** **** **** 1234`), and the audit masks the span in the report's snippets (register(masks=...)).

Not flagged, on purpose (not personal data, and everywhere in code and docs):
  - emails at documentation domains (RFC 2606 / 6761: example.com/.net/.org, *.example, *.test, *.invalid,
    *.localhost) and at a few real domains that text uses as placeholders (email.com, company.com, domain.com,
    yourdomain.com, test.com, ...: "alice@email.com");
  - IP addresses that name no host on the internet: private (10/8, 172.16/12, 192.168/16), loopback (127/8, ::1),
    link-local, 0.0.0.0, broadcast, multicast, reserved, the documentation ranges (192.0.2/24, 198.51.100/24,
    203.0.113/24, 2001:db8::/32), and IPv6 outside global unicast (2000::/3); a dotted quad after "version",
    "v" or "section", or with three of its numbers under 10 (2.7.3.8, 8.2.4.44), is a version or section number
    (this leaves out 8.8.8.8 and 1.1.1.1 too: public resolvers, no one's personal data);
  - numbers that only look like phones or cards: dates, version strings, ISBNs, UUIDs, hashes, bare digit runs
    (a phone needs a leading + or the grouping of a national format; a card needs a known issuer prefix and a
    valid Luhn checksum).
"""
from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dataaudit.textops.arrow import string_buffers
from dataaudit.textops.hashing import numba_kernels
from dataaudit.textops.prefilters import lines_holding, need_table, passes, pii_gate

from .base import CheckOutput, register
from .text_common import as_string_array, char_lengths, rows_as_str, to_bool
from .text_lines import KernelLines, Spans


@dataclass(frozen=True)
class Finding:
    """One value found in a text: its kind, where it is, and how a report may show it."""

    kind: str
    start: int
    end: int
    masked: str


# ------------------------------------------------------------------------------------------------ patterns
# Each is written so that RE2 (the batch prefilter) and Python's `re` (the confirmation) read it alike; the
# prefilter may find more than is confirmed, never less.

_EMAIL = r"[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9](?:[A-Za-z0-9-]{0,62}[A-Za-z0-9])?(?:\.[A-Za-z0-9-]{1,63})*\.[A-Za-z]{2,24}"
# +CC then 2 to 6 groups (a group may be in parentheses: "+44 (0)20 7946 0958")
_PHONE_INTL = r"\+[1-9][0-9]{0,3}(?:[ .\-]?\(?[0-9]{1,4}\)?){2,6}"
# North American: (415) 555-2671, 415-555-2671, 415.555.2671, 415 555 2671
_PHONE_NANP = r"\(?[2-9][0-9]{2}\)?[ .\-]?[2-9][0-9]{2}[ .\-][0-9]{4}"
# National formats with a trunk 0: 020 7946 0958, 07700 900123, 030 12345678, 01 23 45 67 89, 06.12.34.56.78
_PHONE_NATIONAL = r"0[1-9][0-9]{0,4}(?:[ /\-][0-9]{2,8}){1,4}|0[1-9](?:\.[0-9]{2}){4}"
_IPV4 = r"[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}"
_IPV6 = r"[0-9A-Fa-f]{0,4}:[0-9A-Fa-f]{0,4}:[0-9A-Fa-f:]{1,35}"
_CARD = r"[0-9]{4}[ \-]?[0-9]{4,6}[ \-]?[0-9]{4,5}(?:[ \-]?[0-9]{1,4})?(?:[ \-]?[0-9]{3})?"

PATTERNS = {"email": _EMAIL, "phone": f"{_PHONE_INTL}|{_PHONE_NANP}|{_PHONE_NATIONAL}", "ip": f"{_IPV4}|{_IPV6}",
            "credit card": _CARD}
# The batch prefilter: an email's "@" with a dot after it, a + before digits, digit groups, dotted quads, colons
# between hex groups. Texts with none of these (most prose) never reach Python.
_PREFILTER = "|".join([
    r"[A-Za-z0-9._%+-]@[A-Za-z0-9-]+\.[A-Za-z0-9.-]*[A-Za-z]{2}",
    r"\+[1-9][0-9]{0,3}[ .\-(]?[0-9]{1,4}",
    r"[0-9]{3}\)?[ .\-][0-9]{2,}",
    r"\b0[1-9][0-9]{0,4}[ /\-.][0-9]{2}",
    _IPV4,
    r"[0-9A-Fa-f]{1,4}:[0-9A-Fa-f]{0,4}:[0-9A-Fa-f]{0,4}",
    r"[0-9]{12,19}",
])


@dataclass(frozen=True)
class _Bounded:
    """A pattern between boundaries: no character of the class `before` just before it, and after it neither a
    character of `after` nor one of `then_first` followed by one of `then_next` (classes' insides, "-" escaped)."""

    core: str
    before: str
    after: str
    then_first: str
    then_next: str

    def python(self) -> re.Pattern:
        """The confirmation's pattern (Python's look-around)."""
        return re.compile(f"(?<![{self.before}])(?:{self.core})"
                          f"(?![{self.after}]|[{self.then_first}][{self.then_next}])")

    def re2(self) -> str:
        """The same for RE2 on one line, which has no look-around: a boundary is the line's end or a character
        outside the classes. RE2's \\w is ASCII, Python's Unicode: any character Python takes for a boundary, RE2
        takes too (and a non-ASCII letter besides), so this matches on every line the Python pattern matches on,
        and on fewer others than the bare core (a digit run inside a hash, `std::cout` for an IPv6 address)."""
        return (f"(?:^|[^{self.before}])(?:{self.core})(?:$|[^{self.after}{self.then_first}]|[{self.then_first}]$"
                f"|[{self.then_first}][^{self.then_next}])")


_BOUNDED = {
    "email": _Bounded(_EMAIL, r"\w.%+\-", r"\w\-", ".", "A-Za-z0-9"),
    "phone": _Bounded(PATTERNS["phone"], r"\w+.\-/", r"\w\-", ".,/:", "0-9"),
    "ipv4": _Bounded(_IPV4, r"\w.", r"\w", ".", r"\w"),
    "ipv6": _Bounded(_IPV6, r"\w:.", r"\w:", ".", "0-9"),
    "credit card": _Bounded(_CARD, r"\w.\-", r"\w\-", ".,", "0-9"),
}
# Python side: the same patterns, with the boundaries RE2 has no look-behind for.
_PY = {kind: b.python() for kind, b in _BOUNDED.items()}

# Generic top-level domains seen in addresses (any two-letter country code is accepted too).
_GENERIC_TLDS = frozenset("""com org net edu gov mil int info biz name pro mobi aero coop museum jobs travel asia
cat tel post xxx app dev io ai xyz online site tech store shop email cloud blog live life world space website
agency company solutions services digital media news club design group team work global center academy
systems network support consulting""".split())
_DOC_DOMAINS = ("example.com", "example.net", "example.org")
# Real domains that training text uses as placeholders ("alice@email.com", "boss@company.com")
_PLACEHOLDER_DOMAINS = frozenset(("email.com", "company.com", "domain.com", "yourdomain.com", "mydomain.com",
                                  "yourcompany.com", "website.com", "test.com", "sample.com", "somewhere.com"))
_DOC_SUFFIXES = (".example", ".test", ".invalid", ".localhost", ".local")

_VERSION_BEFORE = re.compile(r"(?i)(?:\b(?:v|version|ver\.?|release|build|rev\.?|section|sec\.?|chapter|rfc)|[@§#-])"
                             r"\s*[:=]?\s*$")
_ISBN_BEFORE = re.compile(r"(?i)isbn(?:-1[03])?:?\s*$")


def _mask_keep(s: str, keep_last: int) -> str:
    """Every digit but the last `keep_last` as *, the separators kept."""
    digits = sum(c.isdigit() for c in s)
    out, seen = [], 0
    for c in s:
        if c.isdigit():
            seen += 1
            out.append(c if seen > digits - keep_last else "*")
        else:
            out.append(c)
    return "".join(out)


def mask_email(value: str) -> str:
    local, _, domain = value.partition("@")
    labels = domain.split(".")
    return f"{local[:1]}***@{labels[0][:1]}***.{labels[-1]}"


def _email(m: re.Match, text: str) -> str | None:
    value = m.group(0)
    domain = value.rpartition("@")[2].lower()
    tld = domain.rsplit(".", 1)[-1]
    raw_tld = value.rsplit(".", 1)[-1]
    if not (raw_tld.islower() or raw_tld.isupper()):      # `x@self.mT`: an expression, not an address
        return None
    if not (len(tld) == 2 or tld in _GENERIC_TLDS):
        return None
    if domain in _DOC_DOMAINS or domain in _PLACEHOLDER_DOMAINS or domain.endswith(_DOC_SUFFIXES) or \
            any(domain.endswith("." + d) for d in _DOC_DOMAINS) or "example" in domain:
        return None     # "example" in any label: an illustration (`John.Doe@example-domain.com`)
    local = value.partition("@")[0]
    if local.startswith(".") or local.endswith(".") or ".." in value:
        return None
    return "email " + mask_email(value)


def _phone(m: re.Match, text: str) -> str | None:
    value = m.group(0)
    digits = re.sub(r"[^0-9]", "", value)
    before = text[max(0, m.start() - 12):m.start()]
    if _ISBN_BEFORE.search(before) or _VERSION_BEFORE.search(before):
        return None
    if value.count("(") != value.count(")"):
        return None
    seps = set(re.findall(r"[ .\-/]", value))
    if value.startswith("+"):
        if not 8 <= len(digits) <= 15:
            return None
        if value.count(".") == 1 or len(seps) > 1 and "." in seps:   # "+3.14159265": a number
            return None
        if not seps and "(" not in value and len(digits) < 10:          # a bare "+1234567[8]": a count
            return None
    elif value.startswith("0"):
        if not 10 <= len(digits) <= 12 or len(seps) > 1:
            return None
    else:   # North American
        if len(digits) != 10 or (len(seps) > 1 and not value.startswith("(")):
            return None
    return "phone " + _mask_keep(value, 2)


def _ipv4(m: re.Match, text: str) -> str | None:
    value = m.group(0)
    try:
        ip = ipaddress.IPv4Address(value)
    except ValueError:
        return None
    if not ip.is_global or ip.is_multicast or ip.is_reserved:
        return None
    if sum(int(o) < 10 for o in value.split(".")) >= 3:    # 2.7.3.8, 8.2.4.44: a version or a section number
        return None
    if _VERSION_BEFORE.search(text[max(0, m.start() - 12):m.start()]):
        return None
    return f"IP address {value.split('.')[0]}.*.*.*"


def _ipv6(m: re.Match, text: str) -> str | None:
    value = m.group(0)
    if sum(1 for g in value.split(":") if g) < 3:
        return None
    try:
        ip = ipaddress.IPv6Address(value)
    except ValueError:
        return None
    if not ip.is_global or ip not in _GLOBAL_UNICAST:
        return None
    return f"IP address {value.split(':')[0]}:****"


_GLOBAL_UNICAST = ipaddress.IPv6Network("2000::/3")


def luhn(digits: str) -> bool:
    total = 0
    for i, c in enumerate(reversed(digits)):
        d = ord(c) - 48
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def card_brand(digits: str) -> str | None:
    """The issuer of a card number from its prefix and length (None: no known issuer)."""
    n, p2, p4 = len(digits), int(digits[:2]), int(digits[:4])
    if digits[0] == "4" and n in (13, 16, 19):
        return "Visa"
    if (51 <= p2 <= 55 or 2221 <= p4 <= 2720) and n == 16:
        return "Mastercard"
    if p2 in (34, 37) and n == 15:
        return "American Express"
    if (digits.startswith("6011") or p2 == 65 or 644 <= int(digits[:3]) <= 649) and 16 <= n <= 19:
        return "Discover"
    if 3528 <= p4 <= 3589 and 16 <= n <= 19:
        return "JCB"
    if (p2 in (36, 38, 39) or 300 <= int(digits[:3]) <= 305) and 14 <= n <= 19:
        return "Diners Club"
    return None


def _card(m: re.Match, text: str) -> str | None:
    value = m.group(0)
    digits = re.sub(r"[^0-9]", "", value)
    if not 13 <= len(digits) <= 19 or len(set(digits)) < 2:
        return None
    groups = re.split(r"[ \-]", value)
    if len(groups) > 1:
        if len(set(re.findall(r"[ \-]", value))) > 1:
            return None
        shape = tuple(len(g) for g in groups)
        if shape not in ((4, 4, 4, 4), (4, 4, 4, 4, 3), (4, 6, 5), (4, 6, 4), (4, 4, 4, 1), (4, 4, 4, 2),
                         (4, 4, 4, 3), (4, 4, 4, 4, 1), (4, 4, 4, 4, 2)):
            return None
    brand = card_brand(digits)
    if brand is None or not luhn(digits):
        return None
    if _ISBN_BEFORE.search(text[max(0, m.start() - 12):m.start()]):
        return None
    shown = "**** " * ((len(digits) - 4 + 3) // 4)
    return f"credit card ({brand}) {shown}{digits[-4:]}"


_CONFIRM = (("email", _PY["email"], _email), ("credit card", _PY["credit card"], _card),
            ("phone", _PY["phone"], _phone), ("ip", _PY["ipv4"], _ipv4), ("ip", _PY["ipv6"], _ipv6))
# For each pattern of _CONFIRM, what RE2 reads of it on a line (`_Bounded.re2`): any line a Python pattern matches in
# holds a match of it, so a line where RE2 finds none (one vectorized pass over the candidates' lines) is not scanned
# for that kind. Python's `re` scans a long text at 15-30 MB/s a pattern: most candidates need one or two of the five.
_CORES = tuple(_BOUNDED[kind].re2() for kind in ("email", "credit card", "phone", "ipv4", "ipv6"))
# What every match of each pattern of _CONFIRM holds, one of these characters: the batch's RE2 reads a core only on
# the lines holding one (`core_lines`), and a text read alone (a report's snippet) skips the patterns it cannot hold.
_DIGITS = "0123456789"
_NEEDS = ("@", _DIGITS, _DIGITS, _DIGITS, ":")
_DIGIT = re.compile(r"[0-9]")


def _kinds_held(text: str) -> list[int]:
    digit = _DIGIT.search(text) is not None
    return [k for k, need in enumerate(_NEEDS) if (digit if need == _DIGITS else need in text)]


def _matches(rx: re.Pattern, text: str, spans):
    """`rx`'s matches in `text`, or in the (start, end) spans of it only (lines: no pattern matches across a "\n",
    and a lookbehind still reads the text before a span; at its end a lookahead reads the end, as it would the "\n")."""
    if spans is None:
        yield from rx.finditer(text)
        return
    for start, end in spans:
        yield from rx.finditer(text, start, end)


def find_pii(text: str, first: bool = False, kinds=None, lines: dict | None = None) -> list[Finding]:
    """Every confirmed value in `text`, in order; where two overlap (a card number is also a digit run a phone
    pattern reads), the one confirmed first in _CONFIRM's order wins. `first`: the first of each kind only (the
    first of all is among them). `kinds`: the indexes into _CONFIRM whose core the text holds (None: those whose
    `_NEEDS` it holds). `lines`: {index into _CONFIRM: the (start, end) spans of the lines holding its core}, read
    instead of the whole text (`kinds` then: its keys)."""
    found: list[Finding] = []
    if lines is not None:
        kinds = lines
    elif kinds is None:
        kinds = _kinds_held(text)
    for k, (kind, rx, confirm) in enumerate(_CONFIRM):
        if k not in kinds:
            continue
        for m in _matches(rx, text, None if lines is None else lines[k]):
            if any(f.start < m.end() and m.start() < f.end for f in found):
                continue
            masked = confirm(m, text)
            if masked is not None:
                found.append(Finding(kind, m.start(), m.end(), masked))
                if first:
                    break
    return sorted(found, key=lambda f: f.start)


def _first_span(text: str, found: list[Finding], lines: dict) -> tuple[int, int]:
    """`locate_pii`'s span, reading `lines` only. (Not the first of `found`: the first value of each kind, which
    `locate_pii` reads, is not always among all the values, where a later value of an earlier kind can overlap it.)"""
    first = find_pii(text, first=True, lines=lines)[0]
    return first.start, first.end


def locate_pii(text: str, **params) -> tuple[int, int] | None:
    found = find_pii(text, first=True) if passes(pii_gate, text) else []
    return (found[0].start, found[0].end) if found else None


def mask_spans_pii(text: str, **params) -> list[tuple[int, int]]:
    return [(f.start, f.end) for f in find_pii(text)] if passes(pii_gate, text) else []


def summarize(found: list[Finding]) -> str:
    """The detail: the first value (masked) and how many more of each kind."""
    first = found[0].masked
    rest = {}
    for f in found[1:]:
        rest[f.kind] = rest.get(f.kind, 0) + 1
    if not rest:
        return first
    return first + " (+" + ", ".join(f"{k} {kind}" for kind, k in rest.items()) + ")"


def candidates(arr: pa.Array, pattern: str, gate=None, lines_decide: bool = False) -> np.ndarray:
    """Rows where the RE2 `pattern` matches (null: no), as indices. `gate`: arr -> booleans, True wherever `pattern`
    may match (`textops.prefilters`), or None (no gate): RE2 then reads only the rows it passes. `lines_decide`: the
    rows the gate passes, without RE2 (the caller reads their lines with narrower patterns: pii's gate passes 1%
    more rows than its prefilter matches on real text, and RE2 reading them all was 5% of the audit's time)."""
    passed = None if gate is None else gate(arr)
    if passed is not None and lines_decide:
        return np.flatnonzero(passed)
    if passed is None or passed.all():
        return np.flatnonzero(to_bool(pc.fill_null(pc.match_substring_regex(arr, pattern=pattern), False)))
    rows = np.flatnonzero(passed)
    if rows.size == 0:
        return rows
    found = pc.match_substring_regex(arr.take(pa.array(rows, pa.int64())), pattern=pattern)
    return rows[to_bool(pc.fill_null(found, False))]


def _re2(texts: pa.Array, pattern: str) -> np.ndarray:
    return to_bool(pc.fill_null(pc.match_substring_regex(texts, pattern=pattern), False))


def core_lines(texts: pa.Array, cores: tuple[str, ...], needs: tuple[str, ...] | None = None) -> list[dict]:
    """Per text, {index of a core: the (start, end) code point spans of the text's lines that hold a match of it}.
    needs[k]: ASCII characters one of which every match of cores[k] holds; RE2 reads each core on the lines holding
    one of its needs only (None: every line). With numba one pass over the bytes finds those lines
    (`prefilters.lines_holding`), else Arrow's split and a table lookup of every byte."""
    out: list[dict[int, list[tuple[int, int]]]] = [{} for _ in range(len(texts))]
    found = lines_holding(texts, needs) if needs else None
    if found is not None:
        row, data, bstart, bend, cstart, cend, bits = found
        index = np.int32 if len(data) < KernelLines.INT32_BYTES else np.int64
        k_lines = numba_kernels("dataaudit.textops._repetition_kernels")
        # the cores that need the same characters read the same lines, gathered once; where several do, RE2 reads
        # their alternation first and each core only the lines it matched (a digit on a line is common, a phone
        # number, a card or an address is not)
        for need in dict.fromkeys(needs):
            ks = [k for k in range(len(cores)) if needs[k] == need]
            maybe = np.flatnonzero(bits & np.uint8(1 << ks[0]))
            if maybe.size == 0:
                continue
            lines = Spans(data, bstart[maybe].astype(index), bend[maybe].astype(index)).to_arrow(k_lines)
            if len(ks) > 1:
                some = np.flatnonzero(_re2(lines, "|".join(f"(?:{cores[k]})" for k in ks)))
                lines, maybe = lines.take(pa.array(some, pa.int64())), maybe[some]
            for k in ks:
                held = maybe[_re2(lines, cores[k])]
                for t, a, b in zip(row[held].tolist(), cstart[held].tolist(), cend[held].tolist()):
                    out[t].setdefault(k, []).append((a, b))
        return out
    lines = pc.split_pattern(texts, pattern="\n")
    offsets = lines.offsets.to_numpy(zero_copy_only=False)
    flat = lines.flatten()
    chars = char_lengths(flat)
    start = np.cumsum(chars + 1) - (chars + 1)                 # where each line starts, counted over all the texts
    text_of = np.repeat(np.arange(len(texts)), np.diff(offsets))
    start = start - start[offsets[:-1]][text_of]                # ... in its own text
    off, data = string_buffers(flat)
    holds = np.zeros(len(flat), np.uint8)
    nonempty = np.flatnonzero(np.diff(off) > 0)
    if nonempty.size and needs:   # (the bytes from one non-empty line's start to the next one's are that line's)
        holds[nonempty] = np.bitwise_or.reduceat(need_table(needs)[data], off[nonempty])
    for k, core in enumerate(cores):
        maybe = np.flatnonzero(holds & np.uint8(1 << k)) if needs else np.arange(len(flat))
        if maybe.size == 0:
            continue
        found = pc.match_substring_regex(flat.take(pa.array(maybe, pa.int64())), pattern=core)
        held = maybe[to_bool(pc.fill_null(found, False))]
        for t, a, n in zip(text_of[held].tolist(), start[held].tolist(), chars[held].tolist()):
            out[t].setdefault(k, []).append((a, a + n))
    return out


def found_values(arr, prefilter: str, find, cores: tuple[str, ...] | None = None, gate=None,
                 needs: tuple[str, ...] | None = None, span=None) -> CheckOutput:
    """A masking check's output: the texts the RE2 `prefilter` keeps (one vectorized pass) are read by `find` (text
    -> [Finding]) in Python; value = the number of values found, detail = `summarize` of them. pii and secrets.
    `cores`: RE2 patterns, one per kind `find` looks for, and `needs` the characters each needs (`core_lines`); each
    candidate is then read with `lines=` the lines that hold each, and Python reads those lines alone. `gate`: see
    `candidates`. `span(text, found, lines)`: each flagged text's span as the check's `locate` gives it, from what
    `find` found (`lines`: the lines read, or None), so the audit does not read the text again."""
    arr = as_string_array(arr)
    n = len(arr)
    count = np.zeros(n, np.int64)
    detail = None
    where = None if span is None else np.full(n, None, dtype=object)
    rows = candidates(arr, prefilter, gate, lines_decide=cores is not None)
    if rows.size:
        detail = np.full(n, None, dtype=object)
        held = None if cores is None else core_lines(arr.take(pa.array(rows, pa.int64())), cores, needs)
        if held is not None:            # a text with no line to read holds nothing: not made a Python string
            some = [j for j, h in enumerate(held) if h]
            rows, held = rows[some], [held[j] for j in some]
        for j, (i, s) in enumerate(zip(rows, rows_as_str(arr, rows))):
            found = find(s) if held is None else find(s, lines=held[j])
            if found:
                count[i] = len(found)
                detail[i] = summarize(found)
                if where is not None:
                    where[i] = span(s, found, None if held is None else held[j])
    return CheckOutput(flagged=count > 0, value=count.astype(np.float64), detail=detail, span=where)


@register(
    "pii", target="text", severity="warning", params={}, locate=locate_pii, masks=mask_spans_pii,
    detail="{value:.0f} personal data values (emails, phones, IP addresses, card numbers)",
    description="Personal data: email addresses, phone numbers (international + formats and common national "
                "formats), globally routable IPv4/IPv6 addresses and payment card numbers with a valid issuer prefix "
                "and Luhn checksum. Not flagged: documentation domains (example.com, .test, any domain holding "
                "\"example\", ...), private, loopback "
                "and documentation IP ranges, dates, versions, ISBNs, UUIDs, hashes, bare digit runs. The detail "
                "shows a masked value (`email j***@e***.com`); the report masks it in snippets. value = number of "
                "values found.",
)
def pii(arr, **params) -> CheckOutput:
    return found_values(arr, _PREFILTER, find_pii, _CORES, gate=pii_gate, needs=_NEEDS, span=_first_span)


__all__ = ["pii", "find_pii", "Finding", "luhn", "card_brand", "mask_email"]
