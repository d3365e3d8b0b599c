"""JSON shards (plain or gzip) holding one array of records, as Alpaca, LLaMA-Factory and FastChat ship SFT data.

Streamed: bytes are decoded incrementally into a text window and one element at a time is parsed with
JSONDecoder.raw_decode, so a file of any size needs memory for one record only. The byte offset of every
element is tracked exactly (UTF-8 text such as Chinese is common) so errors can name it, and so is the line
where each element starts (__line__; pretty-printed arrays put one record over many lines). A malformed element
cannot be resynchronised in general: records read before it stay valid and the shard then fails with
ShardReadError. A top-level object is one record; objects that follow it (JSON Lines named .json) are one record
each. A file holding one object alone, one of whose members is a non-empty array of objects and no other member
is (`{"version": "1.0", "data": [{...}, ...]}`), is a wrapper: its records are that array's elements (`wrapped`),
for every command alike (decided by a first pass over the object, one member value at a time; the records are then
read in a second pass). Row = record index (0-based), key = the row as text. An element holding more JSON values than json_budget
allows is skipped unparsed (its end found by a vectorized scan) and is a row with __error__; the next one is read.
"""
from __future__ import annotations

import codecs
import json
import re
from typing import Iterator

import numpy as np
import pyarrow as pa

from dataaudit.io import open_input

from .base import ShardReadError
from .batch import flatten_object, one_line
from .json_budget import MAX_VALUES, bound, memory_bytes, over_budget, value_index
from .record_stream import STREAM_ERRORS, Record, open_stream, read_records, record_batches
from .jsonl import MAX_LINE_BYTES, where

MAX_RECORD_BYTES = MAX_LINE_BYTES   # one element is held in memory; a broken file must not pull in the rest
# Under json_budget.MAX_VALUES, so that a window of small records needs no counting of JSON values.
CHUNK_BYTES = 1 << 19
_WHITESPACE = re.compile(r"[ \t\n\r]*")             # JSON's whitespace, nothing else
_DECODER = json.JSONDecoder()
# An error this close to the end of the window may be the window's end, not the file's ("tru|e", "1.|5").
_CUT_MARGIN = 16


class _Fatal(Exception):
    """The shard cannot be read further; the message names where."""


def _nbytes(text: str) -> int:
    # Invalid UTF-8 bytes were decoded as surrogates (surrogateescape): encoding them back gives the same bytes.
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogateescape"))


