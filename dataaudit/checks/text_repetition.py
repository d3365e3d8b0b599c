"""Repetition statistics for the `repetition` check, computed for a whole batch at once: the Gopher ones
(Rae et al. 2021, "MassiveText" quality filter; thresholds as in datatrove's GopherRepetitionFilter) over the
prose of each text, and the longest run of one repeated sentence or line (a model looping).

Every statistic is found without a per-document loop: lines, words and sentences of all documents are
flattened with pyarrow, turned into integer ids with `dictionary_encode`, combined into 64-bit n-gram hashes
that also mix in the document index, and grouped once per n with Arrow's hash table (`dictionary_encode`
again: group ids come in order of first appearance). "Is this a repeat of an earlier occurrence in the same
document" is then "is its group id not new at this position", and per-document sums/maxima are `np.bincount`
/ `np.maximum.at` over the document index. Hash collisions (64-bit) are ignored.

With numba (a batch of at least `textops.hashing.numba_min_work()` bytes), the same statistics come from kernels
over the batch's bytes (`textops._repetition_kernels`): lines, sentences and words are byte spans with content
hashes instead of Arrow strings and dictionary ids, the n-grams are grouped per document, and the structure
regexes below only run on the lines that pass a cheap necessary condition (`checks.text_lines`). The Arrow
path stays as the reference; tests compare the two on random, structured and real text.

Gopher statistics (denominators follow datatrove; `len(text)` is the document length in characters):

  dup_line_frac       repeated non-empty lines (every occurrence after the first) / non-empty lines
  dup_line_char_frac  characters of those repeated lines / len(text)
  top_{n}_gram        (n = 2, 3, 4) count x char-length of the most frequent word n-gram / len(text); an
                      n-gram seen only once is not "repetition", so the statistic is 0 unless count >= 2.
                      Ties on count are broken by the longer n-gram. Char length = words joined by one
                      space. Overlapping occurrences are all counted (as in datatrove), so it can exceed 1.
  dup_{n}_gram        (n = 5..10) characters (word characters, no spaces) of words covered by any repeated
                      occurrence of an n-gram (every occurrence after the first) / len(text). Words covered
                      by several repeated n-grams count once (datatrove's greedy scan skips ahead instead;
                      union coverage is its order-independent equivalent and never smaller).

Words are whitespace-separated tokens (Unicode whitespace), compared exactly (case and punctuation kept).
Lines are split on "\\n" and compared after trimming surrounding whitespace.

Sentence runs (`sentence_run`, with repeats=True): lines are cut into sentences at . ! ? … (with any closing
quotes or brackets, then whitespace or the end of the line) and at 。！？; a line without such punctuation is
one sentence. Sentences are compared exactly after trimming. A run is a chain of occurrences of one sentence,
each at most RUN_GAP (3) sentences after the previous one, so a model repeating one sentence or line, or
alternating two or three, makes one long run, while a refrain or a running header that comes back every page
does not. The statistic is the length of the longest run, 0 when no sentence comes back; sentences shorter
than min_repeat_chars characters are not counted (they still take their place in the chain). It needs no
minimum number of words, so a short looping reply is caught too.

Structure (skip_structure=True, the check's default; False gives exactly datatrove's statistics, and every
non-empty line is cut into sentences). Code, tables, lists and data repeat lines and words by nature: `}` and
`return 0;` lines, `|---|---|` rows and repeated cells, "- Step" prefixes and parallel list items, JSON keys.
Gopher was tuned on web prose, where such repetition means boilerplate; on structured text it is the source of
false positives. Each non-empty line is matched (raw, before trimming) with RE2 regexes:

  counted nowhere (left out of every statistic and of len(text)):
    fenced code   every line from a ``` or ~~~ fence to the closing fence (or the end of the text), fences
                  included
    code          ends with { or }; starts with a closing bracket; ends with ");" or is an assignment ending
                  with ";"; starts a comment (// /* */); a definition (def/fn/func/function name( , class
                  Name( or :); a Python block header (lowercase if/elif/else/for/while/with/try/except/finally
                  ... ending with ":"); a return/raise/yield/pass/break/continue/throw statement not ending
                  like a sentence (. ! ?); an import, #include-style directive, using, package or @decorator
                  line; starts with an assignment `name = value` (also a.b[i] += ...); or is a call `name(...)`
                  followed by nothing but ; : , {
    table rows    start or end with "|"
    JSON lines    start with a quoted key and ":" ("name": ...), or are one whole object or array ({...},
                  [...], with an optional trailing comma)
    code files    every line of a text in which at least CODE_SHARE (10%) of the non-blank lines, and at least
                  MIN_CODE_LINES (3), are code by the rules above (source files, headers, a reply that is mostly
                  code): their comments and docstrings repeat parameter docs and license lines by nature
    symbol lines  no letter and no digit (lone braces, rules, separators), in a text that has one of the
                  lines above; in any other text they count as in Gopher (a column of "." lines in prose is
                  junk), never in the sentence runs
  not counted as lines or words by the Gopher statistics (still part of len(text)), cut into sentences:
    labels        markdown "#" headings (holding a letter: GSM8K's "#### 18" answer line stays prose); at most
                  4 words ending with ":" or "：" (the speakers of a play or a transcript, "Answer:"); `key:
                  value` lines (YAML, mail headers). A play repeats its speakers, a manual its section
                  headings and a config its keys by nature.
  list items      a line starting with a bullet (- * + • ◦ ▪ ‣ · –), "1." "1)" "a." "a)" "(iv)" "[ ]" "[x]"
                  and whitespace: the marker is removed; the item counts as a line (the same item over and
                  over is a repeated line) and as sentences, but its words count for the n-grams only when
                  it has LONG_ITEM_WORDS (50) words or more (a numbered paragraph is prose; short items share
                  their wording by design: "Step 3: ...", "Remember to ...")
  short-line blocks
                  block_lines (BLOCK_LINES, 3; 0: none) or more consecutive lines, each of fewer than BLOCK_WORDS
                  (25) words (not labels or symbol lines; a blank line ends a block) are items without markers,
                  counted as list items are: a multiple-choice stem's options one per line ("The sand will
                  dissolve ... because sand in water is a solution." / "... a mixture."), worked steps one per
                  line, a verse. Web prose comes in paragraphs; a loop of whole lines is still a repeated line, and
                  one in a paragraph still counts in every statistic

len(text) becomes the length of the text without the lines counted nowhere (and one "\\n" each): the whole text
when there are none, so prose gets exactly datatrove's numbers. n-grams join the words on either side of a
left-out line.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dataaudit.textops.arrow import as_string_array, string_buffers
from dataaudit.textops.hashing import GOLD as _GOLD
from dataaudit.textops.hashing import mix as _mix  # splitmix64, shared with dedup/contamination
from dataaudit.textops.hashing import WS_CLASS, numba_kernels
from dataaudit.textops.repetition_flags import SENTENCE_BYTES

from .text_common import char_lengths, flatten_lists, safe_ratio
from .text_long import byte_lengths
from .text_lines import ArrowLines, KernelLines, Spans, text_of

TOP_NS = (2, 3, 4)
DUP_NS = (5, 6, 7, 8, 9, 10)
MIN_REPEAT_CHARS = 5
_NONE = np.iinfo(np.int64).max

# ------------------------------------------------------------------------------------ structural line regexes

FENCE_RE = r"^\s*(?:```|~~~)"
_CODE = (
    r"[{}]\s*[;,]?\s*$",                                            # ends with a brace
    r"^\s*[}\])]",                                                  # starts with a closing bracket
    r"\)\s*;\s*$",                                                  # call statement: ...);
    r"=[^=].*;\s*$",                                                # assignment statement: ... = ...;
    r"^\s*(?://|/\*|\*/)",                                          # comments
    r"^\s*(?:async\s+)?(?:def|fn|func|function)\s+[\w$]+\s*[(<]",   # definitions
    r"^\s*class\s+\w+\s*[(:{<]",
    r"^\s*(?:if|elif|else|for|while|with|try|except|finally)\b.*:\s*$",            # Python block headers
    r"^\s*(?:return|raise|yield|pass|break|continue|throw)\b(?:.*[^.!?\s])?\s*$",  # not ending like a sentence
    r"^\s*(?:import\s+[\w.]+(?:\s+as\s+\w+)?(?:\s*,\s*[\w.]+)*\s*;?|from\s+[\w.]+\s+import\s.*"
    r"|#\s*(?:include|define|undef|ifdef|ifndef|if|elif|else|endif|pragma)\b.*|using\s+[\w.:]+\s*;"
    r"|package\s+[\w.]+\s*;?|@[A-Za-z_][\w.]*(?:\(.*\))?)\s*$",     # imports, directives, decorators
    r"^\s*[A-Za-z_$][\w$]*(?:(?:\.|->|::)[A-Za-z_$][\w$]*|\[[^\]]*\])*\s*(?:[-+*/%&|^]|<<|>>|\*\*|//)?="
    r"\s*[^=\s]",                                                   # name = value
    r"^\s*(?:await\s+)?[A-Za-z_$][\w$.]*\(.*\)[\s;:,{]*$",          # name(...)
)
# Code, table rows and data: left out of every statistic.
CODE_RE = "|".join((
    *_CODE,
    r"^\s*\||\|\s*$",                                               # table rows
    r'^\s*(?:"[^"]*"|\'[^\']*\'|0[xX][0-9a-fA-F]+)\s*:',                 # JSON / dict "key": ..., 0x41: ...
    r'^\s*(?:"[^"]*"|\'[^\']*\')\s*(?:,\s*$|,?\s*#)',                    # a literal in a table: 'x',  # ...
    r"^\s*[\[{].*[\]}]\s*,?\s*$",                                   # one whole JSON object / array
))
# Headings, labels and key: value lines: left out of the Gopher statistics (a play repeats its speakers, a manual
# its section headings, a config its keys), kept in len(text) and for the sentence runs.
HEADING_RE = r"^\s*#{1,6}\s.*\p{L}"                                             # markdown headings
LABEL_RE = "|".join((
    HEADING_RE,
    r"^\s*[^\s:\x{FF1A}]{1,30}(?:[ \t]+[^\s:\x{FF1A}]{1,30}){0,3}[:\x{FF1A}]\s*$",  # "ROMEO:", "Answer:"
    r"^\s*(?:-\s+)?[A-Za-z_][\w.-]*:\s+\S",                                      # key: value (YAML, headers)
))
# No letter, no digit: left out of the sentence runs, and of the Gopher statistics in a text with code.
SYMBOL_CLASS = r"\p{L}\p{N}"           # (what a symbols line has none of; the numba view reads it as a table)
SYMBOLS_RE = rf"^[^{SYMBOL_CLASS}]+$"
# List markers: removed (the item is kept).
_MARKER = r"(?:[-*+\x{2022}\x{25E6}\x{25AA}\x{2023}\x{00B7}\x{2013}]|\d{1,3}[.)]|[A-Za-z][.)]|\(\w{1,4}\)|\[[ xX]\])\s+"
LIST_RE = r"^\s*" + _MARKER
SENTENCE_END_RE = (r"[.!?\x{2026}]+[\"'\x{201D}\x{2019}\x{00BB})\]]*(?:\s+|$)"
                   r"|[\x{3002}\x{FF01}\x{FF1F}]+[\x{201D}\x{2019}\x{300D}\x{300F}\x{FF09}]*\s*")
CODE_SHARE = 0.1        # a text with this share of code lines (and MIN_CODE_LINES of them) is code
MIN_CODE_LINES = 3
RUN_GAP = 3             # a sentence continues its run when it comes back within this many sentences
LONG_ITEM_WORDS = 50    # a list item of this many words is a paragraph: its words count as prose
BLOCK_LINES = 3         # this many consecutive lines of under BLOCK_WORDS words are items without markers
BLOCK_WORDS = 25


# ------------------------------------------------------------------------------------------ grouping helpers

def _ids(values: pa.Array) -> np.ndarray:
    """Integer id per string (equal strings -> equal ids) as uint64."""
    if len(values) == 0:
        return np.zeros(0, dtype=np.uint64)
    enc = pc.dictionary_encode(values)
    if isinstance(enc, pa.ChunkedArray):
        enc = enc.combine_chunks()
    return enc.indices.to_numpy(zero_copy_only=False).astype(np.uint64)


def _repeats(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Group equal `keys` -> (group id per item, is-first-occurrence per item, count per group).

    Arrow's hash-based `dictionary_encode` numbers groups in order of first appearance, so an item is the
    first of its group exactly when its id exceeds every earlier id, and the k-th first occurrence starts
    group k. (O(n), ~2x faster than a stable argsort of the 64-bit keys.) The numpy twin's batch-wide grouping;
    the kernels group one document at a time.
    """
    if len(keys) == 0:
        return np.zeros(0, np.int64), np.zeros(0, bool), np.zeros(0, np.int64)
    gid = pc.dictionary_encode(pa.array(keys, type=pa.uint64())).indices.to_numpy(zero_copy_only=False)
    first = np.empty(len(gid), dtype=bool)
    first[0] = True
    np.greater(gid[1:], np.maximum.accumulate(gid)[:-1], out=first[1:])
    return gid, first, np.bincount(gid)


