"""Text checks: empty text, control characters, mojibake, long unbroken runs, repetition (and the long texts it
sees the start of), non-text ratio.

Every check takes a pa.Array (or ChunkedArray) of string / large_string with nulls and returns one flag and
one value per sample. The work is done by Arrow's RE2 regex kernels over the whole array and numpy over
flattened list values; Python only loops over the *flagged* rows to write their detail strings.

Regex notes (RE2, as compiled by Arrow for utf8 data): `\\s` is ASCII only ([\\t\\n\\f\\r ]), `\\x{...}` is a
code point, `\\p{Han}` etc. are Unicode scripts, `\\p{L}` etc. general categories (`\\p{Cn}` is not
supported: unassigned code points are matched as the complement of all other categories). RE2 counted
repetition is capped at 1000 and expands its operand, so counted repeats use small classes only.
"""
from __future__ import annotations

import re
import unicodedata
from collections import Counter

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dataaudit.textops import codepoints

from .base import CheckOutput, register
from .text_common import (as_string_array, beyond, char_lengths, clip, count_regex, flatten_lists, null_mask,
                          rows_as_str, safe_ratio, segment_max, to_bool)
from .text_long import CHUNK_BYTES, LONG_DOCUMENT_BYTES, byte_lengths, chunks, head
from .text_repetition import BLOCK_LINES, DUP_NS, MIN_REPEAT_CHARS, TOP_NS, repetition_stats


def _cls(codepoints, ranges=()) -> str:
    """Body of an RE2 character class from single code points and (lo, hi) ranges."""
    parts = [f"\\x{{{c:X}}}" for c in codepoints]
    parts += [f"\\x{{{lo:X}}}-\\x{{{hi:X}}}" for lo, hi in ranges]
    return "".join(parts)


def _py_cls(codepoints, ranges=()) -> str:
    """The same class body in Python `re` syntax (detail strings, the URL skip of long_unbroken_run)."""
    parts = [re.escape(chr(c)) for c in codepoints]
    parts += [f"{re.escape(chr(lo))}-{re.escape(chr(hi))}" for lo, hi in ranges]
    return "".join(parts)


# ---------------------------------------------------------------------------------------------- empty_text

# Whitespace for "whitespace-only": ASCII whitespace incl. \v, Unicode separators (\p{Z}: NBSP, ideographic
# space, ...), NEL, and the invisible zero-width characters that make a text look empty (ZWSP, ZWNJ, ZWJ,
# word joiner, BOM / ZWNBSP, Mongolian vowel separator).
_INVISIBLE = (0x0B, 0x85, 0x180E, 0x200B, 0x200C, 0x200D, 0x2060, 0xFEFF)
_BLANK_RE = "^[\\s\\p{Z}" + _cls(_INVISIBLE) + "]*$"


@register(
    "empty_text", target="text", turns="other", severity="warning", params={},
    detail="text is null, empty or whitespace-only ({value:.0f} chars)",
    description="Null, empty, or whitespace-only text (Unicode spaces and zero-width characters count as "
                "whitespace); an assistant turn is `empty_reply`'s. value = length in characters (0 for null).",
)
def empty_text(arr, **params) -> CheckOutput:
    arr = as_string_array(arr)
    length = char_lengths(arr)
    is_null = null_mask(arr)
    flagged = is_null | to_bool(pc.match_substring_regex(arr, pattern=_BLANK_RE))
    detail = np.full(len(arr), None, dtype=object)
    detail[flagged & (length > 0)] = "whitespace-only"
    detail[flagged & (length == 0)] = "empty string"
    detail[is_null] = "null"
    ws = np.flatnonzero(flagged & (length > 0))
    for i, s in zip(ws, rows_as_str(arr, ws)):
        detail[i] = f"whitespace-only ({len(s)} chars: {clip(s, 24)})"
    return CheckOutput(flagged=flagged, value=length.astype(np.float64), detail=detail)


# ------------------------------------------------------------------------------------------- control_chars

# C0 controls except \t \n \r, DEL, C1 controls. \v (0x0B) and \f (0x0C) are legitimate in real text (form
# feed = page break in pdftotext output and old source files; vertical tab = Word's manual line break), so
# they are not counted unless count_ff_vt=True.
_CTRL = _cls((0x7F,), ((0x00, 0x08), (0x0E, 0x1F), (0x80, 0x9F)))
_CTRL_FFVT = _cls((0x0B, 0x0C))
_PY_CTRL = re.compile("[" + _py_cls((0x7F,), ((0x00, 0x08), (0x0E, 0x1F), (0x80, 0x9F))) + "]")
_PY_CTRL_FFVT = re.compile("[" + _py_cls((0x7F, 0x0B, 0x0C), ((0x00, 0x08), (0x0E, 0x1F), (0x80, 0x9F))) + "]")


