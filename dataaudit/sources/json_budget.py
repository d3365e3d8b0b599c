"""The budget of JSON values one record may hold, counted before the record is parsed.

A parsed JSON value is a Python object of ~60-100 bytes, and more while Arrow infers its type: 61 KB of gzipped
`{"x": [{}, {}, ...]}` took 2 GB and 82 s, 260 KB a MemoryError. So every reader of JSON text (JSONL lines, JSON
array elements, tar .json members; benchmark loading reads through them) counts a record's values first and
refuses a record past MAX_VALUES, which is then flagged, never parsed. What is counted are the containers (`{`,
`[`) and the separators inside them (`,`) outside strings: about one per value (two for a container after a comma).

Counting costs nothing for the common record: a value takes at least one character, so a record of at most
MAX_VALUES characters is within the budget unread. A longer one is bounded by its `{`, `[` and `,` (C-speed
counts), and only one over the budget by that bound is counted exactly, skipping the characters inside strings (a
long text full of commas is one value), vectorized with numpy block by block.

The same bounds give a record's memory once parsed, for the batch's budget (BatchBuilder flushes at
MAX_BATCH_BYTES): at most one value per two characters ("1,") for a short record, its counted bound for a long one.
"""
from __future__ import annotations

import numpy as np

# 1M values: ~100 MB as Python objects, a few seconds through Arrow; a list of a million token ids still fits.
MAX_VALUES = 1 << 20
# What one parsed value costs in memory (a Python int/float 24-32 bytes, a list or dict 56-64 and up, plus its slot).
VALUE_BYTES = 64
# Records shorter than this are not counted for their memory: the bound of one value per two characters holds and
# costs nothing, and flushes no batch early (4096 records of 2 KiB). Longer ones are counted (~1 GB/s).
_COUNTED = 64 << 10
_BLOCK = 1 << 20     # characters scanned at once (the arrays of one block take ~40 MB)


def bound(text: str | bytes, start: int = 0, end: int | None = None) -> int:
    """An upper bound of the values in text[start:end]: its `{`, `[` and `,` (one more value per comma)."""
    if end is None:
        end = len(text)
    if isinstance(text, str):
        return text.count("{", start, end) + text.count("[", start, end) + text.count(",", start, end)
    return text.count(b"{", start, end) + text.count(b"[", start, end) + text.count(b",", start, end)


def memory_bytes(text: str | bytes, size: int | None = None) -> int:
    """A bound of the memory JSON `text` takes once parsed (`size`: its encoded size when not len(text))."""
    n = len(text)
    if n < _COUNTED:
        return n * VALUE_BYTES // 2
    return max(n if size is None else size, bound(text) * VALUE_BYTES)


def value_index(text: str, start: int = 0) -> tuple[np.ndarray, np.ndarray, int]:
    """Scan text[start:] outside strings, `start` being where a top-level value (or the whitespace before it) begins:
    (ends, counts, total). ends: the index just after each container that closes back at the top level; counts: the
    values counted from `start` up to each such end (every `{` and `[`, every `,` inside a container); total: the
    values counted over all of text[start:]. The values of one container are the difference of two counts."""
    ends, counts = [], []
    run = parity = depth = total = 0    # carried across blocks: trailing backslashes, quotes seen (odd: in a string)
    for b0 in range(start, len(text), _BLOCK):
        a = np.frombuffer(text[b0:b0 + _BLOCK].encode("utf-32-le", "surrogatepass"), np.uint32)
        n = len(a)
        at = np.arange(n, dtype=np.int64)
        backslash = a == 92
        last = np.maximum.accumulate(np.where(backslash, -(run + 1), at))   # last non-backslash at or before i
        before = np.empty(n, np.int64)        # backslashes just before i: an odd number escapes a quote
        before[0] = run
        before[1:] = at[:-1] - last[:-1]
        quotes = np.cumsum((a == 34) & (before % 2 == 0)) + parity
        outside = (quotes & 1) == 0
        opens = outside & ((a == 123) | (a == 91))
        closes = outside & ((a == 125) | (a == 93))
        level = np.cumsum(opens.astype(np.int64) - closes) + depth        # depth after character i
        marks = np.cumsum(opens | (outside & (a == 44) & (level >= 1))) + total
        done = closes & (level == 0)
        ends.append(np.flatnonzero(done) + b0 + 1)
        counts.append(marks[done])
        run, parity = int(n - 1 - last[-1]), int(quotes[-1] & 1)
        depth, total = int(level[-1]), int(marks[-1])
    if not ends:
        return np.empty(0, np.int64), np.empty(0, np.int64), 0
    return np.concatenate(ends), np.concatenate(counts), total


def over(text: str | bytes, decoded: str | None = None) -> int | None:
    """How many values a JSON text holds when that is more than MAX_VALUES (the record is then refused), else None.
    `decoded`: the text as str when `text` is bytes (only needed for the exact count)."""
    if len(text) <= MAX_VALUES or bound(text) <= MAX_VALUES:
        return None
    n = value_index(text if decoded is None else decoded)[2]
    return n if n > MAX_VALUES else None


def over_budget(values: int) -> str:
    return (f"{values} JSON containers and separators, more than {MAX_VALUES} (the budget of one record): "
            "not parsed")