def _per_doc(values: np.ndarray, first_line: np.ndarray) -> np.ndarray:
    """Per-document sums (int64) of `values` over the lines, in document order (`first_line`: each document's
    first line; every document has one): differences of the running sum at the documents' bounds, ~2.4x faster than
    a reduceat (which casts each value on its way), itself ~4x faster than a weighted bincount."""
    if len(first_line) == 0:
        return np.zeros(0, np.int64)
    running = np.zeros(len(values) + 1, np.int64)
    np.cumsum(values, dtype=np.int64, out=running[1:])
    return running[np.append(first_line[1:], len(values))] - running[first_line]


def _take(values: pa.Array, mask: np.ndarray) -> pa.Array:
    return values if mask.all() else values.filter(pa.array(mask))


def _take_texts(texts: pa.Array | Spans, mask: np.ndarray) -> pa.Array | Spans:
    return texts.take(np.flatnonzero(mask)) if isinstance(texts, Spans) else _take(texts, mask)


# ------------------------------------------------------------------------------------------------- the lines

@dataclass
class Lines:
    """Every line of every document (split on "\\n"), with what each is for.

    text: trimmed, list markers removed (a pa.Array, or `Spans` of the batch's bytes with numba); doc: document
    of each line; length: chars of `text`; lines: counted by the duplicate-line statistics; words: lines whose
    words the n-gram statistics count; sentences: cut into sentences for the sentence runs; kept_chars: per
    document, len(text) without the lines counted nowhere; first: per document, its first line (it has one)."""

    text: pa.Array | Spans
    doc: np.ndarray
    length: np.ndarray
    lines: np.ndarray
    words: np.ndarray
    sentences: np.ndarray
    kept_chars: np.ndarray
    first: np.ndarray

    def line_text(self, i: int) -> str:
        return text_of(self.text, i)


