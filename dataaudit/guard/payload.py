"""What the collate guard hands the device guard with a batch: its provenance and check results.

A dict batch carries them as entries (dataaudit.provenance's KEY, SHARD, GUARD); any other batch comes wrapped
in a GuardedBatch. The results travel as tensors (`checks_to_payload`), so they are pinned and moved with the
batch, and are rebuilt on the device side with `checks_from_payload`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from dataaudit.guard.plan import BatchChecks, CheckCall
from dataaudit.guard.tree import move_tree, pin_tree


@dataclass
class GuardedBatch:
    """A collated batch that is not a dict, with its provenance and the collate guard's results."""

    data: Any
    keys: list | None = None
    shards: list | None = None
    guard: dict | None = None
    rows: list | None = None

    def pin_memory(self) -> "GuardedBatch":  # called by the DataLoader's pin-memory thread
        return GuardedBatch(pin_tree(self.data), self.keys, self.shards, pin_tree(self.guard), self.rows)

    def to(self, device, non_blocking: bool = False) -> "GuardedBatch":
        return GuardedBatch(move_tree(self.data, device, non_blocking), self.keys, self.shards,
                            move_tree(self.guard, device, non_blocking), self.rows)


def checks_to_payload(res: BatchChecks, dropped: list | None = None) -> dict:
    """The `__guard__` entry: results as tensors (moved and pinned with the batch) plus the call list."""
    return {"calls": [(c.check, c.field, c.severity, c.params) for c in res.calls],
            "flagged": res.flagged, "value": res.value, "dropped": list(dropped or [])}


def checks_from_payload(payload: Mapping) -> BatchChecks:
    calls = tuple(CheckCall(c[0], c[1], c[2], tuple(tuple(p) for p in c[3])) for c in payload["calls"])
    return BatchChecks(calls, payload["flagged"], payload["value"])


__all__ = ["GuardedBatch", "checks_to_payload", "checks_from_payload"]