def _codepoint_summary(chars, limit: int = 4) -> str:
    c = Counter(chars)
    parts = [f"U+{ord(ch):04X}x{k}" if k > 1 else f"U+{ord(ch):04X}" for ch, k in c.most_common(limit)]
    if len(c) > limit:
        parts.append(f"+{len(c) - limit} more")
    return ", ".join(parts)


def _locate_control(text: str, count_ff_vt: bool = False, **params) -> tuple[int, int] | None:
    """The first control character counted (the report's highlighted span)."""
    m = (_PY_CTRL_FFVT if count_ff_vt else _PY_CTRL).search(text)
    return m.span() if m else None


@register(
    "control_chars", target="text", severity="warning", params={"max_count": 0, "count_ff_vt": False},
    locate=_locate_control,
    detail="{value:.0f} control characters (max {max_count})",
    description="Counts C0 control characters other than \\t \\n \\r (\\f and \\v only if count_ff_vt), DEL "
                "and C1 controls U+0080-U+009F; flags count > max_count. value = count.",
)
def control_chars(arr, max_count: int = 0, count_ff_vt: bool = False, **params) -> CheckOutput:
    arr = as_string_array(arr)
    pattern = "[" + _CTRL + (_CTRL_FFVT if count_ff_vt else "") + "]"
    count, _ = codepoints.count_matching(arr, pattern)     # one character each: a table, not a regex pass
    flagged = count > max_count
    detail = None
    rows = np.flatnonzero(flagged)
    if rows.size:
        py = _PY_CTRL_FFVT if count_ff_vt else _PY_CTRL
        detail = np.full(len(arr), None, dtype=object)
        for i, s in zip(rows, rows_as_str(arr, rows)):
            detail[i] = f"{count[i]} control chars (max {max_count}): {_codepoint_summary(py.findall(s))}"
    return CheckOutput(flagged=flagged, value=count.astype(np.float64), detail=detail)


# ------------------------------------------------------------------------------------------------ mojibake

# What a UTF-8 continuation byte 0x80-0xBF becomes when the bytes are decoded as CP1252 or Latin-1:
# 0x80-0x9F -> the CP1252 characters below (or C1 controls U+0080-U+009F under Latin-1 / for the five bytes
# CP1252 leaves undefined), 0xA0-0xBF -> U+00A0-U+00BF.
_CP1252_80_9F = (0x20AC, 0x201A, 0x0192, 0x201E, 0x2026, 0x2020, 0x2021, 0x02C6, 0x2030, 0x0160, 0x2039,
                 0x0152, 0x017D, 0x2018, 0x2019, 0x201C, 0x201D, 0x2022, 0x2013, 0x2014, 0x02DC, 0x2122,
                 0x0161, 0x203A, 0x0153, 0x017E, 0x0178)
# Of those, the ones that legitimately follow an accented letter at the end of a word in real European text
# (quotes, dashes, ellipsis, guillemets, NBSP): a sequence made only of such characters after the lead
# ("allé…»", "CAFÉ”", "Fuß“", "à\u00a0«") is not counted. After "Ã" (which ends Portuguese words in capitals:
# "IRMÃ”") only the closing ones are excluded, so "Ã\u00a0" (mojibake of "à") still counts.
_PROSE = (0xA0, 0xAB, 0xBB, 0x2026, 0x2018, 0x2019, 0x201C, 0x201D, 0x201E, 0x201A, 0x2013, 0x2014,
          0x2039, 0x203A)
_CLOSING = (0xBB, 0x2026, 0x2019, 0x201D, 0x2013, 0x2014)
_CONT_CPS = tuple(range(0x80, 0xC0)) + _CP1252_80_9F
_STRONG_CPS = tuple(c for c in _CONT_CPS if c not in _PROSE)
_NOT_CLOSING_CPS = tuple(c for c in _CONT_CPS if c not in _CLOSING)


def _mojibake_regex(cls) -> str:
    cont = "[" + cls(_CONT_CPS) + "]"
    strong = "[" + cls(_STRONG_CPS) + "]"
    lead2 = "[" + cls((), ((0xC2, 0xDF),)) + "]"       # Â..ß  = bytes C2-DF (2-byte lead)
    lead3 = "[" + cls((), ((0xE0, 0xEF),)) + "]"       # à..ï  = bytes E0-EF (3-byte lead)
    lead4 = "[" + cls((), ((0xF0, 0xF4),)) + "]"       # ð..ô  = bytes F0-F4 (4-byte lead)
    not_closing = "[" + cls(_NOT_CLOSING_CPS) + "]"
    a_circ, a_tilde = cls((0xC2,)), cls((0xC3,))       # Â, Ã: leads of U+0080-U+00FF
    fffd = cls((0xFFFD,))
    return "|".join([
        f"{lead4}{cont}{cont}{cont}",
        f"{lead3}(?:{strong}{cont}|{cont}{strong})",
        f"{a_circ}{cont}",
        f"{a_tilde}{not_closing}",
        f"{lead2}{strong}",
        fffd,
    ])


