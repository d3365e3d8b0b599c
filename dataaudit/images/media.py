"""Where each image of a batch has its bytes, and their reading in windows bounded by bytes.

An image's bytes are in the batch (a binary column, a struct's `bytes`) or in a file next to the shard (a path).
None is held longer than its probe takes: the images are read, probed and let go a window at a time, a window
holding at most IN_FLIGHT bytes (one image larger than that, up to [data] max_image_bytes, is a window alone), so
4,096 references to 5 MB files, or 40 references to one 200 MB file, never sit in memory together. A file is
sized (stat) before it is read: one over max_image_bytes is flagged unread, and only a regular file is opened
(dataaudit.io refuses a FIFO or a device: its read would block or never end).

A reference is a path (resolved inside the media root: the shard's folder, or `[data] media_root`), a `data:` URL
(its base64 sized before it is decoded, against the same byte limit) or a URL, which is never fetched: its status is
REMOTE, counted and named in the notes, never flagged.
"""
from __future__ import annotations

import base64
import binascii
import os
import re
from dataclasses import dataclass, field
from typing import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dataaudit.io import inside, join, read_bytes, resolved, stat
from dataaudit.runs import runs_within

from .probe import CORRUPT, MISSING, OUTSIDE, REMOTE, TOO_BIG, Probe

# The image bytes one batch holds at once (copies of in-batch bytes and files read), before they are probed.
# A constant, not a [data] key: it bounds memory, not what is checked (results are the same for any value).
IN_FLIGHT = 256 << 20


def media_folder(shard: str, data) -> str:
    """Where a shard's referenced media paths resolve: `[data] media_root` (`--media-root`, LLaMA-Factory's
    media_dir) when set, else the shard's own folder. Never outside it (resolve_inside)."""
    return data.get("media_root") or os.path.dirname(shard)


def resolve_inside(folder: str, path: str) -> tuple[str | None, str | None]:
    """(the file, None) when `path` names a file inside `folder` (symlinks resolved), else (None, why)."""
    if "\0" in path:
        return None, "path holds a NUL byte"
    if os.path.isabs(path) or path.startswith(("/", "\\")) or (len(path) > 1 and path[1] == ":"):
        return None, f"absolute path {path!r} (outside the media root: the shard's folder, or --media-root)"
    # links resolved locally; in a store (keys, no links) `..` is counted within the key, never sent
    root = resolved(folder)
    full = resolved(join(root, path))
    if not inside(full, root):
        return None, f"path {path!r} resolves outside the media root (the shard's folder, or --media-root)"
    return full, None


_DATA_URL = re.compile(r"data:([\w.+-]+/[\w.+-]+)?((?:;[\w.+-]+=[^;,]*)*)(;base64)?,", re.ASCII)
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")


def data_url(ref: str, limit: int, name: str = "max_image_bytes") -> bytes | Probe | None:
    """The bytes of a `data:` URL (base64 or percent-free plain), None when `ref` is not one; a payload whose
    decoded size would pass `limit` is refused before it is decoded."""
    m = _DATA_URL.match(ref)
    if m is None:
        return None
    payload = ref[m.end():]
    if not m.group(3):
        return Probe(CORRUPT, "data: URL without ;base64 (not an image encoding)")
    if len(payload) // 4 * 3 > limit:
        return Probe(TOO_BIG, f"data: URL of about {len(payload) // 4 * 3} bytes > {name} {limit} (not decoded)")
    try:
        return base64.b64decode("".join(payload.split()), validate=True)
    except (binascii.Error, ValueError) as e:
        return Probe(CORRUPT, f"data: URL with invalid base64: {e}")


def _sized(folder: str, path: str, limit: int, name: str = "max_image_bytes") -> tuple[str | None, int, Probe | None]:
    """(the file, its size, None) for a referenced image to read, or (None, 0, the probe saying why not)."""
    if _URL.match(path):
        return None, 0, Probe(REMOTE, f"{path[:200]!r} is a URL (not fetched, not checked)")
    full, why = resolve_inside(folder, path)
    if full is None:
        return None, 0, Probe(OUTSIDE, why)
    try:
        size = stat(full).size
    except FileNotFoundError:
        return None, 0, Probe(MISSING, f"no such file: {path!r}")
    except OSError as e:
        return None, 0, Probe(MISSING, f"cannot read {path!r}: {e.strerror or e}")
    if size > limit:
        return None, 0, Probe(TOO_BIG, f"file of {size} bytes > {name} {limit} (not read)")
    return full, size, None


