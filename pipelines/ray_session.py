"""Ray started (or joined) on first use: the only place that decides how this process connects to Ray."""
from __future__ import annotations


def ray_init(ray_address: str | None):
    """Join the cluster at `ray_address`, or start a local Ray (a no-op when Ray is already up); returns `ray`."""
    from dataaudit.extras import require

    ray = require("ray", "the Ray engine")   # imported here: the local engine never loads Ray

    if not ray.is_initialized():
        ray.init(address=ray_address, include_dashboard=False, log_to_driver=False, configure_logging=False)
    return ray
