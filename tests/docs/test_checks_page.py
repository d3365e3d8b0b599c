"""docs/checks.md is generated from the check registry by docs/gen_checks.py: it never drifts from the checks.

A check added, renamed, or given another target, severity, default or description changes what the generator writes;
these tests fail until `.venv/bin/python docs/gen_checks.py` has rewritten the page (and it is committed)."""
from __future__ import annotations

import importlib.util

from tests.paths import REPO

GENERATOR = REPO / "docs" / "gen_checks.py"
PAGE = REPO / "docs" / "checks.md"


def _generator():
    spec = importlib.util.spec_from_file_location("gen_checks", GENERATOR)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_check_has_an_entry():
    from dataaudit.checks import REGISTRY

    page = PAGE.read_text(encoding="utf-8")
    missing = [name for name in REGISTRY if f"## `{name}` {{#{name}}}" not in page or f"](#{name})" not in page]
    assert missing == [], f"checks without an entry in docs/checks.md (run docs/gen_checks.py): {missing}"


def test_checks_page_is_what_the_generator_writes():
    expected = _generator().render()
    actual = PAGE.read_text(encoding="utf-8")
    assert actual == expected, "docs/checks.md differs from the registry: run .venv/bin/python docs/gen_checks.py"


def test_the_page_escapes_tags_and_wraps_prose():
    """Prose like `<think>` outside code spans would be eaten as HTML; a wrapped line must not start a block."""
    gen = _generator()
    assert gen._escape("a `<think>` tag and <think> and 2 * 3") == "a `<think>` tag and &lt;think&gt; and 2 \\* 3"
    lines = gen._wrap("x " * 60 + "- y " + "z " * 60 + "# w")
    assert all(not gen._BLOCK_START.match(line) for line in lines[1:]), lines
