"""Mergeable video and audio statistics per media field: how many files, how many read cleanly, their
containers, and the distributions of duration, frame rate and sample rate (report.json's `media`, the report's
charts)."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from dataaudit.images.probe import STATUS_NAMES
from dataaudit.stats.lengths import LengthStats

# Kept as integers (the length buckets count values >= 1): milliseconds, frames per second x100, hertz.
DIMS = {"duration": "ms", "fps": "frames/s, x100", "sample_rate": "Hz"}
SCALE = {"duration": 1000.0, "fps": 100.0, "sample_rate": 1.0}


@dataclass
class MediaStats:
    kind: str = ""
    files: int = 0
    ok: int = 0
    formats: Counter = field(default_factory=Counter)
    dims: dict = field(default_factory=lambda: {k: LengthStats(u) for k, u in DIMS.items()})

    def add(self, mb, name: str) -> None:
        """The files of field `name` in a MediaBatch (the values of those whose header was read)."""
        mine = np.array([n == name for n in mb.names], bool)
        idx = np.flatnonzero(mine)
        if not idx.size:
            return
        self.kind = mb.kinds[idx[0]]
        status = mb.status[idx]
        self.files += int(idx.size)
        self.ok += int(np.count_nonzero(status == 0))
        self.formats.update(mb.probes[i].format or f"({STATUS_NAMES[mb.probes[i].status]})" for i in idx.tolist())
        for dim in DIMS:
            v = mb.array(dim)[idx]
            self.dims[dim].add(np.rint(v[np.isfinite(v) & (v > 0)] * SCALE[dim]).astype(np.int64))

    def merge(self, other: "MediaStats") -> "MediaStats":
        return MediaStats(self.kind or other.kind, self.files + other.files, self.ok + other.ok,
                          self.formats + other.formats, {k: self.dims[k].merge(other.dims[k]) for k in DIMS})

    def state(self) -> dict:
        return {"kind": self.kind, "files": self.files, "ok": self.ok, "formats": dict(sorted(self.formats.items())),
                **{k: self.dims[k].state() for k in DIMS}}

    @classmethod
    def from_state(cls, s: dict) -> "MediaStats":
        return cls(s["kind"], s["files"], s["ok"], Counter(s["formats"]),
                   {k: LengthStats.from_state(s[k]) for k in DIMS})

    def to_json(self) -> dict:
        out = {"kind": self.kind, "files": self.files, "ok": self.ok, "formats": dict(self.formats.most_common())}
        return {**out, **{k: self.dims[k].to_json() for k in DIMS if self.dims[k].count}}


def merge_states(states: list[dict]) -> dict:
    """report.json's `media`: per field, the merged statistics of every shard (the images' merge, of MediaStats)."""
    from dataaudit.stats.images import merge_states as merge

    return merge(states, MediaStats)
