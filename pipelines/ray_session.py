"""Ray started (or joined) on first use: the only place that decides how this process connects to Ray."""
from __future__ import annotations

import os
import socket

from dataaudit.errors import DataAuditError

# Joining a cluster: how long to wait for its address to answer, and how many tries Ray gets to reach its GCS (each
# waits up to ~35 s for an address that answers but is no Ray; Ray's default of 20 tries waits over ten minutes).
# A running cluster answers the first; RAY_gcs_server_port_wait_time_s set by the user wins.
REACH_SECONDS = 5
GCS_TRIES = "1"


class RayStartError(DataAuditError):
    """Ray could not be started or joined: one line saying why (exit 2 on the command line)."""


def ray_init(ray_address: str | None):
    """Join the cluster at `ray_address`, or start a local Ray (a no-op when Ray is already up); returns `ray`."""
    from dataaudit.extras import require

    ray = require("ray", "the Ray engine")   # imported here: the local engine never loads Ray

    if not ray.is_initialized():
        where = f"the Ray cluster at {ray_address}" if ray_address else "a local Ray"
        if ray_address:
            _reachable(ray_address, where)
            os.environ.setdefault("RAY_gcs_server_port_wait_time_s", GCS_TRIES)
        try:
            ray.init(address=ray_address, include_dashboard=False, log_to_driver=False, configure_logging=False)
        except Exception as exc:   # noqa: BLE001  (Ray raises many kinds: ConnectionError, RuntimeError, ValueError)
            text = " ".join(str(exc).split())[:500] or type(exc).__name__
            raise RayStartError(f"cannot start or join {where}: {text} (--engine local runs without Ray)") from None
    return ray


def _reachable(address: str, where: str) -> None:
    """A host:port address (ray:// too) must accept a connection within REACH_SECONDS; "auto" and the like are
    Ray's to resolve."""
    host, sep, port = address.removeprefix("ray://").rpartition(":")
    if not sep or not port.isdigit() or not host:
        return
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=REACH_SECONDS).close()
    except OSError as exc:
        raise RayStartError(f"cannot start or join {where}: {exc.strerror or exc} (--engine local runs without "
                            "Ray)") from None
