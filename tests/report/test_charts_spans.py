"""The place a check found, highlighted on report.html: a text or JSON check's optional `locate` hook gives the first
(start, end) of what it flagged in one text, and the audit's examples carry it as `span` within the snippet, the
snippet window moved to hold it (`snippet_start`) when it lies past the first SNIPPET_CHARS characters."""
from __future__ import annotations

from dataclasses import replace

import pytest

from dataaudit.audit.batch import SNIPPET_CHARS, _snippet
from dataaudit.checks import REGISTRY


def _locate(name: str, text: str, **params):
    spec = REGISTRY[name]
    return spec.locate(text, **{**spec.params, **params})


@pytest.mark.parametrize("name, text, params, span", [
    ("control_chars", "ab\x0cc\x01d", {}, (4, 5)),                    # \f is not counted by default
    ("control_chars", "ab\x0cc\x01d", {"count_ff_vt": True}, (2, 3)),
    ("control_chars", "plain", {}, None),
    ("mojibake", "ok caf\u00c3\u00a9 x \ufffd", {}, (6, 8)),           # 'Ã©', before the U+FFFD
    ("mojibake", "x \ufffd", {}, (2, 3)),
    ("special_tokens", "hello <|im_end|> and </s>", {}, (6, 16)),
    ("json_invalid", '{"a": 1,}', {}, (8, 9)),
    ("json_invalid", '{"a": ', {}, (5, 6)),                            # ends too soon: its last character
    ("json_invalid", "[1]", {}, None),
    ("think_unbalanced", "a</think>b<think>c</think>", {}, (1, 9)),   # a close before any open
    ("think_unbalanced", "<think>a<think>b</think>c", {}, (0, 7)),    # the open left open
    ("think_unbalanced", "<think>a</think>", {}, None),
])
def test_each_check_locates_the_first_thing_it_flags(name, text, params, span):
    assert _locate(name, text, **params) == span


def test_long_unbroken_run_locates_its_run_skipping_urls_as_the_check_does():
    text = "short words here see https://example.com/" + "a" * 150 + " then " + "Z" * 120 + "\nnext " + "Q" * 130
    assert _locate("long_unbroken_run", text) == (197, 317)
    assert text[197:317] == "Z" * 120
    assert _locate("long_unbroken_run", "x" * 100) is None


def test_checks_with_no_place_have_no_locate():
    assert {n for n, s in REGISTRY.items() if s.locate is not None} == {
        "control_chars", "mojibake", "long_unbroken_run", "special_tokens", "json_invalid", "think_unbalanced", "pii",
        "secrets"}


def test_a_span_past_the_first_window_moves_the_snippet():
    spec = REGISTRY["control_chars"]
    text = "x" * 500 + "\x07" + "y" * 10
    out = _snippet(spec, "text", spec.params, text)
    assert (out["span"], out["snippet_start"], len(out["snippet"])) == ([60, 61], 440, 71)
    assert out["snippet"][60:61] == "\x07"
    assert _snippet(spec, "text", spec.params, "x" * 100 + "\x07") == \
        {"snippet": "x" * 100 + "\x07", "span": [100, 101]}
    # a span running past the window's end is cut there
    long = _snippet(spec, "text", spec.params, "x" * 280 + "\x07" * 50)
    assert (long["span"], len(long["snippet"]), "snippet_start" in long) == ([280, 281], SNIPPET_CHARS, False)


def test_no_span_without_a_place():
    spec = REGISTRY["control_chars"]
    assert _snippet(spec, "text", spec.params, "fine") == {"snippet": "fine"}
    assert _snippet(spec, "numeric", spec.params, "a\x07") == {"snippet": "a\x07"}     # not a text the check saw
    assert _snippet(REGISTRY["empty_text"], "text", {}, "  ") == {"snippet": "  "}
    assert _snippet(spec, "text", spec.params, None) == {"snippet": None}


def test_a_failing_locate_leaves_no_span():
    def broken(text, **params):
        raise RuntimeError("boom")

    spec = replace(REGISTRY["mojibake"], locate=broken)
    assert _snippet(spec, "text", spec.params, "caf\u00c3\u00a9") == {"snippet": "caf\u00c3\u00a9"}
