"""The arrays `_spacy_kernels.chunk_rows` reads, derived from spaCy's regexes in spacy_en.json (the ones the Python
emulation compiles): the character classes per code point, the affix literals, hashes of the special cases' keys
and of the matcher's tokens and patterns.

The kernel hard-codes the shape of each regex alternative (literal, dot run, lookbehind class, ...); `build`
checks that the tables still have exactly those alternatives and raises ValueError otherwise (then the Python
emulation decides every chunk)."""
from __future__ import annotations

import hashlib
import json
import os
import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

P_PRE1 = 1          # a one-character prefix
P_SUF1 = 2          # a one-character suffix (no lookbehind)
P_INFSYM = 4        # a one-character infix (no lookaround)
P_INF_LOW = 8       # the infix "." lookbehind (lower case)
P_INF_UP = 16       # the infix "." lookahead (upper case)
P_ALPHA = 32        # the infix "," / hyphen / [:<>=/] lookahead (letters)
P_ALNUM = 64        # the infix hyphen / [:<>=/] lookbehind (letters, digits)
P_SUF_DOT = 128     # the suffix "." lookbehind
P_SUF_UP = 256      # the suffix "." two-character lookbehind (upper case)
P_TLD = 512         # the URL's top-level-domain class
P_DEC = 1024        # str.isdecimal (the URL's \d)
P_ISP = 2048        # Unicode category P* (spaCy's IS_PUNCT)
P_ISALPHA = 4096    # str.isalpha
P_PUNCTSET = 8192   # datatrove's PUNCTUATION_SET
P_PUNCTCH = 16384   # the Sentencizer's punct_chars
P_LITEND = 32768    # the last character of a multi-character suffix literal

HASH_MUL = np.uint64(0x100000001B3)
_MASK = (1 << 64) - 1


def text_hash(s: str) -> int:
    """_spacy_kernels._hash of a string."""
    h = 0
    for ch in s:
        h = (h * int(HASH_MUL) + ord(ch) + 1) & _MASK
    return h


def ids_hash(ids) -> int:
    h = 0
    for i in ids:
        h = (h * int(HASH_MUL) + i + 1) & _MASK
    return h


def alternatives(pattern: str) -> list[str]:
    """The top-level alternatives of a regex (split at "|" outside groups and classes)."""
    out, depth, cls, cur, i = [], 0, False, [], 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\":
            cur.append(pattern[i:i + 2])
            i += 2
            continue
        if cls:
            cls = ch != "]"
        elif ch == "[":
            cls = True
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "|" and depth == 0:
            out.append("".join(cur))
            cur = []
            i += 1
            continue
        cur.append(ch)
        i += 1
    out.append("".join(cur))
    return out


def _class_end(s: str, i: int) -> int:
    """The index after the character class starting at s[i] == "["."""
    j = i + 1
    while s[j] != "]":
        j += 2 if s[j] == "\\" else 1
    return j + 1


@lru_cache(1)
def _all() -> str:
    """Every code point, in order (a class's members are the positions it matches)."""
    return "".join(map(chr, range(0x110000)))


@lru_cache(16)
def _members(cls: str) -> np.ndarray:
    """The code points a class (or a one-character literal) matches: where re.sub changes the string of every
    code point (U+0000 itself tested on its own)."""
    every = _all()
    swapped = re.sub(cls, "\x00", every)
    a = np.frombuffer(every.encode("utf-32-le", "surrogatepass"), np.uint32)
    b = np.frombuffer(swapped.encode("utf-32-le", "surrogatepass"), np.uint32)
    hit = a != b
    hit[0] = re.match(cls, "\x00") is not None
    return np.flatnonzero(hit)


def _literal(alt: str) -> str | None:
    """The text of an alternative that is a plain literal, else None."""
    body = re.sub(r"\\(.)", r"\1", alt)
    return None if re.search(r"[\[\](){}*+?^$|]", re.sub(r"\\.", "", alt)) else body


@dataclass
class KernelTables:
    props: np.ndarray
    rule_hashes: np.ndarray
    max_rule: int
    lits: np.ndarray
    lit_off: np.ndarray
    n_plain: int
    vocab_h: np.ndarray
    vocab_id: np.ndarray
    vocab_cp: np.ndarray
    vocab_off: np.ndarray
    pat_h: np.ndarray
    pre_h: np.ndarray           # the hashes of every pattern's first 1, 2, ... tokens
    pat_ids: np.ndarray
    pat_off: np.ndarray
    piece_off: np.ndarray
    pieces: np.ndarray
    longest: int


