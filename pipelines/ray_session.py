"""Ray started (or joined) on first use: the only place that decides how this process connects to Ray."""
from __future__ import annotations

from dataaudit.errors import DataAuditError


class RayStartError(DataAuditError):
    """Ray could not be started or joined: one line saying why (exit 2 on the command line)."""


def ray_init(ray_address: str | None):
    """Join the cluster at `ray_address`, or start a local Ray (a no-op when Ray is already up); returns `ray`."""
    from dataaudit.extras import require

    ray = require("ray", "the Ray engine")   # imported here: the local engine never loads Ray

    if not ray.is_initialized():
        try:
            ray.init(address=ray_address, include_dashboard=False, log_to_driver=False, configure_logging=False)
        except Exception as exc:   # noqa: BLE001  (Ray raises many kinds: ConnectionError, RuntimeError, ValueError)
            where = f"the Ray cluster at {ray_address}" if ray_address else "a local Ray"
            text = " ".join(str(exc).split())[:500] or type(exc).__name__
            raise RayStartError(f"cannot start or join {where}: {text} (--engine local runs without Ray)") from None
    return ray
