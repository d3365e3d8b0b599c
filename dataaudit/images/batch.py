"""Every image of a record batch, probed once: the "image" target of the image checks.

Image fields (dataaudit.fields) hold bytes, structs {bytes, path} (a path is read only when the bytes are null)
or paths, one per record or a list of them. They are flattened into one row per image, with the record, the
field and the position in the list it came from, so a flag names `images[1]` of record 7. Paths are resolved
against the shard's folder: a path that leaves it (absolute, `..`, a symlink out) is flagged and never opened.
The images are read and probed in windows bounded by bytes (dataaudit.images.media), and none is kept: a
thumbnail reads its image again. The decodes run on a small thread pool: Pillow releases the GIL while it decodes.
"""
from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import xxhash

from dataaudit.fields import Column

from .media import IN_FLIGHT, Media, resolve_inside  # noqa: F401  (resolve_inside: the rule clean applies too)
from .probe import BOMB, DEFAULT_MAX_BYTES, DEFAULT_MAX_PIXELS, HASH_SIDE, OK, Probe, probe, quiet, thumbnail_png

DEFAULT_THREADS = min(4, os.cpu_count() or 1)


@dataclass(frozen=True)
class Limits:
    """The `[data]` bounds of image decoding: pixels before decoding, bytes of a file before reading it."""

    max_pixels: int = DEFAULT_MAX_PIXELS
    max_bytes: int = DEFAULT_MAX_BYTES
    threads: int = DEFAULT_THREADS
    in_flight: int = IN_FLIGHT      # image bytes held at once (dataaudit.images.media)

    @classmethod
    def from_data(cls, data: dict) -> "Limits":
        return cls(int(data.get("max_image_pixels", DEFAULT_MAX_PIXELS)),
                   int(data.get("max_image_bytes", DEFAULT_MAX_BYTES)),
                   int(data.get("image_threads", DEFAULT_THREADS)))


def flat_images(column: pa.Array, many: bool) -> tuple[pa.Array, np.ndarray, np.ndarray]:
    """(values, record of each, position in its list or -1): one entry per non-null image."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    if many:
        rows = pc.list_parent_indices(column).to_numpy()
        values = pc.list_flatten(column)
        starts = column.offsets.to_numpy()[:-1] if len(column) else np.zeros(0, np.int64)
        pos = np.arange(len(values), dtype=np.int64) - (starts[rows] - (starts[0] if len(starts) else 0))
    else:
        values, rows, pos = column, np.arange(len(column), dtype=np.int64), np.full(len(column), -1, np.int64)
    valid = values.is_valid().to_numpy(zero_copy_only=False)
    keep = np.flatnonzero(valid)
    return values.take(pa.array(keep, pa.int64())), rows[keep].astype(np.int64), pos[keep]


def part_values(column: pa.Array, col: Column) -> tuple[pa.Array, np.ndarray, np.ndarray, np.ndarray]:
    """(values, record, turn, part) of every image, video or audio clip inside a conversation's content parts
    (Column.part_sources): per part, the first source that holds a string there, of a part of the source's types
    when it names some. OpenAI's input_audio base64 becomes a data: URL of its format."""
    from dataaudit.texts import flatten_lists

    turns, rows, turn_pos = flatten_lists(column)
    parts, part_turn, part_pos = flatten_lists(pc.struct_field(turns, col.text_key))
    found = pa.nulls(len(parts), pa.string())
    kinds = pc.struct_field(parts, "type") if parts.type.get_field_index("type") >= 0 else None
    for path, types in reversed(col.part_sources):    # the first source wins: applied last
        value = parts
        for key in path.split("."):
            value = pc.struct_field(value, key)
        value = value.cast(pa.string())
        if path == "input_audio.data":
            fmt = pc.struct_field(pc.struct_field(parts, "input_audio"), "format") \
                if parts.type.field("input_audio").type.get_field_index("format") >= 0 else pa.nulls(len(parts))
            fmt = pc.fill_null(fmt.cast(pa.string()), "wav")
            value = pc.binary_join_element_wise("data:audio/", fmt, ";base64,", value, "")
        if types is not None:
            value = pc.if_else(pc.fill_null(pc.is_in(kinds, pa.array(types)), False), value, None)
        found = pc.coalesce(value, found)
    keep = np.flatnonzero(found.is_valid().to_numpy(zero_copy_only=False))
    take = pa.array(keep, pa.int64())
    turn = part_turn[keep]
    return found.take(take), rows[turn].astype(np.int64), turn_pos[turn].astype(np.int64), part_pos[keep]