def split_lines(arr: pa.Array, total: np.ndarray | None, skip_structure: bool,
                block_lines: int = BLOCK_LINES) -> Lines:
    """The lines of `arr` (a null text is an empty one, of one empty line) and their classes; `total`: the texts' code
    points (None: the view counts them); `block_lines`: the lines of a short-line block (0: none)."""
    arr = pc.fill_null(arr, "")
    k = numba_kernels("dataaudit.textops._repetition_kernels", work=arr.nbytes)
    if k is None:
        view = ArrowLines(arr)
    else:                                                       # (code files only count nowhere with skip_structure)
        view = KernelLines(k, arr, *((CODE_SHARE, MIN_CODE_LINES) if skip_structure else ()))
    doc, counts, length = view.doc, view.counts, view.length
    if total is None:                                           # the texts' code points
        total = view.total_chars()
    nonblank = length > 0
    first_line = np.cumsum(counts) - counts
    if not skip_structure:
        return Lines(view.text, doc, length, nonblank, nonblank, nonblank, total.astype(np.float64),
                     first_line)
    # One pass per class: RE2 runs each as a DFA; their alternation in one pattern outgrows the DFA's memory
    # budget and ran ~5x slower than all five apart.
    code = view.fenced(FENCE_RE)                                # fences and fenced blocks
    # A code file: Gopher's statistics are for prose, and code repeats lines and identifiers by nature; its
    # docstrings and comments repeat parameter docs. All of it is counted nowhere. A text whose lines known to be
    # code already make it one needs no regex on its other lines (the result is the same as testing them all).
    n_nonblank = _per_doc(nonblank, first_line)

    def code_file(code: np.ndarray) -> np.ndarray:
        n_code = _per_doc(code, first_line)
        return (n_code >= MIN_CODE_LINES) & (n_code >= CODE_SHARE * n_nonblank)

    code |= nonblank & view.sure_code()
    settled = code_file(code)
    code |= view.match(CODE_RE, view.candidates(nonblank & ~code & ~settled[doc], "GATE_CODE"))
    has_code = _per_doc(code, first_line) > 0
    code |= nonblank & code_file(code)[doc]
    # the other classes only matter on the non-blank lines outside code
    rest = nonblank & ~code
    label = view.labels(rest, LABEL_RE, HEADING_RE)
    symbols = view.symbols(rest, SYMBOLS_RE, SYMBOL_CLASS)
    items = view.list_items(view.candidates(rest, "GATE_LIST"), LIST_RE) & ~symbols
    short_item = items.copy()
    if items.any():                                             # the item without its marker
        rows = np.flatnonzero(items)
        chars, nbytes = view.strip_markers(rows, "^" + _MARKER)
        length = length.copy()
        length[rows] = chars
        # RE2's \S+ words; a text of fewer than 2 * LONG_ITEM_WORDS - 1 bytes cannot hold LONG_ITEM_WORDS of them
        long = np.flatnonzero(nbytes >= 2 * LONG_ITEM_WORDS - 1)
        if long.size:
            short_item[rows[long]] = view.count_words(rows[long]) < LONG_ITEM_WORDS
    # Lines in a block of short lines are items without markers: a multiple-choice stem's options, worked steps
    # one per line, a verse. They share their wording by design ("The sand will dissolve ... because sand in water
    # is a solution." / "... a mixture.") as list items do.
    if block_lines:
        short_item |= line_blocks(view, rest & ~label & ~symbols, length, doc, block_lines)
    left_out = code | (symbols & has_code[doc])                # counted nowhere
    lines = nonblank & ~left_out & ~label
    words = nonblank & ~left_out & ~label & ~short_item
    sentences = nonblank & ~code & ~symbols
    # len(text) without the left-out lines: their characters and one "\n" each (none for a whole text)
    n_out = _per_doc(left_out, first_line)
    out_chars = _per_doc(view.raw_chars() * left_out, first_line)
    kept = total - out_chars - np.where(n_out >= counts, counts - 1, n_out)
    return Lines(view.text, doc, length, lines, words, sentences, np.maximum(kept, 0).astype(np.float64), first_line)


