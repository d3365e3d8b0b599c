"""The paths every test shares, defined once: the repo root and the real data folder.

The real data lives in `../shared/data` beside the checkout; the environment variable `DATAAUDIT_SHARED_DATA`
points at another copy (as ../shared/data/README.md and benchmarks/output_digest.py have it). A fresh clone may
have neither: then every test that needs the folder skips with `SHARED_MISSING` as its reason, through the
`shared_data` fixture (tests/conftest.py), the `needs_shared` marker, or `shared_file()` in a helper.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA_ENV = "DATAAUDIT_SHARED_DATA"
SHARED_DATA = Path(os.path.abspath(os.path.expanduser(os.environ.get(SHARED_DATA_ENV) or
                                                      REPO.parent / "shared" / "data")))
SHARED_MISSING = (f"real test data folder missing: {SHARED_DATA} "
                  f"(put ../shared/data beside the checkout or set {SHARED_DATA_ENV})")


def have_shared() -> bool:
    return SHARED_DATA.is_dir()


# For a test function, class or module (`pytestmark = needs_shared`), or one parameter:
# `pytest.param(..., marks=needs_shared)`.
needs_shared = pytest.mark.skipif(not have_shared(), reason=SHARED_MISSING)


def require_shared() -> Path:
    """The real data folder; skips the running test when it is missing."""
    if not have_shared():
        pytest.skip(SHARED_MISSING)
    return SHARED_DATA


def shared_file(rel: str) -> Path:
    """A file of the real data folder: skips the test when the folder is missing, fails when the folder is
    there without the file (a broken copy is not a missing one)."""
    path = require_shared() / rel
    if not path.is_file():
        pytest.fail(f"real test data file missing: {path} (the folder {SHARED_DATA} is there; see its README.md)")
    return path
