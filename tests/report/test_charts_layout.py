"""The demo audit's report.html is short and leads with what matters: laid out by headless Chromium (skipped
without it) it is under 6,000 px tall at 1,400 x 1,200 with the overview and the shard x check matrix on the first
screen and nothing wider than the window; the examples, the histograms and the shards are collapsed, and a link to a
check opens its examples without a console error. The page prints no "None"."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
from html import unescape
from pathlib import Path

import pytest
from click.testing import CliRunner

from dataaudit.cli import main

REPO = Path(__file__).resolve().parents[2]
CONFIG = REPO / "fixtures" / "audit.toml"
BROWSER = next((shutil.which(b) for b in ("chromium", "chromium-browser") if shutil.which(b)), None)
WINDOW = (1400, 1200)
HOSTILE = "<script>document.title='pwned'</script><img src=x onerror=\"document.title='pwned'\">"
needs_browser = pytest.mark.skipif(BROWSER is None, reason="no chromium on PATH (Debian: apt-get install chromium)")

# Appended to a copy of the page only: the layout, then a bar clicked and the hash changed, written into the DOM.
PROBE = """<script>
window.addEventListener('load', function () {
  function top(id) { return document.getElementById(id).getBoundingClientRect().top + window.scrollY; }
  function opened() {
    return Array.prototype.filter.call(document.querySelectorAll('details'), function (d) { return d.open; })
      .map(function (d) { return d.id; });
  }
  var r = {overview_top: top('overview'), matrix_top: top('shard-matrix'), opened_on_load: opened(),
           height: document.documentElement.scrollHeight, width: document.documentElement.scrollWidth,
           body_width: document.body.scrollWidth};
  document.querySelector('svg.bars a[href="#check-control_chars"]').dispatchEvent(
    new MouseEvent('click', {bubbles: true, cancelable: true}));
  r.clicked = document.getElementById('check-control_chars').open;
  location.hash = '#check-mojibake';
  setTimeout(function () {
    r.hashchange = document.getElementById('check-mojibake').open;
    var out = document.createElement('pre');
    out.id = 'probe';
    out.textContent = JSON.stringify(r);
    document.body.appendChild(out);
  }, 200);
});
</script>"""


@pytest.fixture(scope="module")
def page(fixture_dir, tmp_path_factory) -> Path:
    """The demo audit's report.html, with a hostile shard named first (as tests/report/test_browser.py builds it)."""
    root = tmp_path_factory.mktemp("layout")
    hostile = root / "hostile.jsonl"
    hostile.write_text(json.dumps({"id": HOSTILE, "text": f"\x07 {HOSTILE}"}) + "\n", encoding="utf-8")
    res = CliRunner().invoke(main, ["audit", str(hostile), str(fixture_dir), "--config", str(CONFIG),
                                    "--out", str(root / "out"), "--engine", "local"])
    assert res.exit_code == 1, res.output
    return root / "out" / "report.html"


def _probe(page: Path, fragment: str = "") -> tuple[dict, str]:
    probed = page.with_name("probed.html")
    probed.write_text(page.read_text(encoding="utf-8").replace("</body>", PROBE + "\n</body>"), encoding="utf-8")
    res = subprocess.run([BROWSER, "--headless", "--disable-gpu", "--no-sandbox", "--hide-scrollbars",
                          f"--window-size={WINDOW[0]},{WINDOW[1]}", "--virtual-time-budget=3000",
                          "--enable-logging=stderr", "--v=0", "--dump-dom", probed.as_uri() + fragment],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr[-2000:]
    found = re.search(r'<pre id="probe">(.*?)</pre>', res.stdout, re.S)
    assert found, res.stdout[-2000:]
    return json.loads(unescape(found.group(1))), res.stderr


def test_the_demo_page_collapses_its_examples_histograms_and_shards(page):
    html = page.read_text(encoding="utf-8")
    report = json.loads(page.with_name("report.json").read_text(encoding="utf-8"))
    assert len(report["examples"]) == 21
    assert re.findall(r'<details class="(\w[\w-]*)"', html).count("check") == 21
    assert html.count("<details") == 21 + 2 + 3 and " open>" not in html
    assert '<details class="shards"><summary>7 shards: 5 ok, 2 unreadable</summary>' in html
    assert '<details class="length-charts"><summary>Histograms (3)</summary>' in html
    assert html.count("<mark>") == 1 + 14   # the legend; control_chars 5, mojibake 5, long_unbroken_run 4


def test_the_demo_page_prints_no_none(page):
    html = page.read_text(encoding="utf-8")
    shown = re.sub(r"<pre>.*?</pre>", "", html[:html.index('<section id="reference-tables">')], flags=re.S)
    assert "None" not in shown and "none" not in re.sub(r"<[^>]+>", "", shown).split()


@needs_browser
def test_the_demo_page_is_short_and_fits_the_window(page):
    box, _ = _probe(page)
    assert 0 < box["overview_top"] < box["matrix_top"] < WINDOW[1], box
    assert WINDOW[1] < box["height"] < 6000, box           # 11,776 px before the examples were collapsed
    assert box["width"] <= WINDOW[0] and box["body_width"] <= WINDOW[0], box
    assert box["opened_on_load"] == []


@needs_browser
def test_a_link_opens_the_examples_it_names_without_a_console_error(page):
    box, log = _probe(page, "#check-repetition")
    assert box["opened_on_load"] == ["check-repetition"]   # a page opened on a check's anchor
    assert box["clicked"] is True and box["hashchange"] is True
    assert "CONSOLE" not in log, log[-2000:]