class _Window:
    """A text window over the decoded byte stream that knows the byte offset of the character at `pos`."""

    def __init__(self, stream, chunk_bytes: int):
        self._stream = stream
        self._chunk = chunk_bytes
        self._decoder = codecs.getincrementaldecoder("utf-8")("surrogateescape")
        self.text = ""
        self.pos = 0          # next character not consumed
        self.pos_byte = 0     # its byte offset in the (decompressed) file
        self.line = 1         # its 1-based line
        self.read_bytes = 0   # bytes read from the stream so far
        self.eof = False
        self.broken: str | None = None   # the stream's own error, when it ended on one
        self.memory = 0       # json_budget.memory_bytes of the last value taken
        # JSON values budget: None until looked at since the last fill; False when text[pos:] is under the budget
        # by json_budget.bound; else json_budget.value_index from the pos it was looked at (a value's start)
        self._index = None

    def byte_at(self, index: int) -> int:
        """Byte offset of the character at text[index] (index >= pos)."""
        return self.pos_byte + _nbytes(self.text[self.pos:index])

    def line_at(self, index: int) -> int:
        """Line of the character at text[index] (index >= pos)."""
        return self.line + self.text.count("\n", self.pos, index)

    def buffered_bytes(self) -> int:
        """Bytes read but not consumed (what a record in progress holds)."""
        return self.read_bytes - self.pos_byte

    def advance(self, chars: int, nbytes: int) -> None:
        self.pos += chars
        self.pos_byte += nbytes

    def fill(self, want: int) -> bool:
        """Read about `want` more bytes, dropping the consumed text. False when the stream has nothing more."""
        if self.eof:
            return False
        parts, got = [], 0
        try:
            while got < want:
                # read1: a stream that breaks (a cut gzip) loses only its last read, not the whole request
                data = self._stream.read1(want - got)
                if not data:
                    self.eof = True
                    break
                parts.append(data)
                got += len(data)
        except STREAM_ERRORS as e:
            self.broken = one_line(e) or type(e).__name__
            self.eof = True
        self.read_bytes += got
        new = self._decoder.decode(b"".join(parts), final=self.eof)
        self.text = self.text[self.pos:] + new   # linear: fill is called about once per chunk or doubling
        self.pos = 0
        self._index = None
        return bool(new) or not self.eof

    def next_char(self) -> str:
        """The next character after whitespace ('' at the end of the stream); the whitespace is consumed."""
        while True:
            end = _WHITESPACE.match(self.text, self.pos).end()
            self.line += self.text.count("\n", self.pos, end)
            self.advance(end - self.pos, end - self.pos)   # whitespace is ASCII
            if self.pos < len(self.text):
                return self.text[self.pos]
            if not self.fill(self._chunk):
                return ""

    def value(self, limit: int) -> tuple[object, int, int | None]:
        """Decode the JSON value at pos: (value, its size in bytes, byte offset of invalid UTF-8 in it or None).

        Raises _Syntax for malformed JSON, _Incomplete when the stream ends inside it, _TooBig past `limit` bytes.
        """
        while True:
            start = self.pos
            if self._index is not False and self.text[start] in "{[":   # False: the window is under the budget
                over = self._over_budget(start, limit)
                if over is not None:
                    return over
                if self._index is None:   # the window grew to find where the value ends
                    continue
            try:
                obj, end = _DECODER.raw_decode(self.text, start)
            except json.JSONDecodeError as e:
                cut = e.pos >= len(self.text) - _CUT_MARGIN or e.msg.startswith("Unterminated string")
                if not cut:
                    raise _Syntax(e.msg, self.byte_at(e.pos), self.line_at(e.pos)) from None
                if self.eof:
                    if e.pos >= len(self.text) or e.msg.startswith("Unterminated string"):
                        raise _Incomplete() from None
                    raise _Syntax(e.msg, self.byte_at(e.pos), self.line_at(e.pos)) from None
            except (ValueError, RecursionError) as e:   # integer too long, nesting too deep
                raise _Syntax(one_line(e) or type(e).__name__, self.pos_byte, self.line) from None
            else:
                # A number near the window's end may go on in the next chunk ("12|34", "1.|5", "1e|-3").
                if self.eof or len(self.text) - end > _CUT_MARGIN or self.text[start] not in "-0123456789":
                    return self._take(obj, start, end, limit)
            held = self.buffered_bytes()
            if held > limit:
                raise _TooBig()
            # Grow the window geometrically: each retry re-parses the element, so the total stays linear.
            self.fill(max(self._chunk, min(held, limit + 1 - held)))

    def _over_budget(self, start: int, limit: int) -> tuple[object, int, None] | None:
        """For a container at `start` holding more values than json_budget allows: (_Over, its size), the window
        past it (never parsed). None when it is within the budget; None with the window grown (self._index None)
        when its end is not in the window yet. Only a window over the budget by json_budget.bound is scanned."""
        if self._index is None:   # a value of at most MAX_VALUES characters holds at most MAX_VALUES values
            self._index = (len(self.text) - self.pos > MAX_VALUES and bound(self.text, self.pos) > MAX_VALUES
                           and value_index(self.text, self.pos))
        if self._index is False:
            return None
        ends, counts, total = self._index
        k = int(np.searchsorted(ends, start, "right"))
        before = int(counts[k - 1]) if k else 0
        n = (int(counts[k]) if k < len(ends) else total) - before
        if n <= MAX_VALUES:
            return None
        if k == len(ends):   # not closed in the window: read on (the record's byte limit still applies)
            held = self.buffered_bytes()
            if held > limit:
                raise _TooBig()
            if self.eof:
                raise _Incomplete()
            self.fill(max(self._chunk, min(held, limit + 1 - held)))
            return None
        end = int(ends[k])
        size = _nbytes(self.text[start:end])
        self.line += self.text.count("\n", start, end)
        self.advance(end - start, size)
        self.memory = size
        return _Over(n), size, None

    def _take(self, obj: object, start: int, end: int, limit: int) -> tuple[object, int, int | None]:
        if end - start > limit:   # characters are at least a byte each: surely too big, not worth encoding
            raise _TooBig()
        seg = self.text[start:end]
        bad = None
        if seg.isascii():
            size = len(seg)
        else:
            try:
                size = len(seg.encode("utf-8"))
            except UnicodeEncodeError as e:   # a surrogate here is a byte that was not UTF-8
                bad = self.pos_byte + _nbytes(seg[:e.start])
                size = _nbytes(seg)
        if size > limit:
            raise _TooBig()
        self.line += seg.count("\n")   # a pretty-printed object spans lines (strings hold no raw newline)
        self.advance(end - start, size)
        self.memory = memory_bytes(seg, size)
        return obj, size, bad


