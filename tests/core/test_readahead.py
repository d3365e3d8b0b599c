"""dataaudit.readahead: an object read front to back has its next chunk fetched while the reader works on the one in
hand, once the reader is past its first chunk; every read and seek gives the file's bytes; an error of a chunk
fetched ahead reaches the reader where it asks for that chunk. A fake file stands for pyarrow's (`size`, `read_at`,
`close`): what is asked of it, and from which thread, is recorded."""
from __future__ import annotations

import io
import random
import threading

import pytest

from dataaudit.readahead import ReadAhead

CHUNK = 1000


class FakeFile:
    def __init__(self, data: bytes, fail_at: int | None = None):
        self.data, self.fail_at = data, fail_at
        self.asked: list[tuple[int, int, str]] = []      # (offset, bytes, thread name)
        self.closed = False
        self.lock = threading.Lock()
        self.seen = threading.Condition(self.lock)

    def size(self) -> int:
        return len(self.data)

    def read_at(self, nbytes: int, offset: int) -> bytes:
        with self.lock:
            self.asked.append((offset, nbytes, threading.current_thread().name))
            self.seen.notify_all()
        if offset == self.fail_at:
            raise OSError("connection reset")
        return self.data[offset:offset + nbytes]

    def close(self) -> None:
        self.closed = True

    def wait_for(self, offset: int) -> tuple[int, int, str]:
        with self.seen:
            assert self.seen.wait_for(lambda: any(a[0] == offset for a in self.asked), timeout=10)
            return next(a for a in self.asked if a[0] == offset)


DATA = bytes(random.Random(3).randrange(256) for _ in range(4500))


def test_a_reader_within_the_first_chunk_asks_for_that_chunk_alone():
    f = FakeFile(DATA)
    with io.BufferedReader(ReadAhead(f, CHUNK), buffer_size=64) as r:
        assert r.read(10) == DATA[:10] and r.read(500) == DATA[10:510]
    assert [(o, n) for o, n, _ in f.asked] == [(0, CHUNK)] and f.closed


def test_past_its_first_chunk_the_next_one_is_fetched_in_the_background_before_it_is_asked_for():
    f = FakeFile(DATA)
    r = io.BufferedReader(ReadAhead(f, CHUNK), buffer_size=64)
    assert r.read(CHUNK + 1) == DATA[:CHUNK + 1]          # into the second chunk
    offset, nbytes, thread = f.wait_for(2 * CHUNK)      # the third, not asked for yet
    assert (nbytes, thread.startswith("dataaudit-readahead")) == (CHUNK, True)
    assert [a[0] for a in f.asked if not a[2].startswith("dataaudit-readahead")] == [0, CHUNK]
    assert r.read() == DATA[CHUNK + 1:]
    assert sorted(a[0] for a in f.asked) == [0, 1000, 2000, 3000, 4000]   # each chunk once
    assert [a[1] for a in sorted(f.asked)][-1] == 500                      # the last one only to the end
    r.close()
    assert f.closed


def test_every_read_and_seek_gives_the_files_bytes():
    rng = random.Random(5)
    r = io.BufferedReader(ReadAhead(FakeFile(DATA), CHUNK), buffer_size=128)
    for _ in range(300):
        pos, n = rng.randrange(0, len(DATA) + 10), rng.randrange(0, 2500)
        assert r.seek(pos) == pos
        assert r.read(n) == DATA[pos:pos + n]
        assert r.tell() == max(pos, min(pos + n, len(DATA)))
    r.seek(-7, io.SEEK_END)
    assert r.read() == DATA[-7:] and r.read(5) == b""
    r.seek(0)
    assert r.peek(3)[:3] == DATA[:3] and r.read() == DATA
    with pytest.raises(ValueError):
        r.raw.seek(-1)


def test_an_error_of_a_chunk_fetched_ahead_reaches_the_reader_at_that_chunk():
    f = FakeFile(DATA, fail_at=3 * CHUNK)
    r = io.BufferedReader(ReadAhead(f, CHUNK), buffer_size=64)
    assert r.read(2 * CHUNK + 1) == DATA[:2 * CHUNK + 1]    # the fourth chunk, which fails, is fetched ahead now
    f.wait_for(3 * CHUNK)
    assert r.read(CHUNK - 1) == DATA[2 * CHUNK + 1:3 * CHUNK]   # the chunk in hand is still read whole
    with pytest.raises(OSError, match="connection reset"):
        r.read(1)
    r.close()
    assert f.closed


def test_closing_with_a_chunk_under_way_waits_for_it_and_drops_its_error():
    f = FakeFile(DATA, fail_at=2 * CHUNK)
    r = io.BufferedReader(ReadAhead(f, CHUNK), buffer_size=64)
    r.read(CHUNK + 1)
    r.close()                                        # the failing third chunk was never asked for by the reader
    assert f.closed and any(a[0] == 2 * CHUNK for a in f.asked)
