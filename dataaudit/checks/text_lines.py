"""The lines of a batch of texts, for the repetition check: every line (split on "\\n") of every text, trimmed,
with its document, and the structure regexes applied to the raw lines.

Two views give the same answers (tests compare them):

  ArrowLines   the reference: Arrow's split, trim and RE2 match over the lines as an Arrow array.
  KernelLines  with numba: one pass over the bytes (`textops._repetition_kernels.scan_lines`) finds the lines as
               byte spans of the batch buffer (no copy), and RE2 only runs on the lines whose cheap necessary
               condition (the kernel's gate: first and last bytes, an "=" or ":" in the line; for CODE_RE also
               `code_candidates`) holds. LABEL_RE is decided by the kernel (`_label`), but for the headings
               whose \\p{L} it cannot tell; so are SYMBOLS_RE on ASCII lines and LIST_RE with its marker cut
               (`list_items`); SYMBOLS_RE on the other lines is read with its class's code point table.

A view's text is a `pa.Array` (ArrowLines) or `Spans` (KernelLines); `text_of` reads one either way.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dataaudit.textops import codepoints
from dataaudit.textops import repetition_flags as line_flags
from dataaudit.textops.arrow import as_string_array, string_buffers
from dataaudit.textops.hashing import WS_CLASS

from .text_common import char_lengths, flatten_lists, to_bool, to_int64


@dataclass
class Spans:
    """Texts as byte spans data[start[i]:stop[i]] of one UTF-8 buffer."""

    data: np.ndarray
    start: np.ndarray
    stop: np.ndarray

    def __len__(self) -> int:
        return len(self.start)

    def text(self, i: int) -> str:
        return bytes(self.data[self.start[i]:self.stop[i]]).decode("utf-8")

    def take(self, rows: np.ndarray) -> Spans:
        return Spans(self.data, self.start[rows], self.stop[rows])

    def to_arrow(self, k) -> pa.Array:
        """The spans as an Arrow string array (a copy of their bytes; `k`: the kernels module)."""
        off = np.empty(len(self.start) + 1, np.int64)
        out = np.empty(int((self.stop - self.start).sum()), np.uint8)
        k.gather_spans(self.data, self.start, self.stop, off, out)
        return pa.LargeStringArray.from_buffers(len(self.start), pa.py_buffer(off), pa.py_buffer(out))


def text_of(texts, i: int) -> str:
    return texts.text(i) if isinstance(texts, Spans) else texts[i].as_py()


def _match(texts: pa.Array, pattern: str) -> np.ndarray:
    return to_bool(pc.match_substring_regex(texts, pattern=pattern))


class ArrowLines:
    """The reference view: Arrow arrays of the raw and trimmed lines."""

    def __init__(self, arr: pa.Array):
        self.arr = arr
        self.raw, self.doc, self.counts = flatten_lists(pc.split_pattern(arr, pattern="\n"))
        self.text = pc.utf8_trim_whitespace(self.raw)
        self.length = char_lengths(self.text).copy()

    def total_chars(self) -> np.ndarray:
        """Code points of each text."""
        return char_lengths(self.arr)

    def raw_chars(self) -> np.ndarray:
        return char_lengths(self.raw)

    def fenced(self, fence_re: str) -> np.ndarray:
        """The non-blank lines that are a fence (`fence_re`) or inside a fenced block: after an odd number of
        fences of their text."""
        nonblank = self.length > 0
        fence = nonblank & _match(self.raw, fence_re)
        if not fence.any():
            return fence
        first = np.cumsum(self.counts) - self.counts
        before = np.cumsum(fence, dtype=np.int32) - fence       # (int32: ~5x faster than a bool cumsum's int64)
        base = np.where(self.counts > 0, before[np.minimum(first, len(fence) - 1)], 0)
        return nonblank & (fence | ((before - base[self.doc]) & 1).astype(bool))   # odd: & 1 is ~3x faster than % 2

    def candidates(self, rows: np.ndarray, gate: str) -> np.ndarray:
        """The lines of `rows` that the regex of `gate` may match (all of them here)."""
        return rows

    def sure_code(self) -> np.ndarray:
        """Lines known to match CODE_RE without running it (none here)."""
        return np.zeros(len(self.length), dtype=bool)

    def labels(self, rows: np.ndarray, label_re: str, heading_re: str) -> np.ndarray:
        """Does LABEL_RE (`label_re`) match the raw line, for the lines where `rows` holds."""
        return self.match(label_re, rows)

    def symbols(self, rows: np.ndarray, symbols_re: str, symbol_class: str) -> np.ndarray:
        """Does SYMBOLS_RE (`symbols_re`, none of `symbol_class`) match the raw line, for the lines where `rows`
        holds."""
        return self.match(symbols_re, rows)

    def match(self, pattern: str, rows: np.ndarray) -> np.ndarray:
        """Does `pattern` match the raw line, for the lines where `rows` holds (False elsewhere)."""
        out = np.zeros(len(rows), dtype=bool)
        idx = np.flatnonzero(rows)
        if idx.size:
            out[idx] = _match(self.raw if idx.size == len(rows) else self.raw.take(pa.array(idx)), pattern)
        return out

    def list_items(self, rows: np.ndarray, list_re: str) -> np.ndarray:
        """Does LIST_RE (`list_re`) match the raw line, for the lines where `rows` holds."""
        return self.match(list_re, rows)

    def strip_markers(self, rows: np.ndarray, marker_re: str) -> tuple[np.ndarray, np.ndarray]:
        """The text of the list items `rows` (indices) loses its marker (`marker_re`, anchored); returns the code
        points and bytes of what is left."""
        rest = pc.replace_substring_regex(self.text.take(pa.array(rows)), pattern=marker_re, replacement="",
                                          max_replacements=1)
        mask = np.zeros(len(self.length), dtype=bool)
        mask[rows] = True
        self.text = pc.replace_with_mask(self.text, pa.array(mask), rest.cast(self.text.type))
        return char_lengths(rest), to_int64(pc.binary_length(rest))

    def count_words(self, rows: np.ndarray) -> np.ndarray:
        """RE2's \\S+ words of the text of lines `rows`."""
        return to_int64(pc.count_substring_regex(self.text.take(pa.array(rows)), pattern=r"\S+"))


