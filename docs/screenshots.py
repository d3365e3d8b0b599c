"""Writes docs/img/<command>.png: the first 1400x1200 px of each command's page (audit, dedup, contamination, clean,
tokenizer-drift) on the README's examples, in headless Chromium. Run by hand from the repository root after a page
changes, and commit the images:

    .venv/bin/python docs/screenshots.py

The pages are built, and the screenshots taken, by tests/report/chromium.py, as tests/report/test_browser.py does
(without its hostile data). Needs `chromium` on PATH and the `tokenizers` package.
"""
from __future__ import annotations

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.report.chromium import BROWSER, REPO, build_pages, screenshot  # noqa: E402

MAX_BYTES = 300_000   # per image, kept in git


def main() -> None:
    if BROWSER is None:
        sys.exit("no chromium on PATH (Debian: apt-get install chromium)")
    folder = REPO / "docs" / "img"
    folder.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for kind, page in build_pages(Path(tmp), hostile=False).items():
            png = screenshot(page, folder / f"{kind}.png")
            size = png.stat().st_size
            print(f"{png.relative_to(REPO)}: {size:,} bytes")
            if size > MAX_BYTES:
                sys.exit(f"{png}: {size:,} bytes, more than {MAX_BYTES:,}")


if __name__ == "__main__":
    main()
