"""WebDataset tar shards, read as one sequential stream (tarfile mode "r|*") and never extracted to disk.

Members are grouped into samples by key (path up to the first dot of the basename) with webdataset's own rule;
members it puts in no sample (no extension, its `__meta__` members) are no record here either.
Text, JSON, class labels and arrays or packed objects (.npy, .npz, .ten, .mp, .cbor: dataaudit.sources.tar_arrays)
are decoded, by our own code: webdataset's default decoders unpickle, and a shard is untrusted input. Pickle-like
members are reported, never loaded. Every other member is kept as raw bytes in a binary column named by its
extension ("jpg", "left.png", "mp4", "xml"): image, video and audio members for the image and media checks
(bounded, dataaudit.images, dataaudit.media), the rest named in the notes as not checked, so `--strict` fails on
them; no member is dropped without a word.

Bounds, so that one hostile member costs its sample, never the job: extended headers are looked at before tarfile
reads them (tar_headers), a member holds at most max_member_bytes and a sample as much for all its members (the
rest of it is flagged, not read), a .json member at most json_budget.MAX_VALUES values, and a batch is cut before a
sample would take it past MAX_BATCH_BYTES.
"""
from __future__ import annotations

import json
import lzma
import re
import tarfile
import zlib
from typing import Iterator

import numpy as np
import pyarrow as pa

from dataaudit.extras import available
from dataaudit.io import open_input

from .base import ShardReadError
from .batch import (MAX_BATCH_BYTES, BatchBuilder, BYTES, INT, INT64_MAX, INT64_MIN, STR, flatten_object,
                    json_value, one_line)
from .json_budget import memory_bytes, over, over_budget
from .record_stream import open_stream
from .tar_arrays import DECODERS, MemberError
from .tar_headers import BoundedTarInfo

MAX_MEMBER_BYTES = 256 << 20
# tarfile's stream reads (and skips a member it is not asked for) in blocks of this size: its default of 10 KiB made
# skipping 8 GiB of gzipped zeros take minutes. The gzip layer (ours) decompresses only what each read asks for.
_READ_BLOCK = 1 << 20
TEXT_SUFFIXES = ("txt", "caption", "cap")   # a text member: `.caption`/`.cap` are captions, like `.txt`
DECODED = {*TEXT_SUFFIXES, "json", "cls", "cls2", "index", *DECODERS}
NOT_UNPICKLED = {"pkl", "pickle", "pth", "pt", "pyd"}

# What tarfile and its decompressors raise on a bad stream (ValueError/OverflowError: malformed header
# fields that slip past tarfile's own checks).
_STREAM_ERRORS = (tarfile.TarError, EOFError, OSError, zlib.error, lzma.LZMAError, ValueError, OverflowError)


_RecordError = MemberError   # one member cannot be decoded; the message becomes (part of) the record's __error__


# webdataset's rule (tariterators.base_plus_ext and skip_meta), so the audit's records are the loader's samples
_KEY_EXT = re.compile(r"^((?:.*/|)[^.]+)[.]([^/]*)$")
_META = re.compile(r"__[^/]*__($|/)")


def split_member(name: str) -> tuple[str, str] | None:
    """'dir/abc.input_ids.npy' -> ('dir/abc', 'input_ids.npy'); extensions are lowercased like WebDataset. None for
    a member webdataset puts in no sample (no extension, e.g. `README`; its `__meta__` members)."""
    m = None if _META.match(name) else _KEY_EXT.match(name)
    return None if m is None else (m.group(1), m.group(2).lower())


def _gunzip(data: bytes, limit: int, budget: str) -> bytes:
    """Decompress (possibly multi-member) gzip without ever holding more than limit + 1 bytes of output."""
    out, total = [], 0
    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
    buf = data
    try:
        while True:
            chunk = d.decompress(buf, limit + 1 - total)
            total += len(chunk)
            out.append(chunk)
            if total > limit:
                raise _RecordError(f"gzip: decompresses to more than {limit} bytes ({budget})")
            buf = d.unconsumed_tail
            if d.eof:
                rest = d.unused_data
                if not rest.strip(b"\0"):
                    break
                d, buf = zlib.decompressobj(16 + zlib.MAX_WBITS), rest
            elif not buf:
                raise _RecordError("gzip: truncated data")
    except zlib.error as e:
        raise _RecordError(f"gzip: {one_line(e)}") from None
    return b"".join(out)


