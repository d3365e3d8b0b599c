"""An object in a store read front to back with the next request already under way: the raw file under
`dataaudit.io.open_input` for URIs.

A sequential reader (tar, JSONL, JSON, text, a hash of every byte) asks for one chunk at a time; each is a ranged
GET whose wait (latency, then the transfer) the reader used to sit through. Once a reader has gone past its first
chunk it is streaming: from then on the chunk after the one it reads is fetched in a background thread while it
works. A reader that stops within the first chunk (a media header, a small file) asks for nothing more than before.
Reads are positional (`read_at`), so the file is never shared between threads; at most two chunks are held.
"""
from __future__ import annotations

import io
from concurrent.futures import Future, ThreadPoolExecutor


class ReadAhead(io.RawIOBase):
    """A seekable raw binary file over `f` (a pyarrow random-access file) read in `chunk`-byte requests."""

    def __init__(self, f, chunk: int):
        super().__init__()
        self._f, self._chunk, self._size = f, chunk, f.size()
        self._pos = 0
        self._data, self._at = b"", 0          # the chunk in hand and where it starts
        self._next: tuple[int, Future] | None = None   # the request under way: (offset, its future)
        self._pool: ThreadPoolExecutor | None = None

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self._size}[whence]
        if base + offset < 0:
            raise ValueError(f"negative seek position {base + offset}")
        self._pos = base + offset
        return self._pos

    def readinto(self, buffer) -> int:
        if self._pos >= self._size:
            return 0
        if not self._at <= self._pos < self._at + len(self._data):
            self._take(self._pos - self._pos % self._chunk)
        start = self._pos - self._at
        n = min(len(buffer), len(self._data) - start)
        memoryview(buffer)[:n] = memoryview(self._data)[start:start + n]
        self._pos += n
        return n

    def _take(self, offset: int) -> None:
        """Make the chunk at `offset` the one in hand (the request under way when it is that one), and start the
        next one's when the reader is past its first chunk."""
        ahead, self._next = self._next, None
        if ahead is not None and ahead[0] == offset:
            self._data = ahead[1].result()      # its error, if any, is raised here, where the reader asked
        else:
            if ahead is not None:
                _settled(ahead[1])              # a seek elsewhere: its bytes are not wanted
            self._data = self._read(offset)
        self._at = offset
        following = offset + self._chunk
        if offset > 0 and following < self._size:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="dataaudit-readahead")
            self._next = (following, self._pool.submit(self._read, following))

    def _read(self, offset: int) -> bytes:
        return self._f.read_at(min(self._chunk, self._size - offset), offset)

    def close(self) -> None:
        if not self.closed:
            if self._next is not None:
                _settled(self._next[1])         # a request under way ends before its file is closed
                self._next = None
            if self._pool is not None:
                self._pool.shutdown(wait=True)
            self._data = b""
            self._f.close()
        super().close()


def _settled(future: Future) -> None:
    """Wait for a request no one will read, dropping its error (the reader never asked for those bytes)."""
    try:
        future.result()
    except Exception:   # noqa: BLE001
        pass