_MOJIBAKE_RE = _mojibake_regex(_cls)
_PY_MOJIBAKE = re.compile(_mojibake_regex(_py_cls))


def _may_hold_mojibake(arr: pa.Array) -> np.ndarray:
    """bool per row: the row's UTF-8 holds byte 0xC3 or U+FFFD (EF BF BD). Every match of _MOJIBAKE_RE starts with
    a lead U+00C2-U+00F4 (encoded C3 xx) or is U+FFFD, so only these rows can match: found at memory speed."""
    return codepoints.holds_c3_or_fffd(arr)


def _repair(seq: str) -> str:
    """Best-effort re-decoding of one suspicious sequence, for the detail string."""
    if seq == "\ufffd":
        return seq
    try:
        raw = bytes(ord(ch) if ord(ch) < 0x100 else ch.encode("cp1252")[0] for ch in seq)
        return raw.decode("utf-8")
    except (UnicodeError, ValueError):
        return "?"


def _locate_mojibake(text: str, **params) -> tuple[int, int] | None:
    """The first mojibake sequence or U+FFFD."""
    m = _PY_MOJIBAKE.search(text)
    return m.span() if m else None


@register(
    "mojibake", target="text", severity="warning", params={"min_count": 1}, locate=_locate_mojibake,
    detail="{value:.0f} mojibake sequences / U+FFFD (min {min_count})",
    description="UTF-8 decoded as Latin-1/CP1252 ('Ã©' for 'é', 'â€™' for '’', 'è®­ç»ƒ' for '训练') and U+FFFD "
                "replacement characters. Counts lead byte (U+00C2-U+00F4) + continuation-byte characters "
                "sequences; flags count >= min_count. value = count.",
)
def mojibake(arr, min_count: int = 1, **params) -> CheckOutput:
    arr = as_string_array(arr)
    rows = np.flatnonzero(_may_hold_mojibake(arr))
    if rows.size * 2 > len(arr):   # mostly Latin-1 letters (European text): the regex on every row
        count = count_regex(arr, _MOJIBAKE_RE)
    else:  # the regex only where a match can start (usually a few rows; none in English, code or Chinese)
        count = np.zeros(len(arr), np.int64)
        if rows.size:
            count[rows] = count_regex(arr.take(pa.array(rows)), _MOJIBAKE_RE)
    flagged = count >= max(min_count, 1)
    detail = None
    rows = np.flatnonzero(flagged)
    if rows.size:
        detail = np.full(len(arr), None, dtype=object)
        for i, s in zip(rows, rows_as_str(arr, rows)):
            seqs = Counter(_PY_MOJIBAKE.findall(s))
            shown = ", ".join(
                ("U+FFFD" if q == "\ufffd" else f"'{q}'→'{_repair(q)}'") + (f" x{k}" if k > 1 else "")
                for q, k in seqs.most_common(3))
            detail[i] = f"{count[i]} mojibake sequences: {shown}"
    return CheckOutput(flagged=flagged, value=count.astype(np.float64), detail=detail)


# --------------------------------------------------------------------------------------- long_unbroken_run

# Characters that end a run: whitespace / separators, and scripts written without spaces between words
# (their text would otherwise be one long "run"): Han, kana, Hangul, Bopomofo, Yi, Thai, Lao, Khmer, Myanmar,
# Tibetan, Javanese, Balinese, plus CJK symbols & punctuation (U+3000-U+30FF incl. "ー" and "・"), CJK
# compatibility forms, fullwidth/halfwidth forms, and ZWSP (used as a word separator in Thai/Khmer).
_SCRIPTS_NO_SPACES = ("Han", "Hiragana", "Katakana", "Hangul", "Bopomofo", "Yi", "Thai", "Lao", "Khmer",
                      "Myanmar", "Tibetan", "Javanese", "Balinese")
_BREAK = ("\\s\\p{Z}" + "".join(f"\\p{{{s}}}" for s in _SCRIPTS_NO_SPACES)
          + _cls((0x0B, 0x85, 0x200B), ((0x3000, 0x30FF), (0xFE30, 0xFE4F), (0xFF00, 0xFFEF))))
_BREAK_RE = "[" + _BREAK + "]+"


_URL_HINT_RE = "://|www\\."


def _longest_run(arr: pa.Array) -> np.ndarray:
    """Length of the longest piece between run breaks, per row (0 for null/empty)."""
    return codepoints.longest_run(arr, "[" + _BREAK + "]")