class KernelLines:
    """The numba view: the lines as spans of the batch's bytes, regexes run on gated lines only."""

    INT32_BYTES = 2**31 - 1                 # a batch of fewer bytes gets int32 offsets and counts

    def __init__(self, k, arr: pa.Array, code_share: float = float("inf"), min_code_lines: int = 0):
        """`code_share`, `min_code_lines`: the check's code-file rule; a text that its sure code lines make a code file
        becomes one empty line (`scan_lines`: a code file counts nowhere). By default every text keeps its lines."""
        self.k = k
        off, data = string_buffers(as_string_array(arr))
        newlines = np.empty(len(arr), np.int64)
        cap = k.count_newlines(data, off, newlines) + len(arr)
        # offsets and counts as int32 while the batch allows: half the memory to write and to read back
        index = np.int32 if len(data) < self.INT32_BYTES else np.int64
        doc, rs, rt, ts, tt, raw_chars, chars = (np.empty(cap, index) for _ in range(7))
        flags = np.empty(cap, np.uint16)
        n = k.scan_lines(data, off, newlines, WS_CLASS, code_share, min_code_lines, doc, rs, rt, ts, tt, raw_chars,
                         chars, flags)
        self.doc, self.flags, self._raw_chars, self.length = doc[:n], flags[:n], raw_chars[:n], chars[:n]
        # doc is sorted and every text has a line: its bounds by binary search (~7x faster than a bincount)
        bounds = np.searchsorted(self.doc, np.arange(len(arr) + 1))
        self.counts = np.diff(bounds)
        self._first = bounds[:-1]
        self.raw = Spans(data, rs[:n], rt[:n])
        self.text = Spans(data, ts[:n], tt[:n])

    def raw_chars(self) -> np.ndarray:
        return self._raw_chars

    def total_chars(self) -> np.ndarray:
        """Code points of each text: of its lines and of the "\\n" between them (no second pass over the bytes;
        every text has a line, so a reduceat over its lines, ~5x faster than a weighted bincount)."""
        if len(self.counts) == 0:
            return np.zeros(0, np.int64)
        return np.add.reduceat(self._raw_chars, self._first) + (self.counts - 1)

    def fenced(self, fence_re: str) -> np.ndarray:
        """The lines the kernel found to be a fence (its exact test of FENCE_RE) or inside a fenced block."""
        return (self.flags & line_flags.FENCED) != 0

    def candidates(self, rows: np.ndarray, gate: str) -> np.ndarray:
        """The lines of `rows` that pass the kernel's gate for that regex (the others cannot match it); for
        CODE_RE, those that also pass the kernel's tighter `code_candidates`."""
        out = rows & ((self.flags & getattr(line_flags, gate)) != 0)
        if gate == "GATE_CODE":
            idx = np.flatnonzero(out)
            keep = np.empty(len(idx), dtype=bool)
            self.k.code_candidates(self.raw.data, self.raw.start, self.raw.stop, self.flags, idx, keep)
            out[idx[~keep]] = False
        return out

    def sure_code(self) -> np.ndarray:
        """Lines that match one of the kernel's exact parts of CODE_RE."""
        return (self.flags & line_flags.SURE_CODE) != 0

    def labels(self, rows: np.ndarray, label_re: str, heading_re: str) -> np.ndarray:
        """Does LABEL_RE (`label_re`) match the raw line, for the lines where `rows` holds: the kernel decided it
        (SURE_LABEL) but for a few headings whose other alternatives do not match, where RE2 runs its heading
        alternative `heading_re` alone (it compiles ~4x faster than the whole)."""
        sure = rows & ((self.flags & line_flags.SURE_LABEL) != 0)
        return sure | self.match(heading_re, rows & ~sure & ((self.flags & line_flags.GATE_LABEL) != 0))

    def symbols(self, rows: np.ndarray, symbols_re: str, symbol_class: str) -> np.ndarray:
        """Does SYMBOLS_RE (`symbols_re`: a line of one or more characters, none of `symbol_class`) match the raw
        line, for the lines where `rows` holds: the kernel decided it on ASCII lines (SURE_SYMBOLS); the others
        that pass its gate are read with the class's table (`codepoints.table`: RE2's answer for every code point,
        so the same as the regex, without compiling its Unicode classes again for every batch)."""
        out = rows & ((self.flags & line_flags.SURE_SYMBOLS) != 0)
        idx = np.flatnonzero(rows & ~out & ((self.flags & line_flags.GATE_SYMBOLS) != 0))
        if idx.size:
            held, chars = codepoints.count_matching(self.raw.take(idx).to_arrow(self.k), f"[{symbol_class}]")
            out[idx] = (held == 0) & (chars > 0)
        return out

    def match(self, pattern: str, rows: np.ndarray) -> np.ndarray:
        out = np.zeros(len(rows), dtype=bool)
        idx = np.flatnonzero(rows)
        if idx.size:
            out[idx] = _match(self.raw.take(idx).to_arrow(self.k), pattern)
        return out

    def list_items(self, rows: np.ndarray, list_re: str) -> np.ndarray:
        """Does LIST_RE match the raw line, for the lines where `rows` holds: decided by the kernel (`list_items`),
        which keeps where each item's text starts without its marker for `strip_markers`."""
        out = np.zeros(len(rows), dtype=bool)
        idx = np.flatnonzero(rows)
        start = np.empty(len(idx), np.int64)
        self.k.list_items(self.raw.data, self.raw.start, self.raw.stop, self.text.start, self.text.stop, idx, start)
        out[idx] = start >= 0
        self._item_start = np.full(len(rows), -1, np.int64)
        self._item_start[idx] = start
        return out

    def strip_markers(self, rows: np.ndarray, marker_re: str) -> tuple[np.ndarray, np.ndarray]:
        """The text of the list items `rows` (indices, found by `list_items`) loses its marker; returns the code
        points and bytes of what is left."""
        start = self.text.start.copy()
        start[rows] = self._item_start[rows]
        self.text = Spans(self.text.data, start, self.text.stop)
        nbytes = self.text.stop[rows] - start[rows]
        cont = np.empty(len(rows), np.int64)
        self.k.continuation_counts(self.text.data, start[rows], self.text.stop[rows], cont)
        return nbytes - cont, nbytes

    def count_words(self, rows: np.ndarray) -> np.ndarray:
        """RE2's \\S+ words of the text of lines `rows`, counted on its span by the kernel."""
        out = np.empty(len(rows), np.int64)
        self.k.count_words(self.text.data, self.text.start[rows], self.text.stop[rows], out)
        return out
