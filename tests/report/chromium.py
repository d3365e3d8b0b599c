"""dataaudit's pages in headless Chromium (Debian's `chromium`), shared by tests/report/test_browser.py and
docs/screenshots.py: every page kind built by its command from the files the repository ships (fixtures/, as the
README runs them), with HOSTILE_HTML planted where each page shows data when asked; one browser run that measures a
page (layout, title, console messages, DOM), one that takes its screenshot. Every run is bounded by a timeout.
"""
from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from dataaudit import audit, clean, contamination, dedup, tokenization
from tests.builders import HOSTILE_HTML, make_tar

REPO = Path(__file__).resolve().parents[2]
BROWSER = next((shutil.which(b) for b in ("chromium", "chromium-browser") if shutil.which(b)), None)
WINDOW = (1400, 1200)
TIMEOUT = 120   # s, for one browser run or one command

# The page of each command, as its package declares it.
PAGES = {"audit": audit.FILES.page, "dedup": dedup.FILES.page, "contamination": contamination.FILES.page,
         "clean": clean.FILES.page, "tokenizer-drift": tokenization.FILES.page}

# Chromium writes every console message (console.log and console.error alike, an uncaught exception as
# "Uncaught ...") at INFO: `[pid:tid:time:INFO:CONSOLE:LINE] "message", source: URL (LINE)` (older builds:
# `INFO:CONSOLE(LINE)`). The pages run no script, so every console message of a page is a fault.
CONSOLE = re.compile(r"^\[[^\]]*:CONSOLE[:(]\d+\)?\] (.*)$", re.M)

# Put first in the <head> of the measured copy: a resource that fails to load (an <img>, a stylesheet) becomes a
# console error, so that one check of the log catches it too.
WATCH = """<script data-measure>
window.addEventListener('error', function (e) {
  var t = e.target;
  if (t && t !== window) console.error('failed to load ' + (t.src || t.href || t.tagName));
}, true);
</script>"""

# Put last in the <body> of the measured copy: what the browser laid out, written into the DOM for --dump-dom, after
# removing both added scripts (the DOM dumped then holds only what the page itself made).
MEASURE = """<script data-measure>
window.addEventListener('load', function () {
  document.querySelectorAll('script[data-measure]').forEach(function (s) { s.remove(); });
  var o = document.getElementById('overview');
  var before = Array.prototype.filter.call(document.querySelectorAll('h2, section'), function (h) {
    return o && h !== o && (o.compareDocumentPosition(h) & Node.DOCUMENT_POSITION_PRECEDING);
  });
  var out = document.createElement('pre');
  out.id = 'measured';
  out.textContent = JSON.stringify({overview_top: o ? o.getBoundingClientRect().top + window.scrollY : null,
                                    sections_before_overview: before.length,
                                    height: document.documentElement.scrollHeight,
                                    width: document.body.scrollWidth, title: document.title});
  document.body.appendChild(out);
});
</script>"""


def chromium(*args: str, timeout: float = TIMEOUT) -> subprocess.CompletedProcess:
    """One headless Chromium run over a WINDOW-sized window; console messages logged to stderr."""
    return subprocess.run([BROWSER, "--headless", "--disable-gpu", "--no-sandbox", "--hide-scrollbars",
                           "--enable-logging=stderr", "--v=0", f"--window-size={WINDOW[0]},{WINDOW[1]}",
                           "--virtual-time-budget=3000", *args], capture_output=True, text=True, timeout=timeout)


def console_messages(stderr: str) -> list[str]:
    return CONSOLE.findall(stderr)


def page_title(page: Path) -> str:
    """The <title> the page was written with (unescaped)."""
    return html.unescape(re.search(r"<title>(.*?)</title>", page.read_text(encoding="utf-8"), re.S).group(1))


def measure(page: Path) -> tuple[dict, str, list[str]]:
    """(the layout measured {overview_top, sections_before_overview, height, width, title}, the DOM as laid out
    (without the measuring scripts), the console messages) of one --dump-dom run over a copy of `page`."""
    text = page.read_text(encoding="utf-8")
    copy = page.with_name(f"measured-{page.name}")
    copy.write_text(text.replace("<head>", "<head>\n" + WATCH, 1).replace("</body>", MEASURE + "\n</body>", 1),
                    encoding="utf-8")
    res = chromium("--dump-dom", copy.as_uri())
    assert res.returncode == 0, res.stderr[-2000:]
    found = re.search(r'<pre id="measured">(.*?)</pre>', res.stdout, re.S)
    assert found, res.stdout[-2000:]
    return json.loads(html.unescape(found.group(1))), res.stdout, console_messages(res.stderr)


def screenshot(page: Path, png: Path) -> Path:
    """The first WINDOW of `page` as a PNG."""
    res = chromium(f"--screenshot={png}", page.as_uri())
    assert res.returncode == 0 and png.is_file(), res.stderr[-2000:]
    return png


# ------------------------------------------------------------------------------------------------ the pages


