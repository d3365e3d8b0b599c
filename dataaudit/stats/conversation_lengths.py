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

The end of the last assistant reply (the last turn whose role is on the assistant's side, fields.ASSISTANT_ROLES,
its end-of-turn markup included) is located only for conversations longer than the context length, the ones
truncation cuts: as a character offset into the rendering (the rendering of the conversation up to that turn
with a template; summed turn lengths without one), turned into tokens with the encoding's character offsets.
Cutting keeps the first context_length tokens (right-side truncation, what training code does when it cuts a
sequence to the context): the reply loses part of itself when it ends past the cut.
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
    the context length (0 elsewhere); `rows`: the measured records' positions in the batch given."""

    tokens: np.ndarray
    reply_end: np.ndarray
    rows: np.ndarray
    rendering: str
    render_errors: int = 0
    render_error: str | None = None

    def __len__(self) -> int:
        return len(self.tokens)

    def add_to(self, stat, context_length: int | None) -> None:
        """Into a LengthStats (dataaudit.stats.lengths)."""
        stat.add_conversations(self.tokens, self.reply_end, context_length, self.rendering, self.render_errors,
                               self.render_error)


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


def _role_prefixed(lt: LengthTokenizer, roles: pa.Array, text: pa.Array, starts: np.ndarray,
                   last: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(tokens, reply_end) of every record: `"<role>: <text>\\n"` per turn, concatenated."""
    n = starts.size - 1
    lines = pc.binary_join_element_wise(pc.fill_null(roles, ""), ": ", pc.fill_null(text, ""), "\n", "")
    joined = pc.binary_join(pa.ListArray.from_arrays(pa.array(starts.astype(np.int32)), lines), "")
    encodings = lt.tokenizer.encode_batch(joined.to_pylist(), add_special_tokens=False)
    tokens = np.fromiter((len(e) for e in encodings), dtype=np.int64, count=n)
    reply_end = np.where(last >= 0, 0, REPLY_NONE).astype(np.int64)
    if lt.context_length is None:
        return tokens, reply_end
    line_end = np.cumsum(pc.utf8_length(lines).to_numpy(zero_copy_only=False).astype(np.int64))
    before = np.concatenate([[0], line_end])[starts[:-1]]       # characters before each record's first turn
    for r in np.flatnonzero((tokens > lt.context_length) & (last >= 0)).tolist():
        reply_end[r] = _tokens_before(encodings[r], int(line_end[last[r]] - before[r]))
    return tokens, reply_end


def _templated(lt: LengthTokenizer, roles: pa.Array, text: pa.Array, starts: np.ndarray,
               last: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, int, str | None]:
    """(tokens, reply_end, rendered records, errors, one error) with the chat template."""
    n = starts.size - 1
    role_names = [TEMPLATE_ROLES.get(r.lower(), r) if r is not None else "" for r in roles.to_pylist()]
    messages = [{"role": r, "content": t if t is not None else ""} for r, t in zip(role_names, text.to_pylist())]
    starts_py, last_py = starts.tolist(), last.tolist()
    rendered, ok, errors, first = [], [], 0, None

    def render(msgs):
        return lt.compiled().render(messages=msgs, add_generation_prompt=False, **lt.variables)

    for r in range(n):
        try:
            rendered.append(render(messages[starts_py[r]:starts_py[r + 1]]))
            ok.append(r)
        except Exception as exc:   # a template error of any kind fails this conversation, never the shard
            errors += 1
            message = _error_text(exc)
            first = message if first is None else min(first, message)
    ok_rows = np.asarray(ok, dtype=np.int64)
    encodings = lt.tokenizer.encode_batch(rendered, add_special_tokens=False) if rendered else []
    tokens = np.fromiter((len(e) for e in encodings), dtype=np.int64, count=len(encodings))
    mine = last[ok_rows] if ok_rows.size else np.zeros(0, np.int64)
    reply_end = np.where(mine >= 0, 0, REPLY_NONE).astype(np.int64)
    if lt.context_length is None:
        return tokens, reply_end, ok_rows, errors, first
    for j in np.flatnonzero((tokens > lt.context_length) & (mine >= 0)).tolist():
        r = ok[j]
        if last_py[r] == starts_py[r + 1] - 1:      # the last reply is the last turn: it ends the rendering
            reply_end[j] = tokens[j]
            continue
        try:
            prefix = render(messages[starts_py[r]:last_py[r] + 1])
        except Exception:   # the template refuses the conversation cut after its reply: where it ends is unknown
            reply_end[j] = REPLY_UNKNOWN
            continue
        if rendered[j].startswith(prefix):
            reply_end[j] = _tokens_before(encodings[j], len(prefix))
        else:   # the template renders a prefix otherwise: its own tokens
            reply_end[j] = len(lt.tokenizer.encode(prefix, add_special_tokens=False))
    return tokens, reply_end, ok_rows, errors, first


def conversation_tokens(tokenizer, batch: pa.RecordBatch, col: Column) -> ConversationTokens:
    """The token length of every record's conversation in `col` (every record of `batch` is measured: give the
    batch of the records wanted), with `tokenizer` a LengthTokenizer (or a bare tokenizers.Tokenizer)."""
    lt = as_length_tokenizer(tokenizer)
    conv, text, _ = conversation(batch, col)
    n = batch.num_rows
    starts = _offsets(conv.counts)
    assistant = pc.fill_null(pc.is_in(pc.utf8_lower(conv.roles), pa.array(ASSISTANT_ROLES)), False)
    last = np.full(n, -1, np.int64)            # the record's last assistant turn, as a flattened turn index
    which = np.flatnonzero(assistant.to_numpy(zero_copy_only=False))
    np.maximum.at(last, conv.rows[which], which)
    if lt.template is None:
        tokens, reply_end = _role_prefixed(lt, conv.roles, text, starts, last)
        return ConversationTokens(tokens, reply_end, np.arange(n, dtype=np.int64), ROLE_PREFIXED)
    tokens, reply_end, rows, errors, first = _templated(lt, conv.roles, text, starts, last)
    return ConversationTokens(tokens, reply_end, rows, CHAT_TEMPLATE, errors, first)


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