# Markdown table separators and horizontal rules (`|-----|:---:|`, `-----`, `=====`): layout, not a blob.
_RULE_RE = "[-=_*~#|:]{3,}"


def _url_re(url_max: int) -> str:
    """URLs (scheme:// or www.) of up to url_max characters after the scheme; a longer one keeps its tail.
    (The body is "not ASCII whitespace / Unicode separator": a counted repeat of the full run-break class
    with its script properties makes RE2 ~50x slower.) The RE2 reference of `_skip_urls_and_rules`."""
    return f"(?:[A-Za-z][A-Za-z0-9+.-]{{0,15}}://|www\\.)[^\\s\\p{{Z}}]{{1,{int(url_max)}}}"


# \p{Z} (Unicode separators), for the Python `re` twin of _url_re; RE2's \s is [\t\n\f\r ]
_SEPARATORS = (0x20, 0xA0, 0x1680, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000)
_SEPARATOR_RANGES = ((0x2000, 0x200A),)


def _skip_urls_and_rules(lines: pa.Array, url_max: int | None) -> pa.Array:
    """`lines` (no "\\n" in any) with every rule and URL (RE2: `_RULE_RE|_url_re(url_max)`) replaced by one
    space. Python `re` over the lines joined by "\\n", once: RE2 compiles the counted repeat of a Unicode class
    into a program costing ~30 ms per call, more than the run kernel over a whole batch."""
    pattern = _RULE_RE
    if url_max:
        body = "\\t\\n\\f\\r" + _py_cls(_SEPARATORS, _SEPARATOR_RANGES)
        pattern += f"|(?:[A-Za-z][A-Za-z0-9+.-]{{0,15}}://|www\\.)[^{body}]{{1,{int(url_max)}}}"
    joined = "\n".join(lines.to_pylist())
    return pa.array(re.sub(pattern, " ", joined).split("\n"), lines.type)


# Code: a call chain, a template type, an argument or an include path is one long "word"
# (`Foo.bar(baz.get(Qux.Quux().getClass()));` is 113 characters, `::std::tuple<at::Tensor,at::Tensor,...>` 143,
# `request_serializer=pb2.ListRequest.SerializeToString,` 103). A run holding code's syntax (brackets, braces,
# parentheses, angle brackets, quotes, a colon, a comma or a semicolon), only printable ASCII, and no 64 characters
# of base64's alphabet in a row may reach code_max_run: base64 and hex hold none of that syntax, binary decoded as
# text holds other characters, and a blob quoted in code or in a data: URL holds the long stretch (an identifier is
# shorter); minified code is longer still.
_CODE_SYNTAX_RE = "[][(){}<>:,;\"']"
_NOT_CODE_RE = "[A-Za-z0-9+/_-]{64}|[^\\x21-\\x7e]"


def _limits(pieces: pa.Array, max_run: int, code_max_run: int | None) -> np.ndarray:
    """Each run's limit: code_max_run (if larger) for a run of code (`_CODE_SYNTAX_RE`, and not `_NOT_CODE_RE`),
    else max_run."""
    limit = np.full(len(pieces), max_run, np.int64)
    if code_max_run and code_max_run > max_run and len(pieces):
        code = to_bool(pc.match_substring_regex(pieces, _CODE_SYNTAX_RE))
        if code.any():
            code &= ~to_bool(pc.match_substring_regex(pieces, _NOT_CODE_RE))
        limit[code] = code_max_run
    return limit


def _locate_run(text: str, max_run: int = 100, url_max: int = 400, code_max_run: int = 300,
                **params) -> tuple[int, int] | None:
    """The first run over its limit, measured as the check does (line by line, URLs and rules skipped: each is
    replaced by a space, so every piece left is a piece of the original line)."""
    url_max = min(int(url_max), 1000) if url_max and url_max > 0 else None
    lines = text.split("\n")
    skipped = _skip_urls_and_rules(pa.array(lines, pa.string()), url_max)
    split = pc.split_pattern_regex(skipped, pattern=_BREAK_RE)
    pieces = split.flatten()                                    # every line's pieces, in order: one pass for all
    over = np.flatnonzero(char_lengths(pieces) > _limits(pieces, max_run, code_max_run))
    if over.size == 0:
        return None
    line_of = np.searchsorted(split.offsets.to_numpy(zero_copy_only=False), over, side="right") - 1
    starts = np.concatenate(([0], np.cumsum([len(line) + 1 for line in lines])))
    for i, k in zip(over.tolist(), line_of.tolist()):
        piece = pieces[i].as_py()
        if (at := lines[k].find(piece)) >= 0:
            return int(starts[k]) + at, int(starts[k]) + at + len(piece)
    return None