def line_blocks(view, candidate: np.ndarray, length: np.ndarray, doc: np.ndarray,
                min_lines: int = BLOCK_LINES) -> np.ndarray:
    """The lines of `candidate` that stand in a block of `min_lines` or more consecutive lines of one document, each
    of fewer than BLOCK_WORDS words (`length`: their code points; `doc`: the document of each line)."""
    out = _blocks(candidate, doc, min_lines)
    # a line of fewer than 2 * BLOCK_WORDS - 1 code points cannot hold BLOCK_WORDS words; the longer lines of a
    # possible block are counted, and the blocks found again
    maybe = np.flatnonzero(out & (length >= 2 * BLOCK_WORDS - 1))
    if maybe.size:
        short = out.copy()
        short[maybe] = view.count_words(maybe) < BLOCK_WORDS
        out = _blocks(short, doc, min_lines)
    return out


def _blocks(lines: np.ndarray, doc: np.ndarray, min_lines: int) -> np.ndarray:
    """The `lines` in a run of `min_lines` or more consecutive ones within one document."""
    out = np.zeros(len(lines), dtype=bool)
    follows = np.zeros(len(lines), dtype=bool)               # continues the run of the line before
    np.logical_and(lines[1:], lines[:-1], out=follows[1:])
    follows[1:] &= doc[1:] == doc[:-1]
    starts = lines & ~follows
    if not starts.any():
        return out
    run = np.cumsum(starts) - 1
    size = np.bincount(run[lines])
    out[lines] = size[run[lines]] >= min_lines
    return out


