"""The built-in probe texts: small inputs that expose normalizer, pre-tokenizer, byte-fallback and special-token
differences that a sample of ordinary prose can miss."""
from __future__ import annotations

from dataaudit.textops.special_tokens import SPECIAL_TOKEN_STRINGS
from dataaudit.tokenization.loading import TokenizerBundle

BUILTIN_PROBES: tuple[tuple[str, str], ...] = (
    ("ascii_sentence", "The quick brown fox jumps over the lazy dog."),
    ("mixed_scripts", "English, Русский, Ελληνικά, العربية, हिन्दी, ไทย and עברית in one line."),
    ("cjk_chinese", "训练数据的质量决定了模型的上限。"),
    ("cjk_japanese", "東京は日本の首都です。ひらがなとカタカナ、ｶﾀｶﾅ。"),
    ("cjk_korean", "안녕하세요, 세계! 한국어 문장입니다."),
    ("emoji", "Launch 🚀 done ✅ family 👨‍👩‍👧‍👦 flag 🇫🇷 thumbs 👍🏽"),
    ("combining_decomposed", "Cafe\u0301 nai\u0308ve A\u030angstro\u0308m"),
    ("precomposed_accents", "Café naïve Ångström Ça va? Ñandú Straße İstanbul Øresund"),
    ("compatibility_forms", "ﬁle ﬂow ＦＵＬＬ ｗｉｄｔｈ ① ² ½ ™ Ⅻ"),
    ("case_mix", "UPPER lower MiXeD Title Case"),
    ("leading_spaces", "   three leading spaces"),
    ("trailing_spaces", "three trailing spaces   "),
    ("multiple_spaces", "multiple    spaces   between  words"),
    ("tabs_newlines", "col1\tcol2\tcol3\nline two\r\nline three\n\n\nafter blank lines\n"),
    ("whitespace_only", " \t\n "),
    ("empty", ""),
    ("unicode_spaces", "no\u00a0break em\u2003space ideographic\u3000space"),
    ("zero_width", "zero\u200bwidth join\u200der bom\ufeffmark"),
    ("control_chars", "bell\x07 escape\x1b[31m delete\x7f"),
    ("code_python", 'def square(x):\n    return x ** 2  # comment\n\nif __name__ == "__main__":\n\tprint(square(3))\n'),
    ("code_json", '{"key": [1, 2.5, -3e10], "nested": {"a": null, "b": "\\u00e9"}}'),
    ("code_cpp", "template<typename T> T max(T a, T b) { return a > b ? a : b; } // <<>> &&|| ->"),
    ("numbers", "3.14159 1,000,000 2024-01-31 12:30:45 0x1F 1e-9 -42 +7 ١٢٣ 一二三 ½"),
    ("long_digits", "12345678901234567890123456789012345678901234567890"),
    ("math_symbols", "∑ ∫ √ ≤ ≥ ≠ ∞ → ⇒ ∀x∈ℝ: x² ≥ 0"),
    ("url_email", "See https://example.com/a/b?q=1&r=2#frag or mail someone@example.org."),
    ("long_word", "Pneumonoultramicroscopicsilicovolcanoconiosis " + "supercalifragilistic" * 12),
    ("long_run", "x" * 600),
    ("base64_run", "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="),
    ("repeated_punct", "Wait!!!!!! What?????? ...... ------ ====== ______"),
    ("rtl", "שלום עולם مرحبا بالعالم"),
    ("markdown", "# Title\n\n* item **bold** _it_ `code`\n\n| a | b |\n|---|---|\n"),
)

# Special-token spellings of common model families, written inside plain text (one list, shared with the
# `special_tokens` check).
COMMON_SPECIAL_STRINGS = SPECIAL_TOKEN_STRINGS


def special_string_probes(*bundles: TokenizerBundle) -> list[tuple[str, str]]:
    """One probe per added/special token string of either tokenizer (and the common ones), inside plain text."""
    strings: dict[str, None] = {}
    for bundle in bundles:
        for t in bundle.spec.get("added_tokens", []):
            if t["content"].strip():
                strings[t["content"]] = None
        for sp in bundle.special.values():
            if sp.token and sp.token.strip():
                strings[sp.token] = None
    for s in COMMON_SPECIAL_STRINGS:
        strings[s] = None
    return [(f"special_in_text:{s}", f"Plain text with {s} written inside it, and{s}glued.") for s in strings]


def probe_texts(train: TokenizerBundle, infer: TokenizerBundle) -> list[tuple[str, str]]:
    return list(BUILTIN_PROBES) + special_string_probes(train, infer)
