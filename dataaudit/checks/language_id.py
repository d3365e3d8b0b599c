"""Language identification over a whole batch of texts: a vectorized script pre-pass, then CLD2 (pycld2, the
`language` extra) on the texts the pre-pass cannot decide.

identify(texts) -> (code per text, letters per text). The pre-pass works on every text at once:
  1. fenced (```...```) and inline (`...`) code is removed: a reply is judged by its prose, not its code;
  2. letters are counted per text (all letters, Han, Kana, Hangul, ASCII letters), and the English marker words
     (the, and, of, that, ...) against the words (whitespace characters + 1, about): one compiled pass over the
     Arrow buffers does 1. and 2. (dataaudit.textops.codepoints.prose_counts); without numba (or standalone),
     the same counts with RE2, one regex pass each (`regex_counts`, the twin, tested equal);
  3. a text with fewer than `min_letters` letters is not judged (code "");
     a text written mostly in CJK characters (each counted 3 times: one carries about what 3 Latin letters do)
     is Korean when Hangul leads, Japanese when it holds Kana (at least 1 per 5 Han), else Chinese;
     a text of ASCII letters whose words are at least 15% English marker words (and 4 of them) is English;
  4. every other text (French, German, Russian, Arabic, short or mixed English...) goes to CLD2, its prose cut to
     its first `max_chars` characters (one more compiled pass, `model_input`), one call per text (CLD2 has no batch
     call): its top language, "" when CLD2 says unknown.
Codes are ISO 639-1 ("en", "zh", ...; CLD2's zh-Hant is zh, its iw is he); three letters where CLD2 knows no
two-letter code (haw, ceb).

This module imports only numpy and pyarrow (and dataaudit's kernels when it is part of the package), so that the
benchmark (benchmarks/language_id.py) measures this very code in a bare environment.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

MODULE = "pycld2"       # the import name of the model's package (the `language` extra)
MIN_LETTERS = 20        # texts with fewer letters are not judged
MAX_CHARS = 300         # characters of a text the model reads (CLD2 is sure from ~200; on the benchmark
                        # 300 decides as 1000 did, but for one text, and reads 30% fewer bytes)
CJK_WEIGHT = 3          # one CJK character counts as this many letters against the others
EN_SHARE = 0.15         # English marker words among the ASCII words for the pre-pass to say "en"
EN_MIN = 4
_CODE = r"(?s)```.*?(?:```|$)|`[^`\n]*`"
_EN_WORDS = ("the", "and", "of", "that", "with", "you", "this", "was", "are", "have", "for", "what", "which",
             "from", "is", "it", "be", "to", "they", "there", "their", "would", "will", "can", "not", "your")
_EN_RE = "(?i)(?:^|[^A-Za-z])(?:" + "|".join(_EN_WORDS) + ")(?:[^A-Za-z]|$)"
_CLASSES = {"letters": "[\\p{L}]", "han": "[\\p{Han}]", "kana": "[\\p{Hiragana}\\p{Katakana}]",
            "hangul": "[\\p{Hangul}]", "ascii": "[A-Za-z]", "spaces": "[\\s]"}
_RENAME = {"iw": "he", "jw": "jv", "tl": "tl", "un": "", "xxx": ""}
# ISO 639-1: what `[data] languages` accepts (two letters), with the three-letter codes CLD2 reports
ISO_639_1 = frozenset((
    "aa ab ae af ak am an ar as av ay az ba be bg bh bi bm bn bo br bs ca ce ch co cr cs cu cv cy da de dv dz ee el "
    "en eo es et eu fa ff fi fj fo fr fy ga gd gl gn gu gv ha he hi ho hr ht hu hy hz ia id ie ig ii ik io is it iu "
    "ja jv ka kg ki kj kk kl km kn ko kr ks ku kv kw ky la lb lg li ln lo lt lu lv mg mh mi mk ml mn mr ms mt my na "
    "nb nd ne ng nl nn no nr nv ny oc oj om or os pa pi pl ps pt qu rm rn ro ru rw sa sc sd se sg si sk sl sm sn so "
    "sq sr ss st su sv sw ta te tg th ti tk tl tn to tr ts tt tw ty ug uk ur uz ve vi vo wa wo xh yi yo za zh zu"
).split())

try:
    from dataaudit.textops.codepoints import prose_counts as _prose_counts, prose_text as _prose_text
except ImportError:        # loaded by path (the benchmark, outside the package): the RE2 twins below
    _prose_counts = _prose_text = None


def prose(arr: pa.Array) -> pa.Array:
    """The texts without their fenced and inline code (nulls stay null)."""
    return pc.replace_substring_regex(_string(arr), pattern=_CODE, replacement=" ")


def _string(arr) -> pa.Array:
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if pa.types.is_large_string(arr.type):
        arr = arr.cast(pa.string())
    return arr


def _np(arr) -> np.ndarray:
    return np.asarray(pc.fill_null(arr, 0).to_numpy(zero_copy_only=False), dtype=np.int64)


def counts(arr: pa.Array) -> np.ndarray:
    """Per text, over its prose: letters, Han, Kana, Hangul, ASCII letters, whitespace (the `_CLASSES`) and English
    marker words (`_EN_RE`), int64 (texts x 7; null -> 0). One compiled pass over the Arrow buffers
    (dataaudit.textops.codepoints.prose_counts); without numba, the same counts with RE2 (`regex_counts`)."""
    arr = _string(arr)
    if _prose_counts is not None:
        out = _prose_counts(arr, tuple(_CLASSES.values()), _EN_WORDS)
        if out is not None:
            return out
    return regex_counts(arr)


def regex_counts(arr: pa.Array) -> np.ndarray:
    """`counts` with RE2: the code removed, then one regex count per class and one for the marker words (the
    compiled pass's twin, tested equal; ~10x slower)."""
    text = prose(arr)
    cols = [_np(pc.count_substring_regex(text, pattern=p)) for p in _CLASSES.values()]
    # Arrow restarts RE2 after each match, where ^ matches again: every whole marker word counts ("of the" twice)
    return np.stack(cols + [_np(pc.count_substring_regex(text, pattern=_EN_RE))], axis=1)


def model_input(arr: pa.Array, rows: np.ndarray, max_chars: int = MAX_CHARS) -> list:
    """What the model reads of the texts `rows`: their prose, cut to its first `max_chars` characters. UTF-8
    bytes from one compiled pass (dataaudit.textops.codepoints.prose_text); without numba, str from RE2 and Arrow
    (`regex_model_input`, the twin, tested equal)."""
    arr = _string(arr)
    if _prose_text is not None:
        out = _prose_text(arr, rows, max_chars)
        if out is not None:
            return out
    return regex_model_input(arr, rows, max_chars)


def regex_model_input(arr: pa.Array, rows: np.ndarray, max_chars: int = MAX_CHARS) -> list:
    """`model_input` with RE2 and Arrow (str; null -> None)."""
    return pc.utf8_slice_codeunits(prose(_string(arr).take(pa.array(rows, pa.int64()))), 0, max_chars).to_pylist()


def script_pass(arr: pa.Array, min_letters: int = MIN_LETTERS) -> tuple[np.ndarray, np.ndarray]:
    """(code per text: "" not judged or "?" for the model, letters per text after code removal)."""
    letters, han, kana, hangul, ascii_, spaces, marks = counts(arr).T
    cjk = han + kana + hangul
    code = np.full(len(letters), "?", dtype=object)
    mostly_cjk = CJK_WEIGHT * cjk >= letters - cjk
    code[mostly_cjk] = "zh"
    code[mostly_cjk & (kana * 5 >= han) & (kana > 0)] = "ja"
    code[mostly_cjk & (hangul > han + kana)] = "ko"
    plain = ~mostly_cjk & (ascii_ * 10 >= letters * 9)
    words = spaces + 1       # about the words (a count of words is a regex pass 4x slower)
    code[plain & (marks >= EN_MIN) & (marks >= EN_SHARE * words)] = "en"
    code[letters < min_letters] = ""
    return code, np.ascontiguousarray(letters)


def _cld2(texts: list[bytes | str | None]) -> list[str]:
    import pycld2

    seen: dict = {}          # a batch repeats short replies ("Sure!", a system prompt): CLD2 reads each once
    out = []
    for t in texts:
        code = seen.get(t)
        if code is None:
            try:
                _, _, details = pycld2.detect(t or "", isPlainText=True)
                raw = details[0][1]
            except pycld2.error:       # invalid UTF-8 (a lone surrogate) or a code point CLD2 refuses
                raw = "un"
            raw = raw.split("-")[0].lower()
            code = seen[t] = _RENAME.get(raw, raw)
        out.append(code)
    return out


def identify(arr: pa.Array, min_letters: int = MIN_LETTERS, max_chars: int = MAX_CHARS) -> tuple[np.ndarray, np.ndarray]:
    """(language code per text, object array: "" = not judged (short, null) or unknown to the model; letters per
    text after code removal, int64)."""
    code, letters = script_pass(arr, min_letters)
    ask = np.flatnonzero(code == "?")
    if ask.size:
        code[ask] = _cld2(model_input(arr, ask, max_chars))
    return code, letters
