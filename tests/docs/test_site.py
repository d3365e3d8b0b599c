"""The documentation: README.md is a short entry point, docs/ an mkdocs site that builds with no warning.

`mkdocs build --strict` fails on a broken link or anchor, a page left out of the nav and any plugin warning
(mkdocs.yml's `validation` turns those into warnings); the README and the pages keep their lines short and cite only
files a clone has."""
from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys

import pytest

from tests.paths import REPO

README = REPO / "README.md"
DOCS = REPO / "docs"
# Pages another change wrote with long table rows: their table rows may exceed the limit until they are rewritten.
LONG_TABLE_ROWS_ALLOWED = {"posttrain.md", "tools-and-reasoning.md", "what-is-trained.md"}
MAX_LINE = 160
SITE_PACKAGES = ("mkdocs", "material", "mkdocstrings", "mkdocstrings_handlers.python")


def _prose_lines(path):
    """(line number, line) of every line outside fenced code blocks."""
    fenced = False
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if not fenced:
            yield number, line


def _pages():
    return [README, *sorted(DOCS.glob("*.md"))]


def test_readme_is_short():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 300, f"README.md has {len(lines)} lines: move the details into docs/"


def test_no_long_lines_outside_code_blocks():
    long = [f"{path.relative_to(REPO)}:{n} ({len(line)} characters)" for path in _pages()
            for n, line in _prose_lines(path) if len(line) > MAX_LINE
            and not (path.name in LONG_TABLE_ROWS_ALLOWED and line.startswith("|"))]
    assert long == []


def test_user_docs_cite_only_files_a_clone_has():
    """No path into the real-data folder beside the checkout and no design notes a clone lacks; every relative link
    of the README points at a file of the repository."""
    bad = [f"{path.relative_to(REPO)}:{n}" for path in _pages() for n, line in enumerate(
        path.read_text(encoding="utf-8").splitlines(), 1) if "../shared/" in line or "DESIGN.md" in line]
    assert bad == []
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", README.read_text(encoding="utf-8"))
    missing = [link for link in links if "://" not in link and not (REPO / link).exists()]
    assert missing == []


def test_every_page_is_in_the_nav():
    nav = (REPO / "mkdocs.yml").read_text(encoding="utf-8")
    missing = [p.name for p in DOCS.glob("*.md") if f": {p.name}" not in nav]
    assert missing == []


def test_mkdocs_build_strict(tmp_path):
    absent = [name for name in SITE_PACKAGES if importlib.util.find_spec(name.split(".")[0]) is None
              or importlib.util.find_spec(name) is None]
    if absent:
        pytest.skip(f"the docs site needs {', '.join(absent)}: pip install -e '.[dev]'")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    command = [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(REPO / "mkdocs.yml"),
               "--site-dir", str(tmp_path / "site")]
    proc = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (tmp_path / "site" / "checks" / "index.html").is_file()
