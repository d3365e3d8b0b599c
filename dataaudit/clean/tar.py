"""WebDataset tars (plain or gzip): the kept samples' members, byte for byte, headers included, in their order.

The tar is read as one stream (tarfile "r|", never extracted, no member decoded). Every byte the tar parser
reads passes through a tap that knows which member it belongs to: a member spans from its first header block
(pax and GNU long-name headers included) to the end of its padded data, and goes to the output exactly when its
sample is kept. So a kept member's header and data are copied unchanged, in 1 MiB chunks, without tarfile
writing anything. The end-of-archive blocks are written anew (two zero blocks, padded to tarfile's 10 KiB
record, as tarfile writes them): an unchanged tar comes out byte-identical.

Samples are numbered as the reader numbers them (dataaudit.sources.webdataset_tar): regular members group by
key (the name up to the basename's first dot), a new row at each change of key. Other members (folders, links)
belong to no sample and are copied as they are.
"""
from __future__ import annotations

import tarfile
from pathlib import Path

import numpy as np

from dataaudit.sources.webdataset_tar import split_member

from .output import COPY_CHUNK, atomic_stream, check_rows, is_gzip
from .output import ShardMismatch

RECORD = tarfile.RECORDSIZE      # 10240: tarfile pads an archive to a whole record


class _Tap:
    """The decompressed tar stream, read by tarfile; routes every byte it hands out to the output or away."""

    def __init__(self, stream, out):
        self.stream, self.out = stream, out
        self.pos = 0            # bytes handed to tarfile so far
        self.held = bytearray()  # bytes handed out whose member is not known yet
        self.held_at = 0        # stream offset of held[0]
        self.keep = False       # the current member's fate ...
        self.end = 0            # ... up to this offset (end of its padded data)
        self.written = 0

    def read(self, n: int = -1) -> bytes:
        data = self.stream.read(n)
        self.held += data
        self.pos += len(data)
        self._route(self.end)
        return data

    def _route(self, upto: int) -> None:
        """Send the held bytes before `upto` to the output (current member kept) or drop them."""
        cut = min(upto, self.pos) - self.held_at
        if cut <= 0:
            return
        if self.keep:
            self.out.write(self.held[:cut])
            self.written += cut
        del self.held[:cut]
        self.held_at += cut

    def member(self, start: int, end: int, keep: bool) -> None:
        """A member spans [start, end): bytes before `start` go with the previous member."""
        self._route(start)
        self.keep, self.end = keep, end
        self._route(end)

    def finish(self) -> None:
        self._route(self.end)
        self.keep = False
        trailer = 2 * tarfile.BLOCKSIZE
        trailer += -(self.written + trailer) % RECORD
        self.out.write(b"\0" * trailer)


def rewrite_tar(src: str, dst: Path, drop: np.ndarray, expected: int) -> dict:
    """Write `src` without the samples whose row is in `drop` (sorted) to `dst`; `expected`: the samples the audit
    read (else ShardMismatch, nothing written). Returns {"rows", "kept", "dropped_keys"} (keys in row order)."""
    dropped = np.zeros(int(drop[-1]) + 1 if len(drop) else 0, bool)
    dropped[drop] = True
    n_drop = len(dropped)
    dropped_keys: list[str] = []
    row, key = -1, None
    kept = 0
    gz = is_gzip(src)
    with open(src, "rb", buffering=COPY_CHUNK) as raw, atomic_stream(dst, gz) as out:
        if gz:
            import gzip
            stream = gzip.GzipFile(fileobj=raw, mode="rb")
        else:
            stream = raw
        tap = _Tap(stream, out)
        try:
            tf = tarfile.open(fileobj=tap, mode="r|", bufsize=COPY_CHUNK, encoding="utf-8",
                              errors="surrogateescape")
            while True:
                m = tf.next()
                if m is None:
                    break
                tf.members.clear()       # tarfile keeps every TarInfo it has seen; a stream must not grow
                keep = True
                if m.isreg():
                    k = split_member(m.name)[0]
                    if k != key:
                        row, key = row + 1, k
                        if row < n_drop and dropped[row]:
                            dropped_keys.append(k)
                        else:
                            kept += 1
                    keep = not (row < n_drop and dropped[row])
                tap.member(m.offset, tf.offset, keep)
        except (tarfile.TarError, EOFError, OSError) as e:
            raise ShardMismatch(f"{src}: tar: {e}") from None
        tap.finish()
        check_rows(src, row + 1, expected)
    return {"rows": row + 1, "kept": kept, "dropped_keys": dropped_keys}