class _Syntax(Exception):
    def __init__(self, msg: str, byte: int, line: int):
        super().__init__(msg)
        self.msg, self.byte, self.line = msg, byte, line


class _Incomplete(Exception):
    """The stream ended inside a value."""


class _TooBig(Exception):
    """One value is larger than the record limit."""


class _Over:
    """In place of a value over the JSON values budget (json_budget): it was skipped, never parsed."""

    def __init__(self, values: int):
        self.values = values


def _record(obj: object, at, bad: int | None, warnings: list[str]) -> tuple[dict, str | None]:
    """(values, error) of one element; `at()` names it (formatted only for a message)."""
    if bad is not None:
        return {}, f"{at()}: invalid UTF-8 at byte {bad}"
    if type(obj) is _Over:
        return {}, f"{at()}: {over_budget(obj.values)}"
    if type(obj) is not dict:
        return {}, f"{at()}: not a JSON object ({type(obj).__name__})"
    values: dict = {}
    flatten_object(obj, "", values, warnings, at)
    return values, None


_JSON_TYPES = {str: "string", int: "number", float: "number", bool: "boolean", type(None): "null"}


class _Records:
    """The records of one file: (values, error, warnings, size, line) each; _Fatal when it cannot be read further."""

    def __init__(self, win: _Window, limit: int):
        self.win, self.limit = win, limit
        self.count = 0
        self.wrapped: str | None = None   # the member whose array holds the records of a wrapper object

    def _restart(self) -> _Window:
        """A new window at the first value of the file (the stream rewound, a byte order mark skipped)."""
        stream = self.win._stream
        stream.seek(0)
        win = _Window(stream, self.win._chunk)
        if win.next_char() == "\ufeff":
            win.advance(1, 3)
            win.next_char()
        return win

    def _member_name(self) -> str | None:
        """The name of the member at the window's position, past its ':' (None: not a member)."""
        win = self.win
        if win.next_char() != '"':
            return None
        name = win.value(self.limit)[0]
        if win.next_char() != ":":
            return None
        win.advance(1, 1)
        win.next_char()
        return name

    def _wrapped_key(self) -> str | None:
        """For the top-level object at the window's position: the member holding the records when the object is a
        wrapper (exactly one member is a non-empty array of objects, and nothing follows the object), else None.
        Reads the object one member value (one element of an array) at a time; the window is left anywhere."""
        win, lists = self.win, []
        try:
            win.advance(1, 1)    # '{'
            if win.next_char() == "}":
                return None
            while True:
                name = self._member_name()
                if name is None:
                    return None
                if win.text[win.pos] == "[":
                    win.advance(1, 1)
                    elements, objects = 0, True
                    ch = win.next_char()
                    while ch != "]":
                        if elements:
                            if ch != ",":
                                return None
                            win.advance(1, 1)
                            win.next_char()
                        value = win.value(self.limit)[0]
                        objects = objects and type(value) in (dict, _Over)
                        elements += 1
                        ch = win.next_char()
                    win.advance(1, 1)
                    if elements and objects:
                        lists.append(name)
                else:
                    win.value(self.limit)
                ch = win.next_char()
                if ch == "}":
                    win.advance(1, 1)
                    break
                if ch != ",":
                    return None
                win.advance(1, 1)
            return lists[0] if len(lists) == 1 and not win.next_char() and not win.broken else None
        except (_Syntax, _Incomplete, _TooBig, IndexError):   # the one-record reading reports what is wrong
            return None

    def _members(self, key: str, warnings: list[str]):
        """The records of a wrapper object (`_wrapped_key` found it): the elements of its member `key`."""
        win = self.win
        win.advance(1, 1)        # '{'
        while True:
            name = self._member_name()
            if name == key and win.next_char() == "[":
                win.advance(1, 1)
                yield from self._array(warnings)
                warnings = []
            elif name is None:
                raise _Fatal(f"the file changed while it was read (at line {win.line}, byte {win.pos_byte})")
            else:
                win.value(self.limit)
            ch = win.next_char()
            win.advance(1, 1)
            if ch == "}":
                return

    def __iter__(self):
        win = self.win
        first = win.next_char()
        warnings = []
        if first == "\ufeff":
            win.advance(1, 3)
            warnings.append("UTF-8 byte order mark ignored")
            first = win.next_char()
        if first == "":
            raise self._ended("empty file, expected an array of records")
        if first == "[":
            win.advance(1, 1)
            yield from self._array(warnings)
        elif first == "{":
            key = self._wrapped_key()
            self.win = win = self._restart()
            if key is None:
                yield from self._objects(warnings)
            else:
                self.wrapped = key
                yield from self._members(key, warnings)
        else:
            obj = self._value()[0]
            raise _Fatal(f"top-level value is a {_JSON_TYPES.get(type(obj), type(obj).__name__)}, "
                         "expected an array of records")
        if win.next_char():
            raise _Fatal(f"extra data at line {win.line}, byte {win.pos_byte} after the records")
        if win.broken:   # e.g. a gzip trailer cut off after the last record
            raise self._ended("")

    def _ended(self, what: str) -> _Fatal:
        if self.win.broken:
            return _Fatal(f"{self.win.broken} (after byte {self.win.read_bytes})")
        return _Fatal(what)

    def _truncated(self, start: int | None = None, line: int = 0) -> _Fatal:
        at = "" if start is None else f": {where(self.count, line)} at byte {start} is incomplete"
        return self._ended(f"truncated at byte {self.win.read_bytes} (no closing ']'){at}")

    def _value(self) -> tuple[object, int, int, int, int | None]:
        """(value, start line, start byte, size, invalid UTF-8 byte) of the element at the window's position."""
        start, line = self.win.pos_byte, self.win.line
        try:
            obj, size, bad = self.win.value(self.limit)
        except _Syntax as e:
            raise self._ended(f"{e.msg} at line {e.line}, byte {e.byte} (row {self.count})") from None
        except _Incomplete:
            raise self._truncated(start, line) from None
        except _TooBig:
            raise _Fatal(f"{where(self.count, line)} at byte {start} is larger than {self.limit} bytes "
                         "(max_record_bytes)") from None
        return obj, line, start, size, bad

    def _one(self, warnings: list[str]):
        obj, line, start, size, bad = self._value()
        # a minified array is one line: the byte offset tells its records apart
        row = self.count
        values, error = _record(obj, lambda: f"{where(row, line)} at byte {start}", bad, warnings)
        self.count += 1
        return values, error, warnings, self.win.memory, line

    def _array(self, warnings: list[str]):
        win = self.win
        ch = win.next_char()
        if ch == "]":
            win.advance(1, 1)
            return
        while True:
            if ch == "":
                raise self._truncated()
            yield self._one(warnings)
            warnings = []
            ch = win.next_char()
            if ch == "]":
                win.advance(1, 1)
                return
            if ch == "":
                raise self._truncated()
            if ch != ",":
                raise self._ended(f"Expecting ',' delimiter at line {win.line}, byte {win.pos_byte} "
                                  f"(after row {self.count - 1})")
            win.advance(1, 1)
            ch = win.next_char()

    def _objects(self, warnings: list[str]):
        while self.win.next_char():
            yield self._one(warnings)
            warnings = []


