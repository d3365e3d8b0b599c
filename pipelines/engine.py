"""What the audit, dedup and contamination jobs share, kept light (importing it loads neither torch nor the
checks): the engine choice and the version recorded in reports."""
from __future__ import annotations

import os
from typing import Sequence

LOCAL_MAX_BYTES = 512 * 2**20   # auto engine: below this much input, starting Ray costs more than it saves


def choose_engine(paths: Sequence[str], engine: str, ray_address: str | None) -> str:
    """"local" or "ray": as asked, else Ray when an address is given or the input is large and in several shards."""
    if engine != "auto":
        return engine
    if ray_address:
        return "ray"
    total = sum(os.path.getsize(p) for p in paths if os.path.exists(p))
    return "local" if total < LOCAL_MAX_BYTES or len(paths) < 2 else "ray"


def package_version() -> str:
    """The installed dataaudit version ("unknown" when it is not installed)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("dataaudit")
    except PackageNotFoundError:
        return "unknown"
