"""Every video and audio file of a record batch, probed once: the "media" target of the media checks.

Media fields (dataaudit.fields, Column.media) hold paths, bytes or structs {bytes, path}, one per record or a
list. Like images (dataaudit.images.batch) they are flattened into one row per file with its record and position
(`videos[1]` of record 7); paths are resolved inside the shard's folder and sized before anything is opened
(dataaudit.images.media.Media, with the byte cap max_media_bytes); a file many records name is probed once.
`MediaBatch.of_values` takes the flat values and their records directly, so content parts can feed it too.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dataaudit.images.batch import flat_images, part_values
from dataaudit.images.media import Media

from .probe import EMPTY, MISSING, MediaLimits, MediaProbe, probe


@dataclass
class Source:
    """One media field's files: their values (paths, bytes or structs), record and position in the list (-1:
    a single file), the field's name and form, and "video" or "audio"."""

    name: str
    kind: str
    form: str
    values: pa.Array
    rows: np.ndarray
    pos: np.ndarray
    labels: list | None = None   # per file, the path a flag names (content parts: `messages[0].content[1]`)


@dataclass
class MediaBatch:
    names: list                 # field name of each file
    kinds: list                 # "video" / "audio"
    rows: np.ndarray            # int64: record of each file
    pos: np.ndarray             # int64: position in a list field, -1 for a single file
    paths_given: list           # the path that came with the file, or None
    probes: list                # MediaProbe per file
    labels: list | None = None  # per file, the flag path of a content part (None: the field and position)

    def __len__(self) -> int:
        return self.rows.size

    def paths(self, idx: np.ndarray) -> list[str]:
        labels = self.labels or [None] * len(self.names)
        return [labels[i] or (self.names[i] if self.pos[i] < 0 else f"{self.names[i]}[{self.pos[i]}]")
                for i in idx.tolist()]

    def in_parts(self, kind: str) -> np.ndarray:
        """Which files of `kind` sit in content parts (each its own placeholder)."""
        labels = self.labels or [None] * len(self.names)
        return np.array([lb is not None and k == kind for lb, k in zip(labels, self.kinds)], bool)

    def array(self, attr: str, dtype=np.float64) -> np.ndarray:
        return np.array([getattr(p, attr) for p in self.probes], dtype)

    @property
    def status(self) -> np.ndarray:
        return self.array("status", np.int8)

    @property
    def measured(self) -> np.ndarray:
        """Files whose header passed and whose packets were demuxed (a bomb's or a refused header's declarations
        are that file's error, not also a duration or rate warning)."""
        return self.array("packets", np.int64) >= 0

    @property
    def is_video(self) -> np.ndarray:
        return np.array([k == "video" for k in self.kinds], bool)

    def thumbnails(self, idx) -> list:
        """A poster frame (a small JPEG data URI) of each video in `idx`, None for audio or undecoded video."""
        import base64

        return [None if self.probes[i].poster is None else
                "data:image/jpeg;base64," + base64.b64encode(self.probes[i].poster).decode("ascii")
                for i in idx]

    @classmethod
    def of(cls, batch: pa.RecordBatch, fields, folder: str, limits: MediaLimits = MediaLimits()) -> "MediaBatch":
        sources = []
        for col in fields:
            if col.parts_of is not None:
                values, rows, turn, part = part_values(batch.column(col.parts_of), col)
                labels = [f"{col.parts_of}[{t}].{col.text_key}[{k}]" for t, k in zip(turn.tolist(), part.tolist())]
                sources.append(Source(col.name, col.media, col.image, values, rows, part, labels))
                continue
            values, rows, pos = flat_images(batch.column(col.name), col.many)
            sources.append(Source(col.name, col.media, col.image, values, rows, pos))
        return cls.of_values(sources, folder, limits)

    @classmethod
    def of_values(cls, sources: list[Source], folder: str, limits: MediaLimits = MediaLimits()) -> "MediaBatch":
        media = Media(folder, limits.max_bytes, "max_media_bytes")
        names, kinds, rows, pos, given, labels = [], [], [], [], [], []
        for src in sources:
            n = len(src.values)
            labels += src.labels if src.labels is not None else [None] * n
            names += [src.name] * n
            kinds += [src.kind] * n
            rows.append(src.rows)
            pos.append(src.pos)
            if src.form == "struct":
                idx = src.values.type.get_field_index("path")
                paths = pc.struct_field(src.values, "path").to_pylist() if idx >= 0 else [None] * n
                media.add_bytes(pc.struct_field(src.values, "bytes"), paths)
            elif src.form == "bytes":
                paths = [None] * n
                media.add_bytes(src.values, paths)
            else:
                paths = src.values.to_pylist()
                for path in paths:
                    media.add_path(path)
                paths = [None if p.startswith("data:") else p for p in paths]   # its bytes are the file
            given += paths
        probes = _probe_all(media, kinds, limits)
        cat = lambda parts: np.concatenate(parts).astype(np.int64) if parts else np.zeros(0, np.int64)  # noqa: E731
        return cls(names, kinds, cat(rows), cat(pos), given, probes, labels if any(labels) else None)


def _source(media: Media, k: int):
    """What probe() reads for file k: its bytes (in the batch) or its resolved path (opened by the probe), or the
    MediaProbe saying why there is nothing (missing, outside, too big, empty)."""
    pre = media.pre[k]
    if pre is not None:
        return MediaProbe(pre.status, pre.error)
    a, i = media.where[k]
    if a >= 0:
        return media.arrays[a][i].as_py()
    if a == -2:      # a data: URL, decoded within the byte limit
        return media.inline[i]
    if media.sizes[k] == 0:
        return MediaProbe(EMPTY, "0 bytes")
    return media.files[k]


def _probe_all(media: Media, kinds: list, limits: MediaLimits) -> list[MediaProbe]:
    """Each file probed once (a file named again takes its first probe), a few at a time on a thread pool (FFmpeg
    releases the GIL while it demuxes and decodes); in-batch bytes are taken one by one, not all held at once."""
    todo = [k for k in range(len(media.where)) if k not in media.same]
    out: list = [None] * len(media.where)

    def work(k: int) -> MediaProbe:
        src = _source(media, k)
        if isinstance(src, MediaProbe):
            return src
        try:
            found = probe(src, kinds[k], limits)
            if isinstance(src, str) and found.error and src in found.error:   # FFmpeg's message names the file
                found.error = found.error.replace(src, media.where[k][1])
            return found
        except OSError as e:   # gone since it was sized, not a regular file
            return MediaProbe(MISSING, f"cannot read {media.where[k][1]!r}: {e.strerror or e}")

    if limits.threads > 1 and len(todo) > 1:
        with ThreadPoolExecutor(limits.threads) as pool:
            for k, p in zip(todo, pool.map(work, todo)):
                out[k] = p
    else:
        for k in todo:
            out[k] = work(k)
    for k, first in media.same.items():
        out[k] = out[first] if kinds[k] == kinds[first] else work(k)
    return out