class _Offsets(_Records):
    """The parser, remembering where each element starts (byte and line) and how long it is."""

    def __init__(self, win, limit):
        super().__init__(win, limit)
        self.spans: list[tuple[int, int, int]] = []

    def _value(self):
        obj, line, start, size, bad = super()._value()
        self.spans.append((start, size, line))
        return obj, line, start, size, bad


def element_spans(stream, max_record_bytes: int = MAX_RECORD_BYTES) -> np.ndarray:
    """(start, size, line) of every element of the decompressed byte `stream`, shape (n, 3): its offset and size in
    bytes, and the 1-based line where it starts, as this reader numbers the records (so a writer can copy each one's
    exact bytes). ShardReadError when the file cannot be read to its end."""
    parser = _Offsets(_Window(stream, CHUNK_BYTES), max_record_bytes)
    try:
        for _ in parser:
            pass
    except (_Fatal, *STREAM_ERRORS) as e:
        raise ShardReadError(f"json: {one_line(e) or type(e).__name__}") from None
    return np.array(parser.spans, np.int64).reshape(-1, 3)


def holds_json_array(path: str, probe_bytes: int = 1 << 16) -> bool:
    """Whether a .json file starts with '[' (after a BOM and whitespace): how a folder walk tells record arrays
    from the metadata objects that sit beside shards (manifest.json, dataset_info.json). An unreadable file
    counts as an array, so the audit reports it instead of skipping it silently."""
    try:
        with open_input(path) as raw:
            head = open_stream(raw).read(probe_bytes)
    except STREAM_ERRORS:
        return True
    return head.removeprefix(codecs.BOM_UTF8).lstrip(b" \t\n\r")[:1] == b"["