def run_as_a_user(folder: Path, *argv: str, timeout: float = TIMEOUT) -> None:
    """`python ARGV...` from `folder`, as a user runs it: small inputs take the numpy twins, not the numba kernels
    the suite forces (tests/conftest.py); exit 0 or 1 (findings), never 2 or a traceback. tests/docs uses it too."""
    env = {k: v for k, v in os.environ.items() if k not in ("DATAAUDIT_NUMBA_MIN_WORK", "DATAAUDIT_NO_AOT")}
    proc = subprocess.run([sys.executable, *argv], cwd=folder, env=env, capture_output=True, text=True,
                          timeout=timeout)
    output = proc.stdout + proc.stderr
    assert proc.returncode in (0, 1) and "Traceback" not in output, \
        f"{' '.join(argv)}: exit {proc.returncode}\n{output}"


def _jsonl(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")


def tokenizer_script() -> str:
    """docs/tokenizer-drift.md's make_tokenizers.py: the two tokenizers of the README's tokenizer-drift example (its
    paths relative to the folder it runs in). tests/docs runs it too."""
    doc = (REPO / "docs" / "tokenizer-drift.md").read_text(encoding="utf-8")
    return re.search(r"```python\n# make_tokenizers.py\n(.*?)```", doc, re.S).group(1)


def _hostile_inputs(folder: Path) -> dict[str, list[str]]:
    """Shards holding HOSTILE_HTML where each page shows it, in `folder`; {what: paths relative to its parent}."""
    folder.mkdir()
    h = folder.name
    bell = f"\x07 {HOSTILE_HTML} rings a bell twice"     # a control character: among the audit's examples
    _jsonl(folder / "hostile.jsonl", [{"id": HOSTILE_HTML, "text": bell}, {"id": "copy", "text": bell},   # a cluster
                                      {"id": "plain", "text": "a plain record about rivers and stones"}])
    make_tar(folder / "hostile.tar", [("ok-0.txt", b"a caption about a harbour at dusk"),
                                      (f"{HOSTILE_HTML}.txt", b"")])     # empty_text: dropped by clean, key shown
    item = f"{HOSTILE_HTML} what is the boiling point of water at sea level in degrees celsius"
    _jsonl(folder / "bench.jsonl", [{"q": item}])
    _jsonl(folder / "train.jsonl", [{"text": f"Question: {item}? Answer: 100."}])
    _jsonl(folder / "drift.jsonl", [{"text": f"{HOSTILE_HTML} ｆｕｌｌ ｗｉｄｔｈ ＡＢＣ ①"}])   # NFKC changes it
    return {"shards": [f"{h}/hostile.jsonl", f"{h}/hostile.tar"], "train": [f"{h}/train.jsonl"],
            "benchmark": ["--benchmark", f"h={h}/bench.jsonl:q"], "sample": [f"{h}/drift.jsonl"]}


def build_pages(root: Path, hostile: bool = True, tokenizer: bool = True) -> dict[str, Path]:
    """Each command's page ({kind: path}, kinds as PAGES), written under root/out/ by the README's commands run from
    `root` on fixtures/ (linked there). `hostile`: HOSTILE_HTML is in the data too, where each page shows it: a
    record's key and text (audit, dedup), a benchmark item (contamination), a dropped sample's key (clean), a sample
    text whose tokens differ (tokenizer-drift). `tokenizer`: build the tokenizer-drift page (needs `tokenizers`)."""
    (root / "fixtures").symlink_to(REPO / "fixtures", target_is_directory=True)
    chat = "fixtures/chat/jsonl"
    h = _hostile_inputs(root / "h") if hostile else {"shards": [], "train": [], "benchmark": [], "sample": []}
    cli = ("-m", "dataaudit.cli")
    run_as_a_user(root, *cli, "audit", *h["shards"], chat, "--out", "out/audit")
    run_as_a_user(root, *cli, "dedup", *h["shards"], chat, "--out", "out/dedup", "--threshold", "0.8")
    run_as_a_user(root, *cli, "contamination", "--train", f"{chat}/sharegpt", *h["train"],
                  "--benchmark", f"alpaca={chat}/alpaca/alpaca-000.jsonl:instruction+output", *h["benchmark"],
                  "--out", "out/contamination")
    run_as_a_user(root, *cli, "clean", *h["shards"], chat, "--audit", "out/audit", "--dedup", "out/dedup",
                  "--out", "out/clean", "--max-drop", "70", *(["--check", "empty_text"] if hostile else []))
    folders = {kind: kind for kind in ("audit", "dedup", "contamination", "clean")}
    if tokenizer:
        (root / "make_tokenizers.py").write_text(tokenizer_script(), encoding="utf-8")
        run_as_a_user(root, "make_tokenizers.py")
        run_as_a_user(root, *cli, "tokenizer-drift", "out/tok/train.json", "out/tok/infer.json",
                      "--out", "out/drift", "--sample", *h["sample"], chat)
        folders["tokenizer-drift"] = "drift"
    return {kind: root / "out" / folder / PAGES[kind] for kind, folder in folders.items()}
