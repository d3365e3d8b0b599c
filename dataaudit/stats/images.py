"""Mergeable image statistics per image field: how many images, how many decoded, their formats and modes, and
the distributions of width, height and aspect ratio (report.json's `images`, the report's Images section)."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from dataaudit.images.probe import STATUS_NAMES
from dataaudit.stats.lengths import LengthStats

ASPECT_UNIT = "long side / short side, x100"   # aspect ratios kept as integers (the buckets count integers)


@dataclass
class ImageStats:
    images: int = 0
    decoded: int = 0
    formats: Counter = field(default_factory=Counter)
    modes: Counter = field(default_factory=Counter)
    width: LengthStats = field(default_factory=lambda: LengthStats("px"))
    height: LengthStats = field(default_factory=lambda: LengthStats("px"))
    aspect: LengthStats = field(default_factory=lambda: LengthStats(ASPECT_UNIT))

    def add(self, ib, f: int) -> None:
        """The images of field index `f` in an ImageBatch (dimensions of those whose header was read)."""
        mine = np.flatnonzero(ib.field == f)
        self.images += int(mine.size)
        self.decoded += int(ib.decoded()[mine].sum())
        self.formats.update(ib.formats[i] or f"({STATUS_NAMES[ib.status[i]]})" for i in mine.tolist())
        self.modes.update(ib.modes[i] for i in mine.tolist() if ib.modes[i] is not None)
        w, h = ib.width[mine], ib.height[mine]
        known = (w > 0) & (h > 0)
        w, h = w[known], h[known]
        self.width.add(w)
        self.height.add(h)
        self.aspect.add(np.rint(100.0 * np.maximum(w, h) / np.maximum(np.minimum(w, h), 1)).astype(np.int64))

    def merge(self, other: "ImageStats") -> "ImageStats":
        return ImageStats(self.images + other.images, self.decoded + other.decoded, self.formats + other.formats,
                          self.modes + other.modes, self.width.merge(other.width), self.height.merge(other.height),
                          self.aspect.merge(other.aspect))

    def state(self) -> dict:
        return {"images": self.images, "decoded": self.decoded, "formats": dict(sorted(self.formats.items())),
                "modes": dict(sorted(self.modes.items())), "width": self.width.state(),
                "height": self.height.state(), "aspect": self.aspect.state()}

    @classmethod
    def from_state(cls, s: dict) -> "ImageStats":
        return cls(s["images"], s["decoded"], Counter(s["formats"]), Counter(s["modes"]),
                   LengthStats.from_state(s["width"]), LengthStats.from_state(s["height"]),
                   LengthStats.from_state(s["aspect"]))

    def to_json(self) -> dict:
        return {"images": self.images, "decoded": self.decoded, "formats": dict(self.formats.most_common()),
                "modes": dict(self.modes.most_common()), "width": self.width.to_json(),
                "height": self.height.to_json(), "aspect": self.aspect.to_json()}


def merge_states(states: list[dict], kind=None) -> dict:
    """report.json's `images` (or, with `kind` MediaStats, `media`): per field, the merged statistics of every
    shard."""
    kind = kind or ImageStats
    merged: dict = {}
    for per_field in states:
        for name, s in per_field.items():
            stat = kind.from_state(s)
            merged[name] = merged[name].merge(stat) if name in merged else stat
    return {name: stat.to_json() for name, stat in sorted(merged.items())}