def wrapped_member(path: str, max_record_bytes: int = MAX_RECORD_BYTES) -> str | None:
    """The member of a wrapper object whose array holds the file's records (`{"data": [...]}`: "data"), as the
    reader takes them; None for any other file (an array, objects one after another, one record, unreadable)."""
    try:
        with open_input(path) as raw:
            win = _Window(open_stream(raw), CHUNK_BYTES)
            first = win.next_char()
            if first == "\ufeff":
                win.advance(1, 3)
                first = win.next_char()
            return _Records(win, max_record_bytes)._wrapped_key() if first == "{" else None
    except STREAM_ERRORS:
        return None


def json_records(path: str, max_record_bytes: int = MAX_RECORD_BYTES, *, chunk_bytes: int = CHUNK_BYTES
                 ) -> Iterator[Record]:
    """The records of a JSON file (an array, or objects one after another), parsed (`record_stream.Record`)."""
    return read_records(path, "json", lambda stream: _Records(_Window(stream, chunk_bytes), max_record_bytes),
                        stop=(_Fatal,))


def iter_json_array(path: str, columns: list[str] | None = None, batch_rows: int = 4096,
                    max_record_bytes: int = MAX_RECORD_BYTES, *, chunk_bytes: int = CHUNK_BYTES
                    ) -> Iterator[pa.RecordBatch]:
    return record_batches(json_records(path, max_record_bytes, chunk_bytes=chunk_bytes), columns, batch_rows)