def build(raw: dict, token_id: dict, patterns: dict, rules: dict) -> KernelTables:
    """The kernel's tables; the per-code-point classes (a second of regex and unicodedata work over every code
    point) come from the cache folder when built there before for the same spacy_en.json, builder and Unicode
    version."""
    from dataaudit.cache import cache_folder      # here: the kernels import nothing outside textops
    key = hashlib.sha256(json.dumps(raw, sort_keys=True).encode() + Path(__file__).read_bytes()
                         + unicodedata.unidata_version.encode()).hexdigest()[:24]
    path = cache_folder() / "spacy_en" / f"props-{key}.npy"
    props = None
    try:
        props = np.load(path, allow_pickle=False)
        if props.dtype != np.uint16 or props.shape != (0x110000,):
            props = None
    except (OSError, ValueError):
        pass
    fill = props is None
    tables = _tables(raw, token_id, patterns, rules, np.zeros(0x110000, np.uint16) if fill else props, fill)
    if fill:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f".{path.stem}.{os.getpid()}.npy")
            np.save(tmp, tables.props, allow_pickle=False)
            os.replace(tmp, path)
        except OSError:                       # an unwritable cache folder: built again next time
            pass
    return tables


def _tables(raw: dict, token_id: dict, patterns: dict, rules: dict, props: np.ndarray, fill: bool) -> KernelTables:
    """The tables, with the classes marked into `props` when `fill` (else `props` holds them already); every
    alternative is checked either way."""
    p = raw["patterns"]

    def mark(cps, bit):
        """Mark the code points `cps` (a list, or a class whose members are found here) with `bit`."""
        if fill:
            props[_members(cps) if isinstance(cps, str) else cps] |= bit

    # prefix: one-character literals and the symbol class; the others are hard-coded in _prefix_len
    special = {r"\+(?![0-9])", r"\.\.+", r"US\$", r"C\$", r"A\$", "……"}
    for alt in alternatives(p["prefix"]):
        assert alt.startswith("^"), alt
        alt = alt[1:]
        if alt in special:
            special.discard(alt)
        elif alt.startswith("[") and _class_end(alt, 0) == len(alt):
            mark(alt, P_PRE1)
        elif (lit := _literal(alt)) is not None and len(lit) == 1:
            mark([ord(lit)], P_PRE1)
        else:
            raise ValueError(f"prefix alternative not understood: {alt!r}")
    if special - {"……"}:
        raise ValueError(f"prefix alternatives missing: {special}")
    # suffix
    plain, after_digit = [], []
    hard = {r"\.\.+$", r"(?<=[0-9])\+$", r"(?<=°[FfCcKk])\.$"}
    dot_classes = []
    for alt in alternatives(p["suffix"]):
        assert alt.endswith("$"), alt
        if alt in hard:
            hard.discard(alt)
            continue
        body = alt[:-1]
        if body.startswith("(?<=[0-9])(?:") and body.endswith(")"):
            after_digit += [re.sub(r"\\(.)", r"\1", x) for x in alternatives(body[len("(?<=[0-9])(?:"):-1])]
        elif body.startswith("(?<=[") and body.endswith(r")\."):
            j = 4
            cls = []
            while body[j] == "[":
                e = _class_end(body, j)
                cls.append(body[j:e])
                j = e
            if body[j:] != r")\.":
                raise ValueError(f"suffix alternative not understood: {alt!r}")
            dot_classes.append(cls)
        elif body.startswith("[") and _class_end(body, 0) == len(body):
            mark(body, P_SUF1)
        elif (lit := _literal(body)) is not None:
            if len(lit) == 1:
                mark([ord(lit)], P_SUF1)
            else:
                plain.append(lit)
        else:
            raise ValueError(f"suffix alternative not understood: {alt!r}")
    if hard or sorted(len(c) for c in dot_classes) != [1, 2]:
        raise ValueError("suffix alternatives differ from the kernel's")
    for cls in dot_classes:
        if len(cls) == 1:
            mark(cls[0], P_SUF_DOT)
        else:
            if cls[0] != cls[1]:
                raise ValueError("suffix two-class lookbehind differs from the kernel's")
            mark(cls[0], P_SUF_UP)
    # infix
    alts = alternatives(p["infix"])
    if alts[0] != r"\.\.+" or alts[3] != r"(?<=[0-9])[+\-\*^](?=[0-9-])" or len(alts) != 8:
        raise ValueError("infix alternatives differ from the kernel's")
    mark(alts[1], P_INFSYM)
    mark(alts[2], P_INFSYM)

    def around(alt, middle):
        m = re.fullmatch(r"\(\?<=(\[.*\])\)" + middle + r"\(\?=(\[.*\])\)", alt)
        if not m:
            raise ValueError(f"infix alternative not understood: {alt!r}")
        return m.group(1), m.group(2)

    low, up = around(alts[4], r"\\\.")
    mark(low, P_INF_LOW)
    mark(up, P_INF_UP)
    a1, a2 = around(alts[5], r",")
    b1, b2 = around(alts[6], re.escape("(?:-|–|—|--|---|——|~)"))
    c1, c2 = around(alts[7], re.escape("[:<>=/]"))
    if not (a1 == a2 == b2 == c2 and b1 == c1):
        raise ValueError("infix lookaround classes differ from the kernel's")
    mark(a1, P_ALPHA)
    mark(b1, P_ALNUM)
    # the URL's top-level domain
    url = p["url"]
    j = url.index("]{2,63}")
    start = url.rindex("(?:[", 0, j) + 3
    mark(url[start:j + 1], P_TLD)
    # the statistics
    if fill:
        cps = np.arange(0x110000)
        every = _all()
        mark(cps[[c.isdecimal() for c in every]], P_DEC)
        mark(cps[[c.isalpha() for c in every]], P_ISALPHA)
        mark(cps[[unicodedata.category(c)[0] == "P" for c in every]], P_ISP)
    mark([ord(c) for c in raw["punctuation"]], P_PUNCTSET)
    mark([ord(c) for c in raw["punct_chars"]], P_PUNCTCH)
    # literals: plain multi-character suffixes first, then those after a digit
    lits = plain + after_digit
    lit_off = np.cumsum([0] + [len(x) for x in lits]).astype(np.int64)
    flat = np.array([ord(c) for x in lits for c in x], dtype=np.int64)
    rule_hashes = np.unique(np.array([text_hash(k) for k in rules], dtype=np.uint64))
    vocab = sorted(token_id, key=lambda w: text_hash(w))
    vocab_h = np.array([text_hash(w) for w in vocab], dtype=np.uint64)
    if len(np.unique(vocab_h)) != len(vocab_h):
        raise ValueError("two matcher tokens share a hash")
    mark([ord(x[-1]) for x in lits], P_LITEND)
    # each pattern's special case: the lengths of its pieces (which spell its key)
    by_hash = {}
    for toks, key in patterns.items():
        pieces = rules[key]
        if "".join(pieces) != key or "".join(toks) != key:
            raise ValueError(f"special case {key!r} does not spell its key")
        ids = [token_id[w] for w in toks]
        by_hash[ids_hash(ids)] = ([len(x) for x in pieces], ids)
    if len(by_hash) != len(patterns):
        raise ValueError("two matcher patterns share a hash")
    pat_h = np.array(sorted(by_hash), dtype=np.uint64)
    lengths = [by_hash[h][0] for h in sorted(by_hash)]
    pat_ids = [by_hash[h][1] for h in sorted(by_hash)]
    return KernelTables(props=props, rule_hashes=rule_hashes, max_rule=max(map(len, rules)), lits=flat,
                        lit_off=lit_off, n_plain=len(plain), vocab_h=vocab_h,
                        vocab_id=np.array([token_id[w] for w in vocab], dtype=np.int64),
                        vocab_cp=np.array([ord(c) for w in vocab for c in w], dtype=np.int64),
                        vocab_off=np.cumsum([0] + [len(w) for w in vocab]).astype(np.int64), pat_h=pat_h,
                        pre_h=np.unique(np.array([ids_hash(x[:j]) for x in pat_ids for j in range(1, len(x) + 1)],
                                                 dtype=np.uint64)),
                        pat_ids=np.array([i for x in pat_ids for i in x], dtype=np.int64),
                        pat_off=np.cumsum([0] + [len(x) for x in pat_ids]).astype(np.int64),
                        piece_off=np.cumsum([0] + [len(x) for x in lengths]).astype(np.int64),
                        pieces=np.array([n for x in lengths for n in x], dtype=np.int64),
                        longest=max(map(len, patterns)))