@dataclass
class ImageBatch:
    """One row per image of a batch: where it is, and what its probe found (see dataaudit.images.probe)."""

    fields: tuple[Column, ...]
    rows: np.ndarray            # int64: the record (batch row) of each image
    field: np.ndarray           # int32: index into `fields`
    pos: np.ndarray             # int64: position in a list field, -1 for a single image (a part's: its turn)
    names: list                 # the file name or path that came with the image (struct path, path), or None
    status: np.ndarray          # int8, probe.OK, EMPTY, ...
    errors: list                # str or None
    formats: list               # Pillow's format name, or None
    modes: list                 # Pillow's mode, or None
    width: np.ndarray           # int64, -1 when unknown
    height: np.ndarray
    pixels: np.ndarray          # int64: the pixel count the header declares, -1 when unknown
    frames: np.ndarray          # int64
    transparency: np.ndarray    # bool
    nbytes: np.ndarray          # int64, -1 when nothing was read
    grey_std: np.ndarray        # float32, nan when not decoded
    brightness: np.ndarray      # float32: mean grey / 255 of the reduced image, nan when not decoded
    sharpness: np.ndarray       # float32: Laplacian variance of the reduced image, nan when not decoded
    digest: np.ndarray          # uint64: xxh3-64 of the bytes (0 when none)
    grey32: np.ndarray          # float32 [n, 32, 32] of the decoded images (zeros elsewhere), for phash
    media: Media                # where each image's bytes are (read again for the thumbnail of a flagged one)
    part: np.ndarray | None = None   # int64: an image part's position in its turn's parts, -1 for other images

    def __len__(self) -> int:
        return self.rows.size

    def paths(self, idx: np.ndarray) -> list[str]:
        """Flag paths: the field, with `[k]` for an element of a list field."""
        names = [c.name for c in self.fields]
        part = self.part[idx].tolist() if self.part is not None else [-1] * len(idx)
        out = []
        for f, p, k in zip(self.field[idx].tolist(), self.pos[idx].tolist(), part):
            col = self.fields[f]
            if col.parts_of is not None:      # messages[0].content[1]: the turn and the part that holds it
                out.append(f"{col.parts_of}[{p}].{col.text_key}[{k}]")
            else:
                out.append(names[f] if p < 0 else f"{names[f]}[{p}]")
        return out

    def expected_format(self) -> list:
        """The file extension each image claims (its path or file name; else a binary column's name)."""
        out = []
        for f, name in zip(self.field.tolist(), self.names):
            claim = name if name else (self.fields[f].name if self.fields[f].image == "bytes" else "")
            out.append(os.path.splitext(claim)[1].lstrip(".").lower() or claim.rsplit(".", 1)[-1].lower())
        return out

    def thumbnails(self, idx) -> list:
        """A base64 PNG data URI (at most 64 px) of each image in `idx`, None where it does not decode."""
        import base64

        out = []
        for i in idx:
            data = self.media.fetch(i) if self.nbytes[i] >= 0 and self.status[i] != BOMB else None
            png = thumbnail_png(data) if isinstance(data, bytes) else None
            out.append(None if png is None else "data:image/png;base64," + base64.b64encode(png).decode("ascii"))
        return out

    @classmethod
    def of(cls, batch: pa.RecordBatch, fields: tuple[Column, ...], folder: str, limits: Limits = Limits()) \
            -> "ImageBatch":
        rows, field, pos, names, part = [], [], [], [], []
        media = Media(folder, limits.max_bytes)
        for f, col in enumerate(fields):
            if col.parts_of is not None:
                values, r, p, k = part_values(batch.column(col.parts_of), col)
            else:
                values, r, p = flat_images(batch.column(col.name), col.many)
                k = np.full(len(values), -1, np.int64)
            part.append(k)
            n = len(values)
            rows.append(r)
            pos.append(p)
            field.append(np.full(n, f, np.int32))
            if col.image == "struct":
                idx = values.type.get_field_index("path")
                paths = pc.struct_field(values, "path").to_pylist() if idx >= 0 else [None] * n
                media.add_bytes(pc.struct_field(values, "bytes"), paths)
            elif col.image == "bytes":
                paths = [None] * n
                media.add_bytes(values, paths)
            else:
                paths = values.to_pylist()
                for path in paths:
                    media.add_path(path)
                paths = [None if p.startswith("data:") else p for p in paths]   # its bytes are the image
            names += paths
        probes, nbytes, digest = _probe_all(media, limits)
        n = len(probes)
        cat = lambda parts, dtype: np.concatenate(parts).astype(dtype) if parts else np.zeros(0, dtype)  # noqa: E731
        grey32 = np.zeros((n, HASH_SIDE, HASH_SIDE), np.float32)
        for i, p in enumerate(probes):
            if p.grey32 is not None:
                grey32[i] = p.grey32
        return cls(
            fields=fields, rows=cat(rows, np.int64), field=cat(field, np.int32), pos=cat(pos, np.int64),
            names=names, status=np.array([p.status for p in probes], np.int8),
            errors=[p.error for p in probes], formats=[p.format for p in probes], modes=[p.mode for p in probes],
            width=np.array([p.width for p in probes], np.int64), height=np.array([p.height for p in probes], np.int64),
            pixels=np.array([p.pixels for p in probes], np.int64),
            frames=np.array([p.frames for p in probes], np.int64),
            transparency=np.array([p.transparency for p in probes], bool),
            nbytes=nbytes, grey_std=np.array([p.grey_std for p in probes], np.float32),
            brightness=np.array([p.brightness for p in probes], np.float32),
            sharpness=np.array([p.sharpness for p in probes], np.float32),
            digest=digest, grey32=grey32, media=media, part=cat(part, np.int64))

    def decoded(self) -> np.ndarray:
        return self.status == OK


