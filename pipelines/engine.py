"""Which engine runs a job's shards: in this process, or Ray."""
from __future__ import annotations

import os
from typing import Sequence

from dataaudit.extras import available

LOCAL_MAX_BYTES = 512 * 2**20   # auto engine: below this much input, starting Ray costs more than it saves


def choose_engine(paths: Sequence[str], engine: str, ray_address: str | None) -> str:
    """"local" or "ray": as asked, else Ray when an address is given or the input is large and in several shards
    (and Ray is installed: `pip install 'dataaudit[ray]'`)."""
    if engine != "auto":
        return engine
    if not available("ray"):
        return "local"
    if ray_address:
        return "ray"
    total = sum(os.path.getsize(p) for p in paths if os.path.exists(p))
    return "local" if total < LOCAL_MAX_BYTES or len(paths) < 2 else "ray"