def _read(full: str, path: str, limit: int) -> bytes | Probe:
    try:
        data = read_bytes(full, limit)
    except OSError as e:     # gone since, unreadable, or not a regular file (a FIFO, a device)
        return Probe(MISSING, f"cannot read {path!r}: {e.strerror or e}")
    if len(data) > limit:    # grew since it was sized
        return Probe(TOO_BIG, f"file of more than {limit} bytes > max_image_bytes {limit} (not read)")
    return data


@dataclass
class Media:
    """The bytes of each image of a batch, by reference: an in-batch binary array and an index in it, or a file.
    `pre`: the probe of an image known without reading it (missing, outside, too big), else None."""

    folder: str
    limit: int
    limit_name: str = "max_image_bytes"              # the [data] key of `limit` (media: max_media_bytes)
    arrays: list = field(default_factory=list)       # binary arrays holding in-batch bytes
    where: list = field(default_factory=list)        # per image: (array index, element), (-1, path) or (-2, k)
    inline: list = field(default_factory=list)       # the decoded bytes of data: URLs
    files: list = field(default_factory=list)        # per image: the resolved file to read, or None
    sizes: list = field(default_factory=list)        # per image: bytes it holds (0 when not read)
    pre: list = field(default_factory=list)
    same: dict = field(default_factory=dict)          # image -> an earlier image of the same file (read once)
    _first: dict = field(default_factory=dict, repr=False)   # resolved file -> its first image

    def add_bytes(self, data: pa.Array, paths: list) -> None:
        """Images of one field: `data` their bytes (null: read the file `paths[i]`, when there is one)."""
        a = len(self.arrays)
        self.arrays.append(data)
        lengths = pc.fill_null(pc.binary_length(data), -1).to_numpy(zero_copy_only=False) if len(data) \
            else np.zeros(0, np.int64)
        for i, (n, path) in enumerate(zip(lengths.tolist(), paths)):
            if n >= 0:
                self._append((a, i), None, n, None)
            elif path is not None:
                self.add_path(path)
            else:
                self._append((a, i), None, 0, Probe(MISSING, "image struct with no bytes and no path"))

    def add_path(self, path: str) -> None:
        if path.startswith("data:"):
            data = data_url(path, self.limit, self.limit_name)
            if isinstance(data, bytes):
                self.inline.append(data)
                self._append((-2, len(self.inline) - 1), None, len(data), None)
                return
            if data is not None:
                self._append((-1, path[:64]), None, 0, data)
                return
        full, size, found = _sized(self.folder, path, self.limit, self.limit_name)
        if full is not None:       # a file many records name (one picture for every row) is read once
            first = self._first.setdefault(full, len(self.where))
            if first != len(self.where):
                self.same[len(self.where)] = first
        self._append((-1, path), full, size, found)

    def _append(self, where, full, size, found) -> None:
        self.where.append(where)
        self.files.append(full)
        self.sizes.append(size)
        self.pre.append(found)

    def fetch(self, k: int) -> bytes | Probe:
        """Image k's bytes (a file read now, bounded by the byte limit), or the probe saying why there are none."""
        if self.pre[k] is not None:
            return self.pre[k]
        a, i = self.where[k]
        if a >= 0:
            return self.arrays[a][i].as_py()
        if a == -2:
            return self.inline[i]
        return _read(self.files[k], i, self.limit)

    def windows(self, budget: int = IN_FLIGHT) -> Iterator[list[int]]:
        """The images to read, in order, in runs holding at most `budget` bytes together (one larger image alone)."""
        todo = ((k, size) for k, (size, found) in enumerate(zip(self.sizes, self.pre))
                if found is None and k not in self.same)
        return runs_within(todo, budget)
