"""Every page kind in a real browser: headless Chromium (Debian's `chromium`; .ci/run installs it when missing) opens
the pages of audit, dedup, contamination, clean and tokenizer-drift, each written by its command from the shipped
fixtures with hostile HTML in the data where the page shows it (tests/report/chromium.py builds them once), and
finds no console message, the overview first and on the first screen, a page under 6,000 px, the title unchanged
and no script from the data; a screenshot is written. Skipped when no Chromium is on PATH."""
from __future__ import annotations

import importlib.util

import pytest

from tests.report.chromium import (BROWSER, PAGES, WINDOW, build_pages, measure, page_title, screenshot)

pytestmark = pytest.mark.skipif(BROWSER is None, reason="no chromium on PATH (Debian: apt-get install chromium)")

MAX_HEIGHT = 6000   # px: a page a person reads, its reference tables collapsed


@pytest.fixture(scope="module")
def pages(tmp_path_factory) -> dict:
    """Every page, built once (the tokenizer-drift page only where `tokenizers` is installed)."""
    return build_pages(tmp_path_factory.mktemp("pages"), hostile=True,
                       tokenizer=importlib.util.find_spec("tokenizers") is not None)


@pytest.fixture(scope="module", params=list(PAGES))
def page(request, pages):
    if request.param not in pages:
        pytest.skip(f"the {request.param} page needs the tokenizers package: pip install -e '.[all]'")
    return pages[request.param]


@pytest.fixture(scope="module")
def measured(page) -> tuple[dict, str, list[str]]:
    """One browser run per page: (layout, DOM, console messages)."""
    return measure(page)


def test_no_console_message(measured):
    """The pages run no script: any console message (an error, an uncaught exception, a resource that failed to
    load) is a fault."""
    assert measured[2] == []


def test_the_console_check_catches_a_planted_error(pages):
    """A copy of a page with a console.error and a missing image: the check above sees both."""
    page = pages["clean"]
    planted = page.with_name("planted.html")
    planted.write_text(page.read_text(encoding="utf-8").replace(
        "</body>", "<img src=\"missing.png\"><script>console.error('planted error')</script></body>"),
        encoding="utf-8")
    messages = measure(planted)[2]
    assert any('"planted error"' in m for m in messages), messages
    assert any("failed to load" in m and "missing.png" in m for m in messages), messages


def test_the_overview_is_first_and_on_the_first_screen(measured):
    box = measured[0]
    assert box["overview_top"] is not None, "no element id=overview"
    assert box["sections_before_overview"] == 0, box
    assert 0 < box["overview_top"] < WINDOW[1], box


def test_the_page_is_short_and_not_wider_than_the_window(measured):
    box = measured[0]
    assert WINDOW[1] / 2 < box["height"] < MAX_HEIGHT, box      # laid out in full, and short enough to read
    assert box["width"] <= WINDOW[0], box


def test_no_script_from_the_data_runs(page, measured):
    box, dom, _ = measured
    assert box["title"] == page_title(page) and "pwned" not in box["title"]   # the title the data would change
    assert "<script" not in dom                                               # the measuring scripts removed
    assert "&lt;script&gt;document.title='pwned'&lt;/script&gt;&lt;img src=x onerror=" in dom   # shown as text


def test_a_screenshot_is_written(page):
    shot = screenshot(page, page.with_suffix(".png"))
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert shot.stat().st_size > 10_000        # a page drawn, not a blank
