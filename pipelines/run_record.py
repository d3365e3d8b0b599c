"""The `run` section of a job's report: how and where it ran (the only part that differs between two runs)."""
from __future__ import annotations

import platform


def package_version() -> str:
    """The installed dataaudit version ("unknown" when it is not installed)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("dataaudit")
    except PackageNotFoundError:
        return "unknown"


def run_record(engine: str, resumed_shards: int, started: float, seconds, nodes: dict | None = None) -> dict:
    """Engine, shards resumed from parts, start time, `seconds` (a total, or a dict per stage), host and versions;
    `nodes` (Ray): how many units each node ran, by Ray node id (a job that ran no unit on Ray has none)."""
    record = {"engine": engine, "resumed_shards": resumed_shards, "started": started, "seconds": seconds,
              "host": platform.node(), "python": platform.python_version(), "dataaudit": package_version()}
    if nodes:
        record["nodes"] = dict(sorted(nodes.items()))
    return record