def _probe_all(media: Media, limits: Limits) -> tuple[list[Probe], np.ndarray, np.ndarray]:
    """The probe, bytes read (-1: none) and xxh3-64 digest (0: none) of every image, a window of bytes at a time
    (dataaudit.images.media): each window's images are read, probed and let go before the next is read."""
    n = len(media.pre)
    out = list(media.pre)
    nbytes = np.full(n, -1, np.int64)
    digest = np.zeros(n, np.uint64)
    with quiet():
        for window in media.windows(limits.in_flight):
            blobs = {}
            for k in window:
                data = media.fetch(k)
                if isinstance(data, Probe):       # unreadable after all (a FIFO, gone since it was sized)
                    out[k] = data
                    continue
                blobs[k] = data
                nbytes[k] = len(data)
                digest[k] = xxhash.xxh3_64_intdigest(data)
            for k, p in _probe_window(blobs, limits).items():
                out[k] = p
            del blobs
    for k, first in media.same.items():      # the same file again: the same findings, under its own name
        p, mine, theirs = out[first], media.where[k][1], media.where[first][1]
        if p.error is not None and mine != theirs:
            p = replace(p, error=p.error.replace(repr(theirs), repr(mine)))
        out[k], nbytes[k], digest[k] = p, nbytes[first], digest[first]
    return out, nbytes, digest


def _probe_window(blobs: dict[int, bytes], limits: Limits) -> dict[int, Probe]:
    """The probes of one window's images: decodes spread over a few threads, a slice of the images each (one task
    per image would spend more on the pool's bookkeeping, under the GIL, than a small JPEG takes to decode)."""
    todo = list(blobs)

    def work(part: list[int]) -> list[Probe]:
        return [probe(blobs[k], limits.max_pixels) for k in part]

    if limits.threads > 1 and len(todo) > 1:
        parts = [todo[j::limits.threads * 4] for j in range(limits.threads * 4)]
        with ThreadPoolExecutor(limits.threads) as pool:
            return {k: p for part, probes in zip(parts, pool.map(work, parts)) for k, p in zip(part, probes)}
    return dict(zip(todo, work(todo)))
