"""Training-time guard: the audit's checks inside the training loop, plus a throughput profiler.

Importable without Ray, Jinja, click or the shard readers (torch, numpy, and pyarrow through the shared check
registry, whose text checks use pyarrow.compute).

    from dataaudit.guard import CollateGuard, DeviceGuard

    loader = DataLoader(ds, batch_size=64, num_workers=4, pin_memory=True,
                        collate_fn=CollateGuard(None, "audit.toml"))       # provenance + worker-side checks
    guard = DeviceGuard(loader, "audit.toml", device="cuda", policy="mask")
    for batch in guard:
        ...
    print(guard.summary())

See docs/guard.md.
"""
from dataaudit.guard.collate import CollateError, CollateGuard
from dataaudit.guard.device import DeviceGuard
from dataaudit.guard.findings import BadBatchError, Finding
from dataaudit.guard.ondevice import OnDeviceGuard
from dataaudit.guard.options import POLICIES, GuardOptions
from dataaudit.guard.payload import GuardedBatch
from dataaudit.guard.plan import GUARD_DEFAULT_CHECKS, BatchChecks, CheckCall, GuardPlan
from dataaudit.guard.profiler import StepRecord, ThroughputProfiler
from dataaudit.guard.snapshot import Snapshot, load_snapshot, save_snapshot

__all__ = [
    "CollateGuard", "CollateError", "GuardedBatch", "DeviceGuard", "OnDeviceGuard", "GuardOptions", "BadBatchError",
    "Finding", "POLICIES",
    "GuardPlan", "BatchChecks", "CheckCall", "GUARD_DEFAULT_CHECKS", "ThroughputProfiler", "StepRecord",
    "Snapshot", "load_snapshot", "save_snapshot", "GuardCallback",
]


def __getattr__(name):  # the Lightning callback imports lightning (optional): only when asked for
    if name == "GuardCallback":
        from dataaudit.guard.lightning import GuardCallback
        return GuardCallback
    raise AttributeError(name)