def _utf8(data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise _RecordError(f"invalid UTF-8 at byte {e.start}") from None


def decode_member(ext: str, data: bytes, limit: int, budget: str = "max_member_bytes"
                  ) -> tuple[dict, list[str], int]:
    """Decode one member's bytes by its last suffix. Returns ({column: (kind, value)}, warnings, bytes decoded, their
    size in memory once decoded); `limit` bounds what gzip may decompress to, `budget` names that limit in the
    error."""
    parts = ext.split(".")
    for _ in range(parts.count("gz")):
        data = _gunzip(data, limit, budget)
    parts = [p for p in parts if p != "gz"]
    values, warnings = _decode(parts, data, limit)
    if parts[-1] == "json":
        return values, warnings, len(data), memory_bytes(data)
    inflated = len(data) + sum(v.nbytes for _, v in values.values() if isinstance(v, np.ndarray))
    return values, warnings, inflated, inflated


def _decode(parts: list[str], data: bytes, limit: int) -> tuple[dict, list[str]]:
    suffix = parts[-1]
    col = ".".join(parts[:-1]) or suffix
    if suffix in TEXT_SUFFIXES:
        return {col: (STR, _utf8(data))}, []
    if suffix == "json":
        text = _utf8(data)
        if (n := over(data, text)) is not None:
            raise _RecordError(over_budget(n))
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as e:
            raise _RecordError(f"invalid JSON: {e.msg} at line {e.lineno} column {e.colno}") from None
        except (ValueError, RecursionError) as e:
            raise _RecordError(f"invalid JSON: {one_line(e)}") from None
        if not isinstance(obj, dict):
            return {col: json_value(obj)}, []  # typed like a field: a list of turns is list<struct>
        values: dict = {}
        warnings: list[str] = []
        flatten_object(obj, "" if col == "json" else col + ".", values, warnings, "json")
        return values, warnings
    if suffix in ("cls", "cls2", "index"):
        text = _utf8(data).strip()
        try:
            value = int(text)
        except ValueError:
            raise _RecordError(f"not an integer: {text[:40]!r}") from None
        if not INT64_MIN <= value <= INT64_MAX:
            raise _RecordError("integer out of int64 range")
        return {col: (INT, value)}, []
    decoder, _ = DECODERS[suffix]   # callers only pass decodable() suffixes
    return decoder(data, col, suffix, limit)


def decodable(suffix: str) -> bool:
    """Whether a member of this suffix is decoded here (a packed format whose extra is missing is not: it is kept
    as bytes and named unchecked, never flagged)."""
    if suffix not in DECODED:
        return False
    module = DECODERS[suffix][1] if suffix in DECODERS else None
    return module is None or available(module)


class _Record:
    def __init__(self, key: str, row: int):
        self.key, self.row = key, row
        self.values: dict = {}
        self.errors: list[str] = []
        self.warnings: list[str] = []
        self.exts: set[str] = set()
        self.nbytes = 0   # bytes its members decoded to, against the sample's budget
        self.memory = 0   # what they take in memory (JSON values take more than their text), for the batch's


def _end_of_archive_problem(tf: tarfile.TarFile) -> str | None:
    """Why the stream ended, if it was not a proper end-of-archive block."""
    e = getattr(tf, "dataaudit_end", None)
    if e is None or isinstance(e, tarfile.EOFHeaderError):
        return None
    if isinstance(e, tarfile.EmptyHeaderError):
        return f"no end-of-archive marker after byte {tf.offset} (truncated?)"
    return f"bad tar header at byte {tf.offset}: {one_line(e)}"


def iter_webdataset(path: str, columns: list[str] | None = None, batch_rows: int = 4096,
                    max_member_bytes: int = MAX_MEMBER_BYTES) -> Iterator[pa.RecordBatch]:
    builder = BatchBuilder(columns)
    first_seen: dict[str, int] = {}  # key -> row where it first appeared, to flag split samples
    rec: _Record | None = None

    def finish(r: _Record) -> None:
        builder.add(r.key, r.values, "; ".join(r.errors) or None, r.warnings, size=r.memory)

    try:
        f = open_input(path)
    except OSError as e:
        raise ShardReadError(f"tar: {one_line(e)}") from e
    with f:
        try:
            # gzip by its magic bytes, decompressed by our stream; tarfile's own ("r|*") still takes bz2 and xz
            tf = tarfile.open(fileobj=open_stream(f), mode="r|*", tarinfo=BoundedTarInfo, encoding="utf-8",
                              errors="surrogateescape", bufsize=_READ_BLOCK)
        except _STREAM_ERRORS as e:
            raise ShardReadError(f"tar: {one_line(e)}") from e
        broken = None
        while True:
            try:
                m = tf.next()
            except _STREAM_ERRORS as e:
                broken = one_line(e) or type(e).__name__
                break
            if m is None:
                broken = _end_of_archive_problem(tf)
                break
            tf.members.clear()  # tarfile keeps every TarInfo it has seen; a stream must not grow
            if not m.isreg():
                continue
            name = m.name
            if (split := split_member(name)) is None:
                continue   # not part of any sample for a webdataset loader either
            key, ext = split
            if rec is None or key != rec.key:
                if rec is not None:
                    if len(builder) and builder.nbytes + rec.memory > MAX_BATCH_BYTES:
                        yield builder.build()   # before, not after: a batch's column must stay under 2 GiB
                    finish(rec)
                    if builder.full(batch_rows):
                        yield builder.build()
                rec = _Record(key, builder.next_row + len(builder))
                if key in first_seen:
                    rec.warnings.append(f"key {key!r} is not adjacent: members split "
                                        f"(first seen at row {first_seen[key]})")
                else:
                    first_seen[key] = rec.row
            where = f"member {name!r}"
            if name.startswith("/") or ".." in name.split("/"):
                rec.warnings.append(f"{where}: unsafe path (absolute or '..')")
            if ext in rec.exts:
                rec.warnings.append(f"{where}: duplicate extension {ext!r} in sample (first kept)")
                continue
            rec.exts.add(ext)
            suffix = next((p for p in reversed(ext.split(".")) if p != "gz"), "")
            if suffix in NOT_UNPICKLED:
                rec.warnings.append(f"{where}: unsupported type .{suffix} (not unpickled)")
                continue
            # Images, and every member no decoder here reads (audio, video, .xml, ...), are kept as bytes in a column
            # named by the extension: images for the image checks, the others named unchecked in the notes
            # (--strict fails on them), never dropped without a word.
            raw = not decodable(suffix)
            if raw and not builder.wants(ext):
                continue
            if m.size > max_member_bytes:
                rec.errors.append(f"{where}: {m.size} bytes exceeds max_member_bytes {max_member_bytes} (not read)")
                continue
            # A sample decodes at most what one member may (ten members of 256 MiB each overflowed Arrow's offsets).
            left = max_member_bytes - rec.nbytes
            budget = "max_member_bytes" if left == max_member_bytes else \
                f"left of the sample's budget, max_member_bytes {max_member_bytes} for all its members"
            if m.size > left:
                rec.errors.append(f"{where}: {m.size} bytes exceeds the {left} {budget} (not read)")
                continue
            try:
                data = tf.extractfile(m).read()
            except _STREAM_ERRORS as e:
                broken = one_line(e) or type(e).__name__
                break
            if raw:
                rec.values[ext] = (BYTES, data)   # the extension is unique in the sample (checked above)
                rec.nbytes += len(data)
                rec.memory += len(data)
                continue
            try:
                values, warnings, decoded, memory = decode_member(ext, data, left, budget)
            except _RecordError as e:
                rec.errors.append(f"{where}: {e}")
                continue
            rec.nbytes += decoded
            rec.memory += memory
            rec.warnings.extend(f"{where}: {w}" for w in warnings)
            for col, value in values.items():
                if col in rec.values:
                    rec.warnings.append(f"{where}: column {col!r} already set by another member (first kept)")
                else:
                    rec.values[col] = value
        if broken is not None:
            # The sample in progress may have lost members: keep it as a row, marked, never drop it silently.
            if rec is not None:
                rec.errors.insert(0, f"truncated: {broken}")
                finish(rec)
            if len(builder):
                yield builder.build()
            raise ShardReadError(f"tar: {broken}")
        if rec is not None:
            finish(rec)
        if len(builder):
            yield builder.build()