@register(
    "long_unbroken_run", target="text", severity="warning",
    params={"max_run": 100, "url_max": 400, "code_max_run": 300},
    locate=_locate_run,
    detail="longest run without whitespace: {value:.0f} chars (max {max_run})",
    description="A run of more than max_run characters with no whitespace (base64, hex dumps, minified "
                "code). CJK, kana, Hangul, Thai and other scripts written without spaces end a run; URLs "
                "(scheme:// or www.) of up to url_max characters are skipped (0: count them; a longer URL "
                "keeps its tail), and so are markdown table separators and rules (3+ of - = _ * ~ # | :). "
                "A run holding code's syntax (brackets, braces, parentheses, angle brackets, quotes, a colon, "
                "a comma or a semicolon: a call chain such as `a.b(c.d().e());`, a template type, an argument "
                "list; base64 and hex hold none), only printable ASCII (not binary decoded as text) and no 64 "
                "characters of base64's alphabet in a row (a blob quoted in code or in a data: URL) may reach "
                "code_max_run characters (0: max_run); minified code is longer. value = the longest run over its limit (the longest run when none is).",
)
def long_unbroken_run(arr, max_run: int = 100, url_max: int = 400, code_max_run: int = 300,
                      **params) -> CheckOutput:
    arr = as_string_array(arr)
    longest = _longest_run(arr)
    url_max = min(int(url_max), 1000) if url_max and url_max > 0 else None
    hint = _RULE_RE if url_max is None else f"{_RULE_RE}|{_URL_HINT_RE}"
    # re-measure the rows over max_run without their URLs and rules, line by line (neither a match nor a run
    # crosses a "\n"), running the replacement only on the lines that hold a hint of one: on a 20 kB source
    # file the URL regex over the whole text cost 10x the run kernel; then run by run, each against its limit
    rows = np.flatnonzero(longest > max_run)
    flagged = np.zeros(len(arr), bool)
    detail = span = None
    if rows.size:
        lines, parent, counts = flatten_lists(pc.split_pattern(arr.take(pa.array(rows)), pattern="\n"))
        raw = lines
        hinted = to_bool(pc.match_substring_regex(lines, pattern=hint))
        if hinted.any():
            lines = pc.replace_with_mask(lines, pa.array(hinted),
                                         _skip_urls_and_rules(lines.filter(pa.array(hinted)), url_max))
        # each line's longest run by the kernel; only the lines holding one over max_run are cut into runs by RE2
        # (its Unicode classes read ~10x slower than the kernel), and only those runs get their limit
        per_line = _longest_run(lines)
        big = np.flatnonzero(per_line > max_run)
        pieces, in_big, _ = flatten_lists(pc.split_pattern_regex(lines.take(pa.array(big, pa.int64())),
                                                                 pattern=_BREAK_RE))
        line_of = big[in_big]
        sizes = char_lengths(pieces)
        limits = np.full(len(pieces), max_run, np.int64)
        long = np.flatnonzero(sizes > max_run)
        limits[long] = _limits(pieces.take(pa.array(long, pa.int64())), max_run, code_max_run)
        row_of = parent[line_of]
        per_row = np.bincount(row_of, minlength=len(rows))
        over = np.where(sizes > limits, sizes, 0)
        worst = segment_max(over, per_row, empty=0)             # per row: the longest run over its limit
        longest[rows] = np.where(worst > 0, worst, segment_max(per_line, counts, empty=0))
        flagged[rows] = worst > 0
        if flagged.any():
            detail = np.full(len(arr), None, dtype=object)
            best = np.flatnonzero((over > 0) & (over == worst[row_of]))
            keep = np.ones(len(best), dtype=bool)
            keep[1:] = row_of[best][1:] != row_of[best][:-1]     # the first such run of each row
            for r, k in zip(row_of[best[keep]].tolist(), best[keep].tolist()):
                i = rows[r]
                where = f"max {limits[k]} for code" if limits[k] != max_run else f"max {max_run}"
                detail[i] = f"longest run without whitespace: {longest[i]} chars ({where}): " \
                            f"{quoted(pieces[k].as_py())}"
            span = _first_runs(raw, parent, counts, pieces, line_of, np.flatnonzero(over > 0), rows, len(arr))
    return CheckOutput(flagged=flagged, value=longest.astype(np.float64), detail=detail, span=span)


def _first_runs(lines: pa.Array, parent: np.ndarray, counts: np.ndarray, pieces: pa.Array, line_of: np.ndarray,
                over: np.ndarray, rows: np.ndarray, n: int) -> np.ndarray:
    """Per text, the span `_locate_run` gives: the first run over its limit (`over`: those runs, indexes into
    `pieces`, in text order), found in its line (`lines`: the texts `rows` line by line, `parent` the text of each;
    `line_of` the line of each piece)."""
    width = char_lengths(lines) + 1                             # each line and its "\n"
    start = np.cumsum(width) - width
    start -= start[(np.cumsum(counts) - counts)[parent]]      # where each line starts in its text
    span = np.full(n, None, dtype=object)
    for k in over.tolist():
        line = int(line_of[k])
        i = int(rows[parent[line]])
        if span[i] is None:
            piece = pieces[k].as_py()
            if (at := lines[line].as_py().find(piece)) >= 0:
                span[i] = (int(start[line]) + at, int(start[line]) + at + len(piece))
    return span


