"""WebDataset tars (plain or gzip): the kept samples' members, byte for byte, headers included, in their order.

The tar is walked header by header (tarfile's own header parser, `TarInfo.fromtarfile`, pax and GNU long-name
headers included); nothing is extracted or decoded. A member spans from its first header block to the end of
its padded data: its header blocks are held (a few hundred bytes) until its sample's fate is known, then the
whole extent is copied to the output unchanged, or skipped (a seek in a plain tar). The end-of-archive blocks
are written anew (two zero blocks, padded to tarfile's 10 KiB record, as tarfile writes them): an unchanged
tar comes out byte-identical.

Samples are numbered as the reader numbers them (dataaudit.sources.webdataset_tar): regular members group by
key (the name up to the basename's first dot), a new row at each change of key. Other members (folders, links)
belong to no sample and are copied as they are. A pax global header is part of the member after it.
"""
from __future__ import annotations

import gzip
import os
import tarfile

import numpy as np

from dataaudit.io import open_input
from dataaudit.sources.tar_headers import BoundedTarInfo
from dataaudit.sources.webdataset_tar import split_member

from .base import COPY_CHUNK, ShardMismatch, WriteOptions, atomic_stream, check_rows, compressed, is_gzip

RECORD = tarfile.RECORDSIZE      # 10240: tarfile pads an archive to a whole record


class _Stream:
    """The decompressed tar bytes with their position; what the header parser reads is recorded."""

    def __init__(self, raw, gz: bool):
        self.raw, self.gz = raw, gz
        self.stream = gzip.GzipFile(fileobj=raw, mode="rb") if gz else raw
        self.pos = 0
        self.recorded = bytearray()

    def read(self, n: int) -> bytes:
        data = self.stream.read(n)
        self.pos += len(data)
        self.recorded += data
        return data

    def tell(self) -> int:
        return self.pos

    def copy(self, out, n: int) -> None:
        """Copy the next `n` bytes to `out` (skip them when `out` is None)."""
        if out is None and not self.gz:
            self.raw.seek(n, 1)
            self.pos += n
            return
        read = self.stream.read
        while n > 0:
            chunk = read(min(n, COPY_CHUNK))
            if not chunk:
                raise EOFError("unexpected end of data")
            if out is not None:
                out.write(chunk)
            n -= len(chunk)
            self.pos += len(chunk)


class _Headers:
    """What TarInfo.fromtarfile needs of a TarFile."""

    def __init__(self, stream: _Stream):
        self.fileobj = stream
        self.encoding, self.errors = "utf-8", "surrogateescape"    # as the reader decodes names
        self.pax_headers: dict = {}
        self.offset = 0


def rewrite_tar(src: str, dst: str | os.PathLike, drop: np.ndarray, expected: int,
                options: WriteOptions = WriteOptions()) -> dict:
    """Write `src` without the samples whose row is in `drop` (sorted) to `dst`; `expected`: the samples the audit
    read (else ShardMismatch, nothing written). Returns {"records", "kept", "dropped_keys"} (keys in row order)."""
    dropped = np.zeros(int(drop[-1]) + 1 if len(drop) else 0, bool)
    dropped[drop] = True
    n_drop = len(dropped)
    dropped_keys: list[str] = []
    row, key, kept, written = -1, None, 0, 0
    gz = is_gzip(src)
    with open_input(src, COPY_CHUNK) as raw, atomic_stream(dst, compressed(src, options)) as out:
        stream = _Stream(raw, gz)
        headers = _Headers(stream)
        try:
            while True:
                stream.recorded.clear()
                try:
                    m = BoundedTarInfo.fromtarfile(headers)   # extended headers bounded, as the reader's
                except tarfile.EOFHeaderError:
                    break                                  # a zero block: the end of the archive
                keep = True
                split = split_member(m.name) if m.isreg() else None
                if split is not None:      # a member of a sample (others are no record: kept as they are)
                    k = split[0]
                    if k != key:
                        row, key = row + 1, k
                        if row < n_drop and dropped[row]:
                            dropped_keys.append(k)
                        else:
                            kept += 1
                    keep = not (row < n_drop and dropped[row])
                if keep:
                    out.write(stream.recorded)
                    written += len(stream.recorded)
                size = headers.offset - stream.pos         # the member's data, padded to whole blocks
                stream.copy(out if keep else None, size)
                written += size if keep else 0
        except (tarfile.TarError, EOFError, OSError) as e:
            raise ShardMismatch(f"{src}: tar: {e}") from None
        trailer = 2 * tarfile.BLOCKSIZE
        out.write(b"\0" * (trailer + (-(written + trailer) % RECORD)))
        check_rows(src, row + 1, expected)
    return {"records": row + 1, "kept": kept, "dropped_keys": dropped_keys}
