"""Token lengths of conversations as the model sees them, and where their last assistant reply ends.

`[data] tokenizer` is a tokenizer.json, or a folder holding one with its tokenizer_config.json (a tokenizer.json
whose own folder has the config files counts as that folder). A conversation field (a list of turns, see
dataaudit.fields) is rendered into one text per record, then batch-encoded with the `tokenizers` library
(no special tokens added: a chat template writes its own):

- `chat_template`: the tokenizer has one (tokenizer_config.json `chat_template`, chat_template.jinja or
  chat_template.json, as dataaudit.tokenization.loading finds it). It is rendered as transformers'
  apply_chat_template does: in the Jinja2 immutable sandbox shared with the tokenizer-drift command
  (dataaudit.tokenization.chat), with `messages` = [{"role", "content"}], `add_generation_prompt=False` (the
  conversation is complete), and the special tokens (`bos_token`, `eos_token`, `pad_token`, `unk_token`) from the
  config. Roles are given the OpenAI names templates expect (TEMPLATE_ROLES: human -> user, gpt -> assistant,
  function_call -> assistant, observation -> tool; other roles unchanged) and a turn's text parts are joined
  (dataaudit.texts). One Python render per conversation; a conversation the template fails on (an error of any
  kind, `raise_exception` included) is counted as a render error and not measured, the others are.
- `role_prefixed`: no template. Each turn is `"<role>: <text>\\n"` with the role as the data has it, the turns of a
  conversation concatenated: Arrow string kernels over the flattened turns, no per-record loop.

The end of the last trained turn (the last turn whose role is on the assistant's side, TRAINED_ROLES, its
end-of-turn markup included) is located only for conversations longer than the context length, the ones
truncation cuts: as a character offset into the rendering (the rendering of the conversation up to that turn
with a template; summed turn lengths without one), turned into tokens with the encoding's character offsets.
Cutting keeps the first context_length tokens (right-side truncation, what training code does when it cuts a
sequence to the context): the reply loses part of itself when it ends past the cut. Where the first trained turn's
text starts is located the same way (the rendering of the turns before it with the generation prompt), for the
conversations at or over the context length, with their first context_length token ids: what the checks of
dataaudit.checks.truncation judge. `Messages` is any record's turns (dataaudit.stats.rendered_records builds them
for pairs and Alpaca records).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dataaudit.fields import ASSISTANT_ROLES, Column
from dataaudit.stats.lengths import REPLY_NONE, REPLY_UNKNOWN
from dataaudit.texts import conversation
from dataaudit.tool_turns import Record

CHAT_TEMPLATE = "chat_template"
# The turns a trainer trains on by default (LLaMA-Factory, TRL's assistant-only loss): the assistant's replies
# and its tool calls; every other turn is prompt.
TRAINED_ROLES = (*ASSISTANT_ROLES, "function_call")
ROLE_PREFIXED = "role_prefixed"
ERROR_CHARS = 200
TOKENIZER_FILE = "tokenizer.json"
# Files beside a tokenizer.json that make its folder the tokenizer (dataaudit.tokenization.loading reads them).
FOLDER_FILES = ("tokenizer_config.json", "special_tokens_map.json", "chat_template.jinja", "chat_template.json")
# Role names (lower case) as OpenAI-style chat templates expect them; a role not listed is passed unchanged.
TEMPLATE_ROLES = {
    "system": "system", "user": "user", "human": "user",
    "assistant": "assistant", "gpt": "assistant", "model": "assistant", "bot": "assistant", "chatbot": "assistant",
    "function_call": "assistant",     # ShareGPT: the assistant's tool call (its JSON as the content)
    "observation": "tool", "tool": "tool", "function": "tool",   # the tool's result
}


@dataclass
class LengthTokenizer:
    """The `[data] tokenizer` as the length statistics use it: the tokenizer without padding or truncation (a
    length is never the batch's longest nor capped), its chat template if any, the template's special-token
    variables, and the context length conversations are cut to (None: not configured)."""

    tokenizer: Any                                      # tokenizers.Tokenizer
    path: str | None = None
    template: str | None = None
    template_source: str | None = None
    variables: dict[str, Any] = field(default_factory=dict)
    context_length: int | None = None
    _compiled: Any = field(default=None, repr=False)

    @property
    def rendering(self) -> str:
        return CHAT_TEMPLATE if self.template is not None else ROLE_PREFIXED

    def with_context(self, context_length: int | None) -> "LengthTokenizer":
        return replace(self, context_length=context_length)

    def compiled(self):
        """The compiled template (its syntax error raised again on every call: every conversation fails)."""
        if self._compiled is None:
            from dataaudit.tokenization.chat import sandbox

            try:
                self._compiled = sandbox().from_string(self.template)
            except Exception as exc:   # a template that does not compile: each conversation is a render error
                self._compiled = exc
        if isinstance(self._compiled, Exception):
            raise self._compiled
        return self._compiled


def tokenizer_source(path: str | Path) -> tuple[Path, bool]:
    """(what to load, whether it is a folder with config files): a folder; a tokenizer.json whose folder has
    config files (that folder); any other file alone."""
    p = Path(path)
    if p.is_dir():
        return p, True
    if p.name == TOKENIZER_FILE and any((p.parent / f).is_file() for f in FOLDER_FILES):
        return p.parent, True
    return p, False


def _plain_tokenizer(tok):
    if tok.padding is None and tok.truncation is None:
        return tok
    from tokenizers import Tokenizer

    tok = Tokenizer.from_str(tok.to_str())
    tok.no_padding()
    tok.no_truncation()
    return tok


@lru_cache(maxsize=4)
def load_length_tokenizer(path: str) -> LengthTokenizer:
    """Load `[data] tokenizer` (raises TokenizerLoadError, or the tokenizers library's error for a lone file)."""
    source, folder = tokenizer_source(path)
    if not folder:
        from tokenizers import Tokenizer

        return LengthTokenizer(_plain_tokenizer(Tokenizer.from_file(str(source))), str(source))
    from dataaudit.tokenization.chat import special_tokens
    from dataaudit.tokenization.loading import load_bundle

    bundle = load_bundle(source)
    return LengthTokenizer(_plain_tokenizer(bundle.tokenizer), str(source), bundle.chat_template,
                           bundle.chat_template_source, special_tokens(bundle))


def as_length_tokenizer(tokenizer) -> LengthTokenizer:
    """A LengthTokenizer as is; a bare tokenizers.Tokenizer as one without a template (nor context length)."""
    return tokenizer if isinstance(tokenizer, LengthTokenizer) else LengthTokenizer(_plain_tokenizer(tokenizer))


@dataclass
class ConversationTokens:
    """The token lengths of the conversations of one field in a batch. `tokens`: one per measured conversation
    (those that rendered), in record order; `reply_end`, aligned: where the conversation's last assistant turn
    ends, in tokens (REPLY_NONE: it has none; REPLY_UNKNOWN: not located), computed only for conversations over
    the context length (0 elsewhere); `rows`: the measured records' positions in the batch given.
    `train_start`, aligned: where the first trained turn's text starts, in tokens (REPLY_NONE: nothing is
    trained; REPLY_UNKNOWN: not located), computed for the conversations at or over the context length (0
    elsewhere); `heads`: for those, row -> their first context_length token ids (what the trainer keeps)."""

    tokens: np.ndarray
    reply_end: np.ndarray
    rows: np.ndarray
    rendering: str
    render_errors: int = 0
    render_error: str | None = None
    train_start: np.ndarray | None = None
    heads: dict[int, np.ndarray] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.tokens)

    def add_to(self, stat, context_length: int | None) -> None:
        """Into a LengthStats (dataaudit.stats.lengths)."""
        stat.add_conversations(self.tokens, self.reply_end, context_length, self.rendering, self.render_errors,
                               self.render_error)

    def take(self, keep: np.ndarray) -> "ConversationTokens":
        """Only the measured records whose batch row `keep` (bool per batch row) marks."""
        mine = keep[self.rows]
        return replace(self, tokens=self.tokens[mine], reply_end=self.reply_end[mine], rows=self.rows[mine],
                       train_start=None if self.train_start is None else self.train_start[mine])


@dataclass
class Messages:
    """The turns of every record of a batch as a trainer renders them: per turn its role (as the data has it)
    and text, `starts` (records + 1 offsets into the turns), and whether the turn is trained (the assistant's).
    raw: no roles nor template: the texts are concatenated as they are (a string prompt + a string reply)."""

    roles: pa.Array
    text: pa.Array
    starts: np.ndarray
    trained: np.ndarray
    raw: bool = False

    @property
    def records(self) -> int:
        return self.starts.size - 1

    def turn_index(self, last: bool) -> np.ndarray:
        """Per record, the flattened index of its first (or last) trained turn; -1 when none is."""
        out = np.full(self.records, -1, np.int64)
        which = np.flatnonzero(self.trained)
        rows = np.searchsorted(self.starts, which, side="right") - 1
        if last:
            np.maximum.at(out, rows, which)
        else:
            big = np.iinfo(np.int64).max
            tmp = np.full(self.records, big, np.int64)
            np.minimum.at(tmp, rows, which)
            out = np.where(tmp == big, -1, tmp)
        return out


def _error_text(exc: BaseException) -> str:
    from dataaudit.tokenization.chat import TemplateError

    message = " ".join(str(exc).split())
    text = message if isinstance(exc, TemplateError) and message else \
        f"{type(exc).__name__}: {message}" if message else type(exc).__name__
    return text[:ERROR_CHARS]


def _tokens_before(encoding, end_char: int) -> int:
    """The tokens of an encoding that start before character `end_char`: those holding any of the characters
    up to it (a token straddling it counts). From the token of the character before `end_char` (and the tokens
    after it that start at the same character: bytes of one character); by all the offsets when no token holds
    that character (whitespace a pre-tokenizer drops)."""
    if end_char <= 0:
        return 0
    last = encoding.char_to_token(end_char - 1)
    if last is None:
        starts = np.fromiter((s for s, _ in encoding.offsets), dtype=np.int64, count=len(encoding))
        return int(np.count_nonzero(starts < end_char))
    n = len(encoding)
    while last + 1 < n and (span := encoding.token_to_chars(last + 1)) is not None and span[0] < end_char:
        last += 1
    return last + 1


def _offsets(counts: np.ndarray) -> np.ndarray:
    out = np.zeros(counts.size + 1, np.int64)
    np.cumsum(counts, out=out[1:])
    return out


def _ends(lt: LengthTokenizer, tokens: np.ndarray, encodings, located, first: np.ndarray, last: np.ndarray):
    """(reply_end, train_start, heads) of measured records from their encodings: `located(j, turn, at_text)` is the
    token offset where record j's rendering reaches turn `turn` (at_text: the start of its text; else its end),
    or None when it cannot be told."""
    reply_end = np.where(last >= 0, 0, REPLY_NONE).astype(np.int64)
    train_start = np.where(first >= 0, 0, REPLY_NONE).astype(np.int64)
    heads: dict[int, np.ndarray] = {}
    ctx = lt.context_length
    if ctx is None:
        return reply_end, train_start, heads
    for j in np.flatnonzero(tokens >= ctx).tolist():
        heads[j] = np.asarray(encodings[j].ids[:ctx], dtype=np.int64)
        if first[j] >= 0:
            at = located(j, int(first[j]), True)
            train_start[j] = REPLY_UNKNOWN if at is None else at
        if tokens[j] > ctx and last[j] >= 0:
            at = located(j, int(last[j]), False)
            reply_end[j] = REPLY_UNKNOWN if at is None else at
    return reply_end, train_start, heads


def _joined(lt: LengthTokenizer, msgs: Messages) -> ConversationTokens:
    """Without a template: `"<role>: <text>\\n"` per turn (raw: the texts alone), concatenated."""
    n, starts = msgs.records, msgs.starts
    if msgs.raw:
        lines, heads_len = pc.fill_null(msgs.text, ""), np.zeros(len(msgs.text), np.int64)
    else:
        lines = pc.binary_join_element_wise(pc.fill_null(msgs.roles, ""), ": ", pc.fill_null(msgs.text, ""), "\n",
                                            "")
        heads_len = pc.utf8_length(pc.fill_null(msgs.roles, "")).to_numpy(zero_copy_only=False).astype(np.int64) + 2
    joined = pc.binary_join(pa.ListArray.from_arrays(pa.array(starts.astype(np.int32)), lines), "")
    encodings = lt.tokenizer.encode_batch(joined.to_pylist(), add_special_tokens=False)
    tokens = np.fromiter((len(e) for e in encodings), dtype=np.int64, count=n)
    line_end = np.cumsum(pc.utf8_length(lines).to_numpy(zero_copy_only=False).astype(np.int64))
    line_start = np.concatenate([[0], line_end[:-1]]) if line_end.size else line_end
    before = np.concatenate([[0], line_end])[starts[:-1]]       # characters before each record's first turn

    def located(j, turn, at_text):
        chars = (line_start[turn] + heads_len[turn] if at_text else line_end[turn]) - before[j]
        return _tokens_before(encodings[j], int(chars))

    first, last = msgs.turn_index(False), msgs.turn_index(True)
    reply_end, train_start, heads = _ends(lt, tokens, encodings, located, first, last)
    return ConversationTokens(tokens, reply_end, np.arange(n, dtype=np.int64), ROLE_PREFIXED,
                              train_start=train_start, heads=heads)


def _templated(lt: LengthTokenizer, msgs: Messages) -> ConversationTokens:
    """With the chat template: one render per record; where a turn starts or ends from a render of the record's
    turns before it (with the generation prompt) or up to it, a prefix of the whole rendering."""
    starts = msgs.starts
    role_names = [TEMPLATE_ROLES.get(r.lower(), r) if r is not None else "" for r in msgs.roles.to_pylist()]
    messages = [{"role": r, "content": t if t is not None else ""} for r, t in zip(role_names, msgs.text.to_pylist())]
    starts_py = starts.tolist()
    rendered, ok, errors, first_error = [], [], 0, None

    def render(msgs, prompt=False):
        return lt.compiled().render(messages=msgs, add_generation_prompt=prompt, **lt.variables)

    for r in range(msgs.records):
        try:
            rendered.append(render(messages[starts_py[r]:starts_py[r + 1]]))
            ok.append(r)
        except Exception as exc:   # a template error of any kind fails this conversation, never the shard
            errors += 1
            message = _error_text(exc)
            first_error = message if first_error is None else min(first_error, message)
    ok_rows = np.asarray(ok, dtype=np.int64)
    encodings = lt.tokenizer.encode_batch(rendered, add_special_tokens=False) if rendered else []
    tokens = np.fromiter((len(e) for e in encodings), dtype=np.int64, count=len(encodings))

    def located(j, turn, at_text):
        r = ok[j]
        if not at_text and turn == starts_py[r + 1] - 1:
            return int(tokens[j])                     # the last turn ends the rendering
        try:
            prefix = render(messages[starts_py[r]:turn], True) if at_text else \
                render(messages[starts_py[r]:turn + 1])
        except Exception:   # the template refuses the cut conversation: where the turn is is unknown
            return None
        if rendered[j].startswith(prefix):
            return _tokens_before(encodings[j], len(prefix))
        # the template renders a prefix otherwise: the end of a reply is its own tokens; a start is not told
        return None if at_text else len(lt.tokenizer.encode(prefix, add_special_tokens=False))

    first, last = msgs.turn_index(False), msgs.turn_index(True)
    first, last = (first[ok_rows], last[ok_rows]) if ok_rows.size else (np.zeros(0, np.int64),) * 2
    reply_end, train_start, heads = _ends(lt, tokens, encodings, located, first, last)
    return ConversationTokens(tokens, reply_end, ok_rows, CHAT_TEMPLATE, errors, first_error, train_start, heads)


def conversation_messages(batch: pa.RecordBatch, col: Column) -> Messages:
    """The turns of a conversation field as Messages (trained: the assistant's turns and its tool calls)."""
    conv, text, _ = conversation(batch, col)
    trained = pc.fill_null(pc.is_in(pc.utf8_lower(conv.roles), pa.array(TRAINED_ROLES)), False)
    return Messages(conv.roles, text, _offsets(conv.counts), trained.to_numpy(zero_copy_only=False).astype(bool))


def messages_tokens(tokenizer, msgs: Messages) -> ConversationTokens:
    """The token length of every record's rendering (see the module docstring), with `tokenizer` a
    LengthTokenizer (or a bare tokenizers.Tokenizer)."""
    lt = as_length_tokenizer(tokenizer)
    if lt.template is None or msgs.raw:
        return _joined(lt, msgs)
    return _templated(lt, msgs)


def conversation_tokens(tokenizer, batch: pa.RecordBatch, col: Column) -> ConversationTokens:
    """The token length of every record's conversation in `col` (every record of `batch` is measured: give the
    batch of the records wanted), with `tokenizer` a LengthTokenizer (or a bare tokenizers.Tokenizer)."""
    return messages_tokens(tokenizer, conversation_messages(batch, col))


def reasoning_renderer(tokenizer) -> Callable[[Record], str] | None:
    """A tool-use record (dataaudit.tool_turns) rendered as the trainer would with the tokenizer's chat template:
    messages with OpenAI roles, `reasoning_content` (the convention templates that keep traces read) and
    `tool_calls`; None without a template (nothing to compare the traces with)."""
    lt = None if tokenizer is None else as_length_tokenizer(tokenizer)
    if lt is None or lt.template is None:
        return None

    def render(rec: Record) -> str:
        traces: dict[int, list[str]] = {}
        for t, _, text in rec.reasoning:
            traces.setdefault(t, []).append(text)
        calls = {t: c for t, kind, c in rec.steps if kind == "call"}
        messages = []
        for t, (role, text) in enumerate(zip(rec.roles, rec.texts)):
            m = {"role": TEMPLATE_ROLES.get((role or "").lower(), role or ""), "content": text or ""}
            if t in traces:
                m["reasoning_content"] = "\n".join(traces[t])
            if t in calls:
                m["tool_calls"] = [{"type": "function", "function": {"name": c.name or "", "arguments":
                                    c.args if isinstance(c.args, dict) else {}}} for c in calls[t]]
            messages.append(m)
        return lt.compiled().render(messages=messages, add_generation_prompt=False, **lt.variables)

    return render