def quoted(text: str, chars: int = 48) -> str:
    """A piece of the data as a detail quotes it: its first `chars` characters, unless it holds what pii or secrets
    would mask (a token, a key, an email): then only that it was masked (details go to flags.parquet, the console
    and the page)."""
    from .pii import find_pii                    # here, not at the top: they register after the text checks
    from .secrets import may_hold_secret

    if may_hold_secret(text) or find_pii(text, first=True):
        return "[masked: it holds a key, token or personal data]"
    return clip(text, chars)


# ---------------------------------------------------------------------------------------------- repetition

# Gopher statistics and their thresholds (datatrove's GopherRepetitionFilter defaults).
_GOPHER = {"dup_line_frac": 0.30, "dup_line_char_frac": 0.20,
           "top_2_gram": 0.20, "top_3_gram": 0.18, "top_4_gram": 0.16,
           "dup_5_gram": 0.15, "dup_6_gram": 0.14, "dup_7_gram": 0.13, "dup_8_gram": 0.12,
           "dup_9_gram": 0.11, "dup_10_gram": 0.10}
# min_words: Gopher's fractions are for whole web documents; in a 50-150-word text one phrase said two or three
# times ("how many", a repeated 10-gram) already passes a threshold (GSM8K word problems do), so under min_words
# words an n-gram fraction counts in proportion to the words (the same repeated amount as min_words words need).
_REP_PARAMS = {**_GOPHER, "max_repeats": 5, "min_repeat_chars": MIN_REPEAT_CHARS, "skip_structure": True,
               "min_words": 150, "min_chars": 0, "turn_dup_frac": 0.5, "answer_words": 200,
               "answer_dup_frac": 0.3, "max_word_repeats": 10, "block_lines": BLOCK_LINES}
# The duplicate fractions of whole documents: on a chat reply, a numbered list of steps, a quoted premise or a
# song's chorus repeats lines and n-grams by design (0.10-0.33 on LLaMA-Factory's DPO and KTO demos: every flag
# there on a reply that was not a loop), while a reply looping one sentence 8+ times repeats most of itself.
# On conversation turns each must also pass turn_dup_frac (0: the document thresholds alone).
_DOCUMENT_STATS = ("dup_line_frac", "dup_line_char_frac", *(f"dup_{k}_gram" for k in range(5, 11)))


@register(
    "repetition", target="text", turns="trained", split_turns=True, severity="warning", params=dict(_REP_PARAMS),
    detail="repetition statistic at {value:.2f}x its threshold",
    description="Gopher (MassiveText) repetition filter, as datatrove's GopherRepetitionFilter: duplicated "
                "line fraction, characters in duplicated lines, characters in the most frequent word 2/3/4-"
                "gram, characters in duplicated word 5..10-grams; plus sentence runs: one sentence or line "
                "(>= min_repeat_chars characters; split at . ! ? 。！？ and line ends) coming back more than "
                "max_repeats times, each within 3 sentences of the last (a model looping; needs no min_words; "
                "a CJK character counts as two of the min_repeat_chars); and word runs: one unit of 1-3 words "
                "(of 2+ characters) said more than max_word_repeats times back to back ('no no no ...', no "
                "punctuation needed). "
                "With skip_structure, code (fenced or not), table rows, JSON lines and symbol-only lines in "
                "code count nowhere, nor does any line of a code file (>= 10% and >= 3 code lines), headings / "
                "'Speaker:' labels / key: value lines count only for sentence runs, list items lose their "
                "marker and count as words only when 50+ words long, and so do block_lines+ consecutive lines of "
                "under 25 words each (unmarked options, worked steps, verse; 0: off). A threshold of None/0 "
                "disables its statistic; an n-gram statistic of a text of W < min_words words counts "
                "x W/min_words (one phrase said twice in a short text is no repetition), and a text of under "
                "answer_words words (an answer or reply, not a web document: worked steps reuse their phrasing) "
                "needs its duplicated 5..10-grams and its top 2/3/4-gram to cover answer_dup_frac of it too, and "
                "the characters of its duplicated lines when none comes back within 3 sentences (a chorus; a loop "
                "repeats in a row); all need >= min_chars characters. In conversations only the assistant's turns "
                "are judged (a prompt is not trained on, "
                "and a few-shot prompt repeats its pattern by design), with the top 2/3/4-gram fractions and sentence runs as for documents, the duplicated line and 5..10-gram "
                "fractions (made for web documents: lists and quotes repeat) only over turn_dup_frac (a loop "
                "repeats most of the reply; 0: the document thresholds). value = largest statistic/threshold "
                "ratio (> 1 means flagged).",
)
def repetition(arr, in_conversation: bool = False, **params) -> CheckOutput:
    p = {**_REP_PARAMS, **params}
    if in_conversation and p["turn_dup_frac"]:
        p.update({k: max(float(p[k]), float(p["turn_dup_frac"])) for k in _DOCUMENT_STATS if p.get(k)})
    arr = as_string_array(arr)
    n = len(arr)
    names = [k for k in _GOPHER if p.get(k)]
    repeats = bool(p.get("max_repeats"))
    if not names and not repeats and not p.get("max_word_repeats"):
        return CheckOutput(flagged=np.zeros(n, dtype=bool), value=np.zeros(n), detail=None)
    # bounded memory: each text's first LONG_DOCUMENT_BYTES (long_document flags the others), CHUNK_BYTES at once
    arr = head(arr, LONG_DOCUMENT_BYTES)
    parts = [_repetition(arr.slice(a, b - a), p, names, repeats) for a, b in chunks(arr, CHUNK_BYTES)]
    if len(parts) == 1:
        return parts[0]
    details = [part.detail if part.detail is not None else np.full(len(part.flagged), None, dtype=object)
               for part in parts]
    return CheckOutput(flagged=np.concatenate([part.flagged for part in parts]),
                       value=np.concatenate([part.value for part in parts]),
                       detail=None if all(part.detail is None for part in parts) else np.concatenate(details))