def line_stats(lines: Lines, doc_key: np.ndarray, n_docs: int) -> tuple[np.ndarray, np.ndarray]:
    """(dup_line_frac, dup_line_char_numerator) per document, over the lines the Gopher statistics count."""
    keep = lines.lines
    n_lines = _per_doc(keep, lines.first)
    dup_lines = np.zeros(n_docs, dtype=np.int64)
    dup_chars = np.zeros(n_docs, dtype=np.float64)
    if keep.any() and isinstance(lines.text, Spans):          # numba: the same, document by document
        text, rows = lines.text, np.flatnonzero(keep)
        numba_kernels("dataaudit.textops._repetition_kernels").line_repeats(
            text.data, text.start, text.stop, lines.length, rows, lines.doc[rows], dup_lines, dup_chars)
    elif keep.any():
        rows = np.flatnonzero(keep)                             # (one index for every gather: no mask gathers)
        parents = lines.doc[rows]
        _, first, _ = _repeats(_mix(_ids(_take(lines.text, keep)) ^ doc_key[parents]))
        rep = rows[~first]
        dup_lines = np.bincount(lines.doc[rep], minlength=n_docs)
        dup_chars = np.bincount(lines.doc[rep], weights=lines.length[rep], minlength=n_docs)
    return safe_ratio(dup_lines, n_lines), dup_chars


