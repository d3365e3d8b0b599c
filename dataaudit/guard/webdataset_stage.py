"""The guard as a stage of a webdataset pipeline: the audit's checks on decoded samples, before batching.

    import webdataset as wds
    from dataaudit.guard.webdataset_stage import guard_stage

    stage = guard_stage("audit.toml", fields={"label": "cls", "numeric": ["features.npy"]})
    ds = wds.WebDataset(urls).decode().compose(stage).to_tuple("features.npy", "cls")

Samples are checked `group` at a time with the collate guard's checks (CollateGuard.check: the same registered
checks and config as the audit). A sample flagged by a check whose severity is in `act_on` is dropped (or only
logged, `drop=False`), named by its shard and key: webdataset's `__url__` and `__key__`, the same key the audit's
tar reader gives the record. Each sample that goes on gets `__shard__` (from `__url__`), so a CollateGuard or
DeviceGuard downstream names it the same way. The stage runs where the pipeline runs (DataLoader workers).

`skip_list="skip-list.parquet"` (dataaudit.guard.skip_list: the culprits `dataaudit replay --skip-list` confirmed)
drops the samples it names by (shard, key) before they are checked; `skipped_listed` counts them.
"""
from __future__ import annotations

import logging
from itertools import islice
from typing import Any, Iterable, Iterator, Mapping

from dataaudit.guard.collate import CollateGuard
from dataaudit.provenance import KEY, SHARD

log = logging.getLogger("dataaudit.guard")


class GuardStage:
    """A webdataset stage (`.compose(stage)`): an iterator of sample dicts in, the samples that pass out.

    checked / dropped / skipped_listed: counts in this process (each DataLoader worker keeps its own)."""

    def __init__(self, config=None, *, checks=None, fields: Mapping[str, Any] | None = None, group: int = 64,
                 drop: bool = True, act_on: Iterable[str] = ("error",), skip_list=None):
        if group < 1:
            raise ValueError(f"group must be at least 1, got {group}")
        self.guard = CollateGuard(None, config, checks=checks, fields=fields)
        self.group, self.drop, self.act_on = group, drop, frozenset(act_on)
        self.checked = self.dropped = self.skipped_listed = 0
        self.skip_list = skip_list   # a path until the first group (each worker reads it for itself)

    def _pass(self, samples: list[dict]) -> list[dict]:
        for s in samples:
            if s is not None and SHARD not in s and "__url__" in s:   # None: the guard's null_sample
                s[SHARD] = s["__url__"]
        if self.skip_list is not None:
            samples = self._unlisted(samples)
            if not samples:
                return samples
        res, keys, shards, _ = self.guard.check(samples)
        self.checked += len(samples)
        if not res.calls:
            return samples
        acting = [c.severity in self.act_on for c in res.calls]
        bad = res.rows(acting).cpu().numpy()
        if not bad.any():
            return samples
        flagged = res.flagged.cpu().numpy()
        named = [f"{shards[i]}:{keys[i]} ({'/'.join(c.label for j, c in enumerate(res.calls) if flagged[j, i])})"
                 for i in bad.nonzero()[0].tolist()]
        log.warning("webdataset guard stage: %s %d of %d samples: %s", "dropped" if self.drop else "flagged",
                    len(named), len(samples), ", ".join(named[:5]) + (", ..." if len(named) > 5 else ""))
        if not self.drop:
            return samples
        self.dropped += len(named)
        return [s for s, b in zip(samples, bad.tolist()) if not b]

    def _unlisted(self, samples: list[dict]) -> list[dict]:
        from dataaudit.guard.skip_list import as_skip_list

        self.skip_list = as_skip_list(self.skip_list)
        listed = self.skip_list.mask([s.get(SHARD) if s is not None else None for s in samples],
                                     [s.get(KEY) if s is not None else None for s in samples])
        if listed is None or not listed.any():
            return samples
        self.skipped_listed += int(listed.sum())
        return [s for s, b in zip(samples, listed.tolist()) if not b]

    def __call__(self, samples: Iterable[dict]) -> Iterator[dict]:
        it = iter(samples)
        while group := list(islice(it, self.group)):
            yield from self._pass(group)


def guard_stage(config=None, **kwargs) -> GuardStage:
    """`wds.WebDataset(urls).decode().compose(guard_stage("audit.toml", fields={...}))`; see GuardStage."""
    return GuardStage(config, **kwargs)


__all__ = ["GuardStage", "guard_stage"]