def _repetition(arr: pa.Array, p: dict, names: list[str], repeats: bool) -> CheckOutput:
    """The repetition check on a run of texts (see `repetition`)."""
    n = len(arr)
    top_ns = tuple(k for k in TOP_NS if f"top_{k}_gram" in names)
    dup_ns = tuple(k for k in DUP_NS if f"dup_{k}_gram" in names)
    lines = "dup_line_frac" in names or "dup_line_char_frac" in names
    word_run = bool(p.get("max_word_repeats"))
    stats = repetition_stats(arr, top_ns=top_ns, dup_ns=dup_ns, lines=lines,
                             skip_structure=bool(p["skip_structure"]), repeats=repeats,
                             min_repeat_chars=int(p["min_repeat_chars"] or 0), word_run=word_run,
                             block_lines=int(p["block_lines"] or 0))
    thresholds = {k: float(p[k]) for k in names}
    if repeats:
        thresholds["sentence_run"] = float(p["max_repeats"])
    if word_run:
        thresholds["word_run"] = float(p["max_word_repeats"])
    keys = list(thresholds)
    ratios = np.stack([stats[k] / thresholds[k] for k in keys])          # [n_stats, n_docs]
    if (top_ns or dup_ns) and p["min_words"]:
        # under min_words words an n-gram fraction counts in proportion (see _REP_PARAMS)
        short = np.minimum(stats.n_words / float(p["min_words"]), 1.0)
        ratios[[k.endswith("_gram") for k in keys]] *= short
    floor = float(p["answer_dup_frac"] or 0)
    if (dup_ns or top_ns) and floor and p["answer_words"]:
        # a text of under answer_words words is an answer rather than a web document: its duplicated n-grams, and
        # its most frequent one, must also cover answer_dup_frac of it (worked steps reuse their phrasing, 0.15-0.27
        # of a GSM8K question and answer; a loop repeats more); so must its duplicated lines when none comes back
        # within 3 sentences of itself (a song's chorus sung twice is 0.21 of it; a loop repeats in a row)
        answer = stats.n_words < float(p["answer_words"])
        spread = answer & (stats["sentence_run"] == 0) if "sentence_run" in stats else np.zeros(n, dtype=bool)
        for j, k in enumerate(keys):
            rows = answer if k.endswith("_gram") else spread if k == "dup_line_char_frac" else None
            if rows is not None and thresholds[k] < floor:     # (in place where `rows`: no gathers of the rows)
                np.minimum(ratios[j], stats[k] / floor, out=ratios[j], where=rows)
    if p["min_chars"]:
        ratios[:, char_lengths(arr) < p["min_chars"]] = 0.0
    which = np.argmax(ratios, axis=0)
    value = ratios[which, np.arange(n)] if n else np.zeros(0)
    flagged = value > 1.0
    detail = None
    rows = np.flatnonzero(flagged)
    if rows.size:
        detail = np.full(n, None, dtype=object)
        for i in rows:
            k = keys[which[i]]
            fired = int((ratios[:, i] > 1.0).sum())
            more = f" (+{fired - 1} more)" if fired > 1 else ""
            if k == "word_run":
                detail[i] = f"word_run={stats[k][i]:.0f} > {thresholds[k]:.0f}{more}: one to three words said " \
                            f"{stats[k][i]:.0f} times in a row"
            elif k == "sentence_run":
                detail[i] = (f"sentence_run={stats[k][i]:.0f} > {thresholds[k]:.0f}{more}: "
                             f"'{quoted(stats.repeated_text(i))}'")
            else:
                detail[i] = f"{k}={beyond(stats[k][i], thresholds[k])} > {thresholds[k]:g}{more}"
    return CheckOutput(flagged=flagged, value=np.asarray(value, dtype=np.float64), detail=detail)