def words_of(texts: pa.Array, parent: np.ndarray, n_docs: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(hash and characters of every word of `texts`, in order; the number of words of each document) (words split
    on whitespace runs, Unicode spaces included; `parent`: the document of each text, non-decreasing): Arrow's split
    and dictionary ids, mixed (equal words, equal hashes). The twin of the kernels' `doc_words`."""
    words, in_text, _ = flatten_lists(pc.utf8_split_whitespace(texts))
    wlen = char_lengths(words)
    keep = wlen > 0                                             # leading/trailing/repeated whitespace
    if not keep.all():
        words, in_text, wlen = words.filter(pa.array(keep)), in_text[keep], wlen[keep]
    return _mix(_ids(words) + _GOLD), wlen, np.bincount(parent[in_text], minlength=n_docs)


WORD_RUN_UNITS = 3     # the units of `word_runs`: 1..3 words (the kernels' constant of the same name)


def word_runs(wh: np.ndarray, wlen: np.ndarray, n_words: np.ndarray) -> np.ndarray:
    """Per document (its words' hashes `wh` in order, their code points `wlen`, n_words of each), the most times one
    unit of 1..3 words comes back to back, its first time counted ("no no no": 3; "ha he ha he": 2); 0 when none
    comes twice in a row. A word of one character breaks a run ("- - - -" is a rule, not a loop). The twin of the
    kernels' `_word_run`."""
    n_docs = len(n_words)
    best = np.zeros(n_docs, np.int64)
    doc = np.repeat(np.arange(n_docs, dtype=np.int64), n_words)
    for k in range(1, WORD_RUN_UNITS + 1):
        if len(wh) <= k:
            break
        same = (wh[k:] == wh[:-k]) & (doc[k:] == doc[:-k]) & (wlen[k:] >= 2)   # word i + k repeats word i
        if not same.any():
            continue
        # lengths of the runs of `same`: each True position's place in its run, 1-based
        idx = np.arange(len(same))
        last_false = np.maximum.accumulate(np.where(same, -1, idx))
        run = idx - last_false
        run[~same] = 0
        reps = np.where(run >= k, run // k + 1, 0)
        np.maximum.at(best, doc[k:], reps)
    return best


def ngram_stats(texts: pa.Array | Spans, parent: np.ndarray, doc_key: np.ndarray, n_docs: int, top_ns, dup_ns,
                min_words: int):
    """{n: top-n-gram chars} and {n: duplicated-n-gram chars} per document (numerators, float64), the number of
    words of each document, and its `word_runs`, from the words of `texts` (`parent`: the document of each text,
    non-decreasing).
    With numba (`Spans` come from the numba path only) the kernel `word_ngrams` does it all one document at a
    time; else Arrow's words (`words_of`) and numpy rounds over the whole batch."""
    top = {n: np.zeros(n_docs) for n in top_ns}
    dup = {n: np.zeros(n_docs) for n in dup_ns}
    max_n = max(list(top_ns) + list(dup_ns), default=0)
    k = numba_kernels("dataaudit.textops._repetition_kernels",
                      work=None if isinstance(texts, Spans) else texts.nbytes)
    if k is not None:
        if not isinstance(texts, Spans):
            off, data = string_buffers(as_string_array(texts))
            texts = Spans(data, off[:-1], off[1:])
        n_words, runs = np.zeros(n_docs, np.int64), np.zeros(n_docs, np.int64)
        is_top, is_dup = np.zeros(max_n + 1, np.bool_), np.zeros(max_n + 1, np.bool_)
        is_top[list(top_ns)], is_dup[list(dup_ns)] = True, True
        out_top, out_dup = np.zeros((max_n + 1, n_docs)), np.zeros((max_n + 1, n_docs))
        k.word_ngrams(texts.data, texts.start, texts.stop, np.ascontiguousarray(parent, np.int64), int(min_words),
                      max_n, is_top, is_dup, out_top, out_dup, n_words, runs)
        return {n: out_top[n] for n in top_ns}, {n: out_dup[n] for n in dup_ns}, n_words, runs
    wh, wlen, n_words = words_of(texts, parent, n_docs)
    runs = word_runs(wh, wlen, n_words)
    N = len(wh)
    if N == 0 or max_n == 0:
        return top, dup, n_words, runs
    doc = np.repeat(np.arange(n_docs, dtype=np.int64), n_words)   # document of each word
    cum = np.concatenate(([0.0], np.cumsum(wlen.astype(np.float64))))
    starts = np.concatenate(([0], np.cumsum(n_words)[:-1]))
    pos = np.arange(N, dtype=np.int64) - starts[doc]            # position of each word in its document
    left = n_words[doc] - pos                                   # words from here to the end of the document
    eligible = n_words[doc] >= min_words
    h = _mix(wh ^ doc_key[doc])                                 # 1-gram hash, document mixed in
    # An n-gram can only occur twice in a document if both its (n-1)-gram prefix and suffix do, so each
    # round only groups the positions that survived the previous one (exact, and most text drops out fast).
    repeated = eligible.copy()                                  # (n-1)-gram at i occurs >= 2 times
    for n in range(2, max_n + 1):
        m = N - n + 1
        if m <= 0:
            break
        h = _mix(h[:m] * _GOLD + wh[n - 1:])                    # n-gram starting at i: words i..i+n-1
        idx = np.flatnonzero(repeated[:m] & repeated[1:m + 1] & (left[:m] >= n))
        if idx.size == 0:
            break
        gid, first, counts = _repeats(h[idx])
        repeated = np.zeros(N, dtype=bool)
        repeated[idx] = counts[gid] >= 2
        if n in top:
            g_pos = idx[first]                                  # first position of each distinct n-gram
            g_doc = doc[g_pos]
            g_len = cum[g_pos + n] - cum[g_pos] + (n - 1)       # words joined with single spaces
            best = np.zeros(n_docs, dtype=np.int64)
            np.maximum.at(best, g_doc, counts)
            cand = (counts >= 2) & (counts == best[g_doc])
            np.maximum.at(top[n], g_doc[cand], counts[cand] * g_len[cand])
        if n in dup:
            rep = idx[~first]                                   # repeated occurrences (not the first)
            if rep.size:
                edge = np.bincount(rep, minlength=N + 1) - np.bincount(rep + n, minlength=N + 1)
                covered = np.cumsum(edge[:N]) > 0
                dup[n] = np.bincount(doc, weights=wlen * covered, minlength=n_docs)
    return top, dup, n_words, runs


def _sentences(texts: pa.Array | Spans):
    """(the sentences of `texts`, text of each, code points of each, content hash of each or None): cut at
    SENTENCE_END_RE, trimmed, empty ones dropped. With numba (`Spans`) one pass over the bytes, hashed on the way;
    else Arrow's regex split (ids come later from the strings)."""
    if isinstance(texts, Spans):
        k = numba_kernels("dataaudit.textops._repetition_kernels")
        # Outputs for a sentence per 32 bytes and per line, and again at the right size in the rare batch that
        # has more: the worst case (a sentence per 2 bytes) meant ~70 MB of outputs for an 8 MB batch, mapped
        # fresh from the system every batch (the split ran ~15% faster without them).
        cap = len(texts) + int((texts.stop - texts.start).sum()) // 32
        while True:
            line, start, stop, chars = (np.empty(cap, np.int64) for _ in range(4))
            hashes = np.empty(cap, np.uint64)
            m = k.split_sentences(texts.data, texts.start, texts.stop, WS_CLASS, SENTENCE_BYTES, line, start, stop,
                                  chars, hashes)
            if m <= cap:
                return Spans(texts.data, start[:m], stop[:m]), line[:m], chars[:m], hashes[:m]
            cap = m
    sents, parent, _ = flatten_lists(pc.split_pattern_regex(texts, pattern=SENTENCE_END_RE))
    sents = pc.utf8_trim_whitespace(sents)
    slen = char_lengths(sents)
    nonempty = slen > 0
    if not nonempty.all():
        sents, parent, slen = sents.filter(pa.array(nonempty)), parent[nonempty], slen[nonempty]
    return sents, parent, slen, None


def sentence_width(sents: pa.Array | Spans, chars: np.ndarray) -> np.ndarray:
    """How long each sentence reads, for min_repeat_chars: (code points + UTF-8 bytes) // 2, i.e. its characters,
    a CJK character counting as two (it is a word: "我很好。" is a sentence, "Yes." is not), an accented Latin
    letter as one and a half."""
    nbytes = (sents.stop - sents.start) if isinstance(sents, Spans) else byte_lengths(sents)
    return (chars + nbytes) // 2


def sentence_runs(lines: Lines, doc_key: np.ndarray, n_docs: int, min_chars: int):
    """(length of each document's longest sentence run (0 when no sentence comes back), the sentences, index of
    that run's first sentence per document or -1). A run: occurrences of one sentence, each within RUN_GAP
    sentences of the previous one. Sentences narrower than min_chars (`sentence_width`) are not counted (but hold
    their place)."""
    best = np.zeros(n_docs, dtype=np.int64)
    at = np.full(n_docs, -1, dtype=np.int64)
    empty = pa.array([], pa.string())
    if not lines.sentences.any():
        return best, empty, at
    rows = np.flatnonzero(lines.sentences)
    sents, parent, slen, sent_ids = _sentences(lines.text.take(rows) if isinstance(lines.text, Spans)
                                               else _take(lines.text, lines.sentences))
    slen = sentence_width(sents, slen)
    doc = lines.doc[rows[parent]]
    if sent_ids is not None:                                    # numba: the same, document by document
        numba_kernels("dataaudit.textops._repetition_kernels").sentence_runs(
            doc, sent_ids, slen, max(int(min_chars), 1), RUN_GAP, best, at)
        return best, sents, at
    # doc is sorted: each document's first sentence by binary search (faster than a bincount over the sentences)
    pos = np.arange(len(doc), dtype=np.int64) - np.searchsorted(doc, np.arange(n_docs))[doc]   # place in its document
    counted = slen >= max(int(min_chars), 1)
    if not counted.any():
        return best, empty, at
    ok = np.flatnonzero(counted)
    ids = sent_ids[ok] if sent_ids is not None else _ids(_take(sents, counted))
    gid, _, counts = _repeats(_mix(ids ^ doc_key[doc[ok]]))
    multi = counts[gid] >= 2                                    # a sentence seen once makes no run
    if not multi.any():
        return best, sents, at
    g = gid[multi]
    order = np.argsort(g, kind="stable")                        # by sentence, in text order within one
    item, g = ok[multi][order], g[order]
    starts = np.ones(len(item), dtype=bool)
    starts[1:] = (g[1:] != g[:-1]) | (pos[item[1:]] - pos[item[:-1]] > RUN_GAP)
    run_len = np.bincount(np.cumsum(starts) - 1)
    first = item[starts]                                        # first sentence of each run
    run_doc = doc[first]
    np.maximum.at(best, run_doc, run_len)
    best[best < 2] = 0                                          # one occurrence is not a run
    top = (run_len == best[run_doc]) & (run_len >= 2)           # the longest run (first in the text on ties)
    first_at = np.full(n_docs, _NONE, dtype=np.int64)
    np.minimum.at(first_at, run_doc[top], first[top])
    at[first_at != _NONE] = first_at[first_at != _NONE]
    return best, sents, at


class RepetitionStats(dict):
    """statistic name -> float64 array, one value per document; `repeated_text(i)` is the sentence of document
    i's longest run ("" without one, or when the sentence runs were not computed)."""

    sentences: pa.Array | Spans | None = None
    example_at: np.ndarray | None = None
    n_words: np.ndarray | None = None       # words the n-gram statistics counted, per document
    word_runs: np.ndarray | None = None     # the most times a unit of 1..3 words comes back to back, per document

    def repeated_text(self, i: int) -> str:
        if self.example_at is None or self.example_at[i] < 0:
            return ""
        return text_of(self.sentences, int(self.example_at[i]))


def repetition_stats(arr: pa.Array, *, top_ns=TOP_NS, dup_ns=DUP_NS, lines: bool = True, min_words: int = 0,
                     skip_structure: bool = False, repeats: bool = False,
                     min_repeat_chars: int = MIN_REPEAT_CHARS, word_run: bool = False,
                     block_lines: int = BLOCK_LINES) -> RepetitionStats:
    """All statistics, one float64 array per statistic (documents too short for an n -> 0): the Gopher ratios,
    and with `repeats` "sentence_run" (the length of the longest run of one sentence; its text by
    `repeated_text(i)`). skip_structure leaves out code, tables and data and treats lists, headings and labels
    apart (see the module docstring); without it the Gopher statistics are datatrove's. With `word_run`,
    "word_run": the most times a unit of 1..3 words comes back to back (`word_runs`). `block_lines`: with
    skip_structure, that many consecutive short lines are list items (0: never)."""
    n_docs = len(arr)
    arr = pc.fill_null(arr, "")
    doc_key = _mix(np.arange(n_docs, dtype=np.uint64) + np.uint64(1))
    out = RepetitionStats()
    ngrams = bool(top_ns or dup_ns or word_run)
    split = None
    if lines or repeats or (ngrams and skip_structure):
        split = split_lines(arr, None, skip_structure, block_lines)
    denominator = split.kept_chars if split is not None else char_lengths(arr)
    if lines:
        frac, chars = line_stats(split, doc_key, n_docs)
        out["dup_line_frac"] = frac
        out["dup_line_char_frac"] = safe_ratio(chars, denominator)
    if ngrams:
        if skip_structure:
            texts, parent = _take_texts(split.text, split.words), split.doc[split.words]
        else:
            texts, parent = arr, np.arange(n_docs, dtype=np.int64)
        top, dup, out.n_words, out.word_runs = ngram_stats(texts, parent, doc_key, n_docs, tuple(top_ns),
                                                           tuple(dup_ns), min_words)
        for n in top_ns:
            out[f"top_{n}_gram"] = safe_ratio(top[n], denominator)
        for n in dup_ns:
            out[f"dup_{n}_gram"] = safe_ratio(dup[n], denominator)
        if word_run:
            out["word_run"] = out.word_runs.astype(np.float64)
    if repeats:
        best, out.sentences, out.example_at = sentence_runs(split, doc_key, n_docs, min_repeat_chars)
        out["sentence_run"] = best.astype(np.float64)
    return out
