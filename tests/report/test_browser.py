"""report.html in a real browser: headless Chromium (Debian's `chromium`; .ci/run installs it when missing) opens the
demo audit's page with a hostile shard added, and shows the overview on the first screen, runs no script from the
data, and writes a screenshot. Skipped when no Chromium is on PATH."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from dataaudit.cli import main

REPO = Path(__file__).resolve().parents[2]
CONFIG = REPO / "fixtures" / "audit.toml"
BROWSER = next((shutil.which(b) for b in ("chromium", "chromium-browser") if shutil.which(b)), None)
WINDOW = (1400, 1200)
TIMEOUT = 120   # s, for one browser run

pytestmark = pytest.mark.skipif(BROWSER is None, reason="no chromium on PATH (Debian: apt-get install chromium)")

# Would change the page's title if it ran; on the page it must be text.
HOSTILE = "<script>document.title='pwned'</script><img src=x onerror=\"document.title='pwned'\">"

# Appended to a copy of the page only: what the browser laid out, written into the DOM for --dump-dom.
MEASURE = """<script>
window.addEventListener('load', function () {
  var o = document.getElementById('overview').getBoundingClientRect();
  var m = document.getElementById('shard-matrix').getBoundingClientRect();
  var out = document.createElement('pre');
  out.id = 'measured';
  out.textContent = JSON.stringify({overview_top: o.top + window.scrollY, matrix_top: m.top + window.scrollY,
                                    height: document.documentElement.scrollHeight, title: document.title});
  document.body.appendChild(out);
});
</script>"""


def _chromium(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([BROWSER, "--headless", "--disable-gpu", "--no-sandbox", "--hide-scrollbars",
                           f"--window-size={WINDOW[0]},{WINDOW[1]}", "--virtual-time-budget=3000", *args],
                          capture_output=True, text=True, timeout=TIMEOUT)


@pytest.fixture(scope="module")
def page(fixture_dir, tmp_path_factory) -> Path:
    """The demo audit's report.html, with one more shard whose text and key are hostile HTML (named first: its
    control character is among the five examples kept)."""
    root = tmp_path_factory.mktemp("browser")
    hostile = root / "hostile.jsonl"
    hostile.write_text(json.dumps({"id": HOSTILE, "text": f"\x07 {HOSTILE}"}) + "\n", encoding="utf-8")
    out = root / "out"
    res = CliRunner().invoke(main, ["audit", str(hostile), str(fixture_dir), "--config", str(CONFIG),
                                    "--out", str(out), "--engine", "local"])
    assert res.exit_code == 1, res.output
    html = (out / "report.html").read_text(encoding="utf-8")
    assert "&lt;script&gt;document.title=" in html and "<script" not in html
    return out / "report.html"


def test_no_script_from_the_data_runs(page):
    res = _chromium("--dump-dom", page.as_uri())
    assert res.returncode == 0, res.stderr[-2000:]
    dom = res.stdout
    assert "<title>dataaudit report</title>" in dom          # the title the data would have changed
    assert "pwned</title>" not in dom
    assert "<script" not in dom and "&lt;script&gt;document.title=" in dom   # shown as text


def test_the_overview_is_on_the_first_screen(page):
    measured = page.with_name("measured.html")
    measured.write_text(page.read_text(encoding="utf-8").replace("</body>", MEASURE + "\n</body>"), encoding="utf-8")
    res = _chromium("--dump-dom", measured.as_uri())
    assert res.returncode == 0, res.stderr[-2000:]
    found = re.search(r'<pre id="measured">(.*?)</pre>', res.stdout, re.S)
    assert found, res.stdout[-2000:]
    box = json.loads(found.group(1).replace("&quot;", '"'))
    assert box["title"] == "dataaudit report"
    assert 0 < box["overview_top"] < box["matrix_top"] < WINDOW[1], box   # verdict, bars and the matrix begin on screen
    assert box["height"] > WINDOW[1], box                                  # laid out in full: a real page


def test_a_screenshot_is_written(page):
    shot = page.with_name("report.png")
    res = _chromium(f"--screenshot={shot}", page.as_uri())
    assert res.returncode == 0, res.stderr[-2000:]
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert shot.stat().st_size > 10_000        # a page drawn, not a blank