@register(
    "long_document", target="text", severity="warning",
    detail=f"{{value:.0f}} bytes: repetition statistics on the first {LONG_DOCUMENT_BYTES} bytes only",
    description=f"A text longer than {LONG_DOCUMENT_BYTES} bytes (UTF-8). The n-gram and repetition statistics "
                f"(`repetition`) are computed on its first {LONG_DOCUMENT_BYTES} bytes only (they need ~65x "
                "the bytes they read in memory): a repetition after that point is not seen. Every other check "
                "reads the whole text. value = bytes.")
def long_document(arr, **params) -> CheckOutput:
    lengths = byte_lengths(as_string_array(arr))
    return CheckOutput(flagged=lengths > LONG_DOCUMENT_BYTES, value=lengths.astype(np.float64))


# ------------------------------------------------------------------------------------------ non_text_ratio

# "Text" characters: letters, marks (needed for Indic/Thai/Arabic diacritics), numbers, punctuation,
# separators, whitespace controls (\t \n \v \f \r, NEL), and format characters (\p{Cf}: ZWJ in emoji
# sequences, ZWNJ in Persian/Indic, RLM/LRM in Arabic/Hebrew, soft hyphen, BOM). Everything else is non-text:
# symbols \p{S} (incl. emoji), other controls, private use, surrogates, and unassigned code points (RE2 has
# no \p{Cn}; they are the complement of all assigned categories). Counting the rare non-text characters
# directly is ~25x faster than counting text characters. Box-drawing and block characters (U+2500-U+259F,
# \p{So}) count as text: they draw tables and trees in terminal output and docs, not junk.
_BOX_RE = "[" + _cls((), ((0x2500, 0x259F),)) + "]"
_NON_TEXT_RE = (r"[\p{S}\p{Co}\p{Cs}" + _cls((0x7F,), ((0x00, 0x08), (0x0E, 0x1F), (0x80, 0x84), (0x86, 0x9F)))
                + r"]|[^\p{L}\p{M}\p{N}\p{P}\p{Z}\p{S}\p{C}]")
_TEXT_CATS = ("L", "M", "N", "P", "Z")


def _is_text_char(ch: str) -> bool:
    cat = unicodedata.category(ch)
    return cat[0] in _TEXT_CATS or cat == "Cf" or ch in "\t\n\x0b\x0c\r\x85" or "\u2500" <= ch <= "\u259f"


@register(
    "non_text_ratio", target="text", severity="warning", params={"max_ratio": 0.35, "min_chars": 20},
    detail="non-text character ratio {value:.2f} (max {max_ratio})",
    description="Share of characters that are not letters, marks, numbers, punctuation, whitespace or "
                "format characters (i.e. symbols incl. emoji, controls, private-use, unassigned). Flags "
                "ratio > max_ratio for texts of at least min_chars characters. value = ratio.",
)
def non_text_ratio(arr, max_ratio: float = 0.35, min_chars: int = 20, **params) -> CheckOutput:
    arr = as_string_array(arr)
    count, length = codepoints.count_matching(arr, _NON_TEXT_RE, minus=_BOX_RE)
    ratio = safe_ratio(count, length)
    flagged = (ratio > max_ratio) & (length >= min_chars)
    detail = None
    rows = np.flatnonzero(flagged)
    if rows.size:
        detail = np.full(len(arr), None, dtype=object)
        for i, s in zip(rows, rows_as_str(arr, rows)):
            bad = [ch for ch in s[:5000] if not _is_text_char(ch)]
            top = ", ".join(f"{ch!r}x{k}" if unicodedata.category(ch)[0] != "C" else f"U+{ord(ch):04X}x{k}"
                            for ch, k in Counter(bad).most_common(5))
            detail[i] = f"non-text ratio {beyond(ratio[i], max_ratio)} (max {max_ratio}): {top}"
    return CheckOutput(flagged=flagged, value=ratio, detail=detail)


__all__ = ["empty_text", "control_chars", "mojibake", "long_unbroken_run", "repetition", "non_text_ratio"]
