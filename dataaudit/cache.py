"""Where dataaudit keeps what it builds once and reuses between runs (the text checks' code point tables, the
kernels compiled ahead of time): $DATAAUDIT_CACHE_DIR, else $XDG_CACHE_HOME/dataaudit, else ~/.cache/dataaudit."""
from __future__ import annotations

import os
from pathlib import Path


def cache_folder() -> Path:
    given = os.environ.get("DATAAUDIT_CACHE_DIR")
    if given:
        return Path(given)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "dataaudit"
