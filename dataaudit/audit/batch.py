"""The stage function: run every planned check over one Arrow batch and return its flags and statistics.

Checks are whole-batch kernels; the only Python loops here are over checks and over the few flagged rows
whose detail strings are formatted.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dataaudit.audit.plan import FieldPlan
from dataaudit.fields import DTYPE_SUFFIX, SHAPE_SUFFIX
from dataaudit.checks.base import CheckSpec, FieldDetail, Target, TextAndTokens
from dataaudit.checks import REGISTRY, CheckOutput
from dataaudit.checks.text_common import char_lengths
from dataaudit.config import AuditConfig
from dataaudit.images.batch import ImageBatch, Limits
from dataaudit.images.media import media_folder
from dataaudit.images.pairs import Pairs
from dataaudit.pairs import KtoBatch, PairBatch, RankBatch, joined_views
from dataaudit.pairs import joined as joined_conversation
from dataaudit.provenance import ERROR, KEY, LINE, ROW
from dataaudit.stats.conversation_lengths import as_length_tokenizer, reasoning_renderer
from dataaudit.stats.reasoning_lengths import reasoning_lengths
from dataaudit.stats.rendered_records import RenderedBatch, flat_fields, render_batch
from dataaudit.stats.token_lengths import token_lengths
from dataaudit.tensors import NumericField, TrainedTokens, from_arrow, tokens_from_arrow, with_shapes
from dataaudit.tool_turns import tool_use
from dataaudit.texts import Segments, call_arguments, conversation, record_text, segments, split_json_turns

FLAG_SCHEMA = pa.schema([
    ("shard", pa.string()), ("key", pa.string()), ("row", pa.int64()), ("line", pa.int64()), ("field", pa.string()),
    ("role", pa.string()), ("check", pa.string()), ("severity", pa.string()), ("value", pa.float64()),
    ("detail", pa.string()),
    # where in the flagged field's text (the turn, for a conversation) the finding is: character offsets [start, end)
    # for checks that locate theirs (CheckSpec.locate), null otherwise
    ("start", pa.int64()), ("end", pa.int64()),
])
SNIPPET_CHARS = 300
SPAN_BEFORE = 60    # characters kept before a located span that lies past the snippet's first window
MASK_MARGIN = 8192  # masking checks look this far around a snippet (a value they mask, a PEM block, is shorter)


@dataclass
class BatchResult:
    flags: pa.Table
    flagged_rows: np.ndarray                      # bool per row: at least one flag
    lengths: dict[str, np.ndarray] = field(default_factory=dict)   # stats key -> lengths of usable rows
    examples: dict[str, list[dict]] = field(default_factory=dict)
    images: ImageBatch | None = None                                # the batch's probed images, if any
    rendered: RenderedBatch | None = None      # the records rendered with the tokenizer (with one configured)
    media: Any = None                          # the batch's probed video and audio (dataaudit.media.MediaBatch)


def _to_numpy(x) -> np.ndarray:
    torch = sys.modules.get("torch")   # a tensor exists only once torch is loaded (a text audit never loads it)
    if torch is not None and isinstance(x, torch.Tensor):
        return x.detach().cpu().numpy()
    if isinstance(x, (pa.Array, pa.ChunkedArray)):
        return x.to_numpy(zero_copy_only=False)
    return np.asarray(x)


def _listed(batch: pa.RecordBatch, name: str | None) -> bool:
    """Whether a column's values are lists (a detail then names the element: `x[17]`)."""
    if name not in batch.schema.names:
        return False
    t = batch.schema.field(name).type
    return pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t)


def _details(spec: CheckSpec, out: CheckOutput, idx: np.ndarray, values: np.ndarray, params: dict,
             batch: pa.RecordBatch, paths: list, arg) -> list[str]:
    if spec.explain is not None:   # names the offending element of the flagged field and its value
        detail: FieldDetail = spec.explain(arg, values, **{**spec.params, **params})
        return [detail.text(i, p, _listed(batch, p)) for i, p in zip(idx.tolist(), paths)]
    if out.detail is not None:
        detail = out.detail
        if isinstance(detail, (pa.Array, pa.ChunkedArray)):
            return detail.take(pa.array(idx)).to_pylist()
        return [spec.detail.format(value=values[i], **params) if detail[i] is None else str(detail[i]) for i in idx]
    return [spec.detail.format(value=values[i], **params) for i in idx]


def flag_table(batch: pa.RecordBatch, rows: np.ndarray, shard: str, paths: list, roles: list, check: str,
               severity: str, values: np.ndarray, details: list, spans: list | None = None) -> pa.Table:
    """flags.parquet rows for the batch rows `rows` flagged by one check (one per flagged field or turn); `spans`:
    each flag's (start, end) in its text, or None."""
    take = pa.array(rows, pa.int64())
    n = rows.size
    spans = spans or [None] * n
    return pa.table({
        "shard": pa.repeat(pa.scalar(shard, pa.string()), n),
        "key": batch.column(KEY).take(take), "row": batch.column(ROW).take(take), "line": batch.column(LINE).take(take),
        "field": pa.array(paths, pa.string()), "role": pa.array(roles, pa.string()),
        "check": pa.repeat(pa.scalar(check, pa.string()), n),
        "severity": pa.repeat(pa.scalar(severity, pa.string()), n),
        "value": pa.array(np.asarray(values, dtype=np.float64)), "detail": pa.array(details, pa.string()),
        "start": pa.array([s and s[0] for s in spans], pa.int64()),
        "end": pa.array([s and s[1] for s in spans], pa.int64()),
    }, schema=FLAG_SCHEMA)


def locate(spec: CheckSpec, kind: str, params: dict, text: str | None) -> tuple[int, int] | None:
    """Where in `text` what `spec` flagged is ((start, end) character offsets), for checks that locate theirs;
    None when it has no place, or `locate` fails or answers outside the text (a span is a nicety, never a failure)."""
    if text is None or spec.locate is None or kind not in ("text", "json"):
        return None
    try:
        where = spec.locate(text, **params)
    except Exception:  # noqa: BLE001 - no span rather than a failed shard
        return None
    if not where or not 0 <= where[0] < where[1] <= len(text):
        return None
    return int(where[0]), int(where[1])


def _numeric(batch: pa.RecordBatch, column: str, device) -> NumericField:
    dtype_col = column + DTYPE_SUFFIX
    dtypes = batch.column(dtype_col) if dtype_col in batch.schema.names else None
    return from_arrow(batch.column(column), dtypes=dtypes, device=device)


@dataclass
class Site:
    """Where the samples a check saw are in the batch: one per record (a field), text segments, or images.
    `images`: the batch's probed images (for thumbnails: of the image itself, or of a record's first image)."""

    name: str | None
    segments: Segments | ImageBatch | None = None
    images: ImageBatch | None = None
    whole_where: bool = False   # `where` is a whole path (a pair's side seen with its prompt), else a suffix

    def rows(self, idx: np.ndarray) -> np.ndarray:
        return idx if self.segments is None else self.segments.rows[idx]

    def paths(self, idx: np.ndarray, out: CheckOutput) -> list:
        if self.segments is not None:
            return self.segments.paths(idx)
        if out.where is None:
            return [self.name] * idx.size
        if self.whole_where:
            return [out.where[i] or self.name for i in idx.tolist()]
        return [self.name + (out.where[i] or "") for i in idx.tolist()]

    def roles(self, idx: np.ndarray) -> list:
        if not isinstance(self.segments, Segments):
            return [None] * idx.size
        return self.segments.roles.take(pa.array(idx)).to_pylist()

    def texts(self, idx: np.ndarray) -> list | None:
        if not isinstance(self.segments, Segments):
            return None
        return self.segments.values.take(pa.array(idx)).to_pylist()

    def thumbnails(self, idx: np.ndarray) -> list | None:
        """The flagged images (an image check), or each flagged record's first image, as small data URIs."""
        if self.images is None:
            return None
        if self.segments is self.images:
            return self.images.thumbnails(idx.tolist())
        first = np.full(int(self.images.rows.max(initial=-1)) + 1, -1, np.int64)
        first[self.images.rows[::-1]] = np.arange(len(self.images))[::-1]
        which = [int(first[r]) if r < first.size else -1 for r in idx.tolist()]
        thumbs = self.images.thumbnails([w for w in which if w >= 0])
        it = iter(thumbs)
        return [next(it) if w >= 0 else None for w in which]


@dataclass
class BatchTexts:
    """The batch's text segments (prose and JSON) and, per record, its first prose segment (for snippets)."""

    prose: Segments
    json: Segments
    first: np.ndarray
    sides: dict[str, Segments] = field(default_factory=dict)   # the prose of each side, once a check asks
    rendered: Any = None      # the records rendered with the tokenizer (RenderedBatch), shared by checks and lengths

    def render(self, batch: pa.RecordBatch, plan: FieldPlan, tokenizer) -> RenderedBatch:
        if self.rendered is None:
            self.rendered = render_batch(batch, plan, as_length_tokenizer(tokenizer))
        return self.rendered

    @classmethod
    def of(cls, batch: pa.RecordBatch, plan: FieldPlan) -> "BatchTexts":
        prose, json_turns = split_json_turns(segments(batch, plan.text))
        # JSON columns, function-call and observation turns, and the arguments of tool calls
        json = Segments.concat([segments(batch, plan.json), json_turns, call_arguments(batch, plan.text)])
        first = np.full(batch.num_rows, -1, np.int64)
        order = np.arange(len(prose))[::-1]
        first[prose.rows[order]] = order
        return cls(prose, json, first)

    def snippets(self, rows: np.ndarray) -> list:
        seg = self.first[rows]
        texts = self.prose.values.take(pa.array(np.maximum(seg, 0))).to_pylist() if len(self.prose) else []
        return [texts[j] if seg[j] >= 0 else None for j in range(rows.size)]


def _text_site(texts: BatchTexts, turns: str | None) -> Site:
    """The prose segments a text check sees: all, or one side of the conversations (split once per batch)."""
    if turns is None:
        return Site(None, texts.prose)
    if turns not in texts.sides and turns != "trained":
        assistant = texts.prose.assistant()
        empty = texts.prose.take(np.zeros(0, np.int64))
        if not assistant.any():                 # no conversation (a flat text column): no copy of every text
            texts.sides["assistant"], texts.sides["other"] = empty, texts.prose
        elif assistant.all():
            texts.sides["assistant"], texts.sides["other"] = texts.prose, empty
        else:
            texts.sides["assistant"] = texts.prose.take(np.flatnonzero(assistant))
            texts.sides["other"] = texts.prose.take(np.flatnonzero(~assistant))
    if turns == "trained" and turns not in texts.sides:
        outside = _to_numpy(pc.is_null(texts.prose.roles)).astype(bool) if len(texts.prose) else np.zeros(0, bool)
        keep = texts.prose.assistant() | outside
        texts.sides[turns] = texts.prose if keep.all() else texts.prose.take(np.flatnonzero(keep))
    return Site(None, texts.sides[turns])


def _fields(batch: pa.RecordBatch, plan: FieldPlan, texts: BatchTexts, device, shard: str, config: AuditConfig,
            images: list, tokenizer=None):
    """(target kind, site, argument) for every field of the batch, in the order the checks visit them:
    reader findings, text, JSON, conversations, ids, images, image-text pairs, numeric columns, image tensor, label,
    tokens, token ids, trained tokens (labels, train mask), text with its token ids. A text target's site is None:
    each check's site depends on the turns it sees. The images are probed once (appended to `images`, for the
    shard's image statistics)."""
    yield "reader", Site(None), batch
    if plan.text:
        yield "text", None, None
    if len(texts.json):
        yield "json", Site(None, texts.json), texts.json.values
    pairs = plan.pairs if plan.pairs is not None and plan.pairs.layout not in ("kto", "ranked") else None
    # A pair's prompt and sides are seen together (prompt + chosen, prompt + rejected), as the trainer renders them.
    alone, joined = joined_views(plan.pairs) if plan.pairs is not None else (set(), [])
    for col in plan.text:
        if col.kind == "conversation" and col.name not in alone:
            yield "conversation", Site(col.name), conversation(batch, col)[0]
    for prompt, side in joined:
        yield "conversation", Site(side.name, whole_where=True), joined_conversation(batch, prompt, side)
    if pairs is not None:
        yield "pair", Site(""), PairBatch.of(batch, pairs)
    elif plan.pairs is not None and plan.pairs.layout == "ranked":
        yield "ranked", Site(""), RankBatch.of(batch, plan.pairs)
    elif plan.pairs is not None:
        yield "kto", Site(plan.pairs.label), KtoBatch.of(batch, plan.pairs)
    for col in plan.text:
        # its checks name the full path (the tools field too); a one-turn struct (a pair's side) holds no turn list
        if col.kind == "conversation" and not col.single:
            yield "tool_use", Site(""), tool_use(batch, col, plan.tools, reasoning_renderer(tokenizer))
    if tokenizer is not None:
        yield "rendered", Site(""), texts.render(batch, plan, tokenizer)
        if pairs is not None:
            yield "rendered_pair", Site(""), texts.render(batch, plan, tokenizer)
    if plan.id is not None:
        yield "ids", Site(plan.id), batch.column(plan.id)
    if plan.images:
        probed = ImageBatch.of(batch, plan.images, media_folder(shard, config.data), Limits.from_data(config.data))
        images.append(probed)
        yield "image", Site(None, probed, probed), probed
        yield "pairs", Site("", None, probed), Pairs.of(batch, plan.text, probed)
    if plan.media:   # PyAV is imported only for data that has video or audio
        from dataaudit.media.batch import MediaBatch
        from dataaudit.media.pairs import MediaPairs
        from dataaudit.media.probe import MediaLimits

        mb = MediaBatch.of(batch, plan.media, media_folder(shard, config.data), MediaLimits.from_data(config.data))
        images.append(mb)
        yield "media", Site(None, mb, mb), mb
        yield "media_pairs", Site(""), MediaPairs.of(batch, plan.text, mb)
    for column in plan.numeric:
        yield "numeric", Site(column), _numeric(batch, column, device)
    if plan.image_tensor is not None:  # its [C, H, W]: the `.shape` column beside it (the rule requires one)
        image, shapes = _numeric(batch, plan.image_tensor, device), batch.column(plan.image_tensor + SHAPE_SUFFIX)
        yield "image_tensor", Site(plan.image_tensor), with_shapes(image, shapes, 3)
    if plan.label is not None:
        yield "label", Site(plan.label), _numeric(batch, plan.label, device)
    if plan.input_ids is not None:
        mask = batch.column(plan.attention_mask) if plan.attention_mask else None
        tf = tokens_from_arrow(batch.column(plan.input_ids), mask, device)
        yield "tokens", Site(plan.input_ids), tf
        yield "token_ids", Site(plan.input_ids), tf.ids
        for name, labels in ((plan.token_labels, True), (plan.train_mask, False)):
            if name is not None:   # what the loss trains: flags name the labels / mask field
                yield "trained", Site(name), TrainedTokens(tf, _numeric(batch, name, device), labels)
        if plan.primary_text is not None:
            yield "text_tokens", Site(plan.input_ids), TextAndTokens(batch, plan.primary_text, plan.input_ids,
                                                                      plan.attention_mask, shard)


def _planned_calls(batch: pa.RecordBatch, plan: FieldPlan, config: AuditConfig, texts: BatchTexts, device,
                   shard: str, images: list, tokenizer=None):
    """(check, target kind, site, first argument, params) for every check that runs on this batch."""
    on: dict[str, list[tuple[CheckSpec, Target]]] = {}
    for name, spec in REGISTRY.items():
        if name not in plan.skipped:
            for target in spec.targets:
                on.setdefault(target.kind, []).append((spec, target))
    reply = flat_fields(plan)[1]   # a flat record's reply (Alpaca's `output`) is a reply, as a conversation's
    for kind, site, arg in _fields(batch, plan, texts, device, shard, config, images, tokenizer):
        for spec, target in on.get(kind, ()):
            params = spec.params_for(target, config.check(spec.name).params)
            if kind == "ids":   # ids are compared under the same column name only (checks.record_ids)
                params = {**params, "column": site.name}
            # A target whose parameters are incomplete is left out; the check runs on its other targets.
            if spec.missing(params, target):
                continue
            if kind == "text":
                site = _text_site(texts, spec.turns)
                if spec.split_turns:
                    yield from ((spec, kind, part, part.segments.values, {**params, "in_conversation": inside})
                                for part, inside in _split_turns(site, reply) if len(part.segments))
                    continue
                arg = site.segments.values
            yield spec, kind, site, arg, params


def _split_turns(site: Site, reply=None) -> list[tuple[Site, bool]]:
    """A text site as (its segments outside conversations, False) and (its conversation turns and the values of a
    flat record's `reply` field, True)."""
    segs = site.segments
    inside = _to_numpy(pc.is_valid(segs.roles)).astype(bool) if len(segs) else np.zeros(0, bool)
    if reply is not None and len(segs):
        at = [i for i, c in enumerate(segs.fields) if c.name == reply.name]
        if at:
            inside |= segs.field == at[0]
    if inside.all() or not inside.any():
        return [(site, bool(inside.any()))]
    return [(Site(None, segs.take(np.flatnonzero(~inside))), False),
            (Site(None, segs.take(np.flatnonzero(inside))), True)]


def _mask_spans(spec: CheckSpec, params: dict, text: str) -> list[tuple[int, int]]:
    """The spans of `text` a masking check says must not be shown (CheckSpec.masks)."""
    if callable(spec.masks):
        return list(spec.masks(text, **params))
    where = spec.locate(text, **params)
    return [where] if where else []


def _masked(snippet: str, begin: int, spans: list[tuple[int, int]]) -> str:
    """`snippet` (the text from `begin` on) with the characters of every span of the text but line breaks replaced
    by `*` (the length kept: a highlighted span stays where it was)."""
    chars = list(snippet)
    for start, end in spans:
        for k in range(max(0, start - begin), min(end - begin, len(chars))):
            if chars[k] != "\n":
                chars[k] = "*"
    return "".join(chars)


def _snippet(spec: CheckSpec, kind: str, params: dict, text: str | None,
             maskers: tuple[tuple[CheckSpec, dict], ...] = ()) -> dict:
    """An example's `snippet`: the text's first SNIPPET_CHARS characters, or, where the check locates what it flagged
    (a text or JSON check with a `locate`) past them, a window as long starting SPAN_BEFORE characters before it
    (`snippet_start`: where in the text). `span`: [start, end] of that place within the snippet, when known.
    `maskers`: the (check, params) of every masking check that runs (CheckSpec.masks): what each finds in the text is
    masked in the snippet, whichever check the example is of (a secret in a text another check flags is not shown
    either); where one cannot say, the snippet is left out (null)."""
    if text is None:
        return {"snippet": None}
    where = locate(spec, kind, params, text)
    if where is None:
        begin, out = 0, {}
    else:
        start, end = where
        begin = 0 if end <= SNIPPET_CHARS else max(0, start - SPAN_BEFORE)
        out = {"span": [start - begin, min(end, begin + SNIPPET_CHARS) - begin]}
    snippet = text[begin:begin + SNIPPET_CHARS]
    # the maskers read the snippet with a margin around it (never the whole of a long text)
    lo = max(0, begin - MASK_MARGIN)
    around = text[lo:begin + SNIPPET_CHARS + MASK_MARGIN]
    spans: list[tuple[int, int]] = []
    for masker, masker_params in maskers:
        try:
            spans += [(a + lo, b + lo) for a, b in _mask_spans(masker, masker_params, around)]
        except Exception:  # noqa: BLE001 - nothing shown rather than something that should not be
            return {"snippet": None}
    out = {"snippet": _masked(snippet, begin, spans) if spans else snippet, **out}
    if begin:
        out["snippet_start"] = begin
    return out


def _run(spec: CheckSpec, arg, params: dict, states: dict, merges: list) -> CheckOutput:
    """One call; a stateful check gets its shard state, and its part from this batch is put in `merges` (merged
    into the state when the whole batch has been checked: a batch that fails part way leaves no trace)."""
    if spec.state is None:
        return spec.fn(arg, **params)
    state = states.get(spec.name)
    if state is None:   # a caller that keeps no shard state: this batch's alone
        state = states[spec.name] = spec.state.start()
    out = spec.fn(arg, state, **params)
    merges.append((spec, state, out.state))
    return out


def audit_batch(batch: pa.RecordBatch, plan: FieldPlan, config: AuditConfig, shard: str,
                tokenizer=None, device=None, examples_per_check: int | Callable[[str], int] = 5,
                states: dict[str, Any] | None = None) -> BatchResult:
    """Every planned check on one batch. `states`: the shard's state of each stateful check (updated in place when
    every check has run: a batch that raises changes no state, so its records can be checked again). Each stateful
    check runs at most once per batch (one id field, one text with token ids). `examples_per_check`: how many
    examples to build for a check, or a function of its name (the shard's: those it still lacks; an example's
    snippet runs the masking checks on its text, so none is built that would be dropped)."""
    n = batch.num_rows
    # A record the reader could not decode has no data to check: only its reader error is reported.
    usable = ~_to_numpy(pc.is_valid(batch.column(ERROR)))
    flagged_rows = np.zeros(n, dtype=bool)
    tables, examples = [], {}
    keys, rows_col, lines = batch.column(KEY), batch.column(ROW), batch.column(LINE)
    texts = BatchTexts.of(batch, plan)
    states = {} if states is None else states
    images: list[ImageBatch] = []
    merges: list = []
    maskers = tuple((spec, spec.params_for(spec.targets[0], config.check(spec.name).params))
                    for spec in REGISTRY.values() if spec.masks and spec.name not in plan.skipped
                    and config.check(spec.name).enabled)
    for spec, kind, site, arg, params in _planned_calls(batch, plan, config, texts, device, shard, images, tokenizer):
        name = spec.name
        out = _run(spec, arg, params, states, merges)
        flagged = _to_numpy(out.flagged).astype(bool, copy=False)
        idx = np.flatnonzero(flagged)
        rows = site.rows(idx)
        if kind != "reader":
            keep = usable[rows]
            idx, rows = idx[keep], rows[keep]
        if idx.size == 0:
            continue
        flagged_rows[rows] = True
        values = _to_numpy(out.value).astype(np.float64, copy=False)
        paths = site.paths(idx, out)
        details = _details(spec, out, idx, values, params, batch, paths, arg)
        # a conversation check names the role of the turn it flags; text segments carry their own
        roles = site.roles(idx) if out.role is None else [out.role[i] for i in idx.tolist()]
        # the located place of every flag (per flagged text only; the checks found them vectorized)
        spans = None
        if spec.locate is not None and kind in ("text", "json"):
            spans = [out.span[i] for i in idx.tolist()] if out.span is not None else \
                [locate(spec, kind, params, t) for t in arg.take(pa.array(idx)).to_pylist()]
        tables.append(flag_table(batch, rows, shard, paths, roles, name, config.check(name).severity,
                                 values[idx], details, spans))
        if spec.state is not None and not spec.state.examples:
            continue   # its report section shows its own examples
        wanted = examples_per_check(name) if callable(examples_per_check) else examples_per_check
        if wanted <= 0:
            continue
        first = slice(0, wanted)
        # a numeric finding shows its value (the detail), not the record's text
        snippets = [None] * idx[first].size if kind == "numeric" else \
            site.texts(idx[first]) or texts.snippets(rows[first])
        thumbs = site.thumbnails(idx[first] if site.segments is not None else rows[first])
        # One list per check and batch: a check on several fields keeps the last flagged field's examples.
        examples[name] = [
            {"shard": shard, "key": keys[r].as_py(), "row": rows_col[r].as_py(), "line": lines[r].as_py(),
             "field": paths[j],
             "value": float(values[i]), "detail": details[j],
             **_snippet(spec, kind, params, s, maskers),
             **({} if thumbs is None else {"thumbnail": thumbs[j]})}
            for j, (i, r, s) in enumerate(zip(idx[first].tolist(), rows[first].tolist(), snippets))
        ]
    flags = pa.concat_tables(tables) if tables else FLAG_SCHEMA.empty_table()
    probed = [p for p in images if isinstance(p, ImageBatch)]
    media = [p for p in images if not isinstance(p, ImageBatch)]
    result = BatchResult(flags, flagged_rows, _lengths(batch, plan, texts, usable, tokenizer), examples,
                         probed[0] if probed else None, texts.rendered, media[0] if media else None)
    for spec, state, part in merges:
        spec.state.merge(state, part)
    return result


def _lengths(batch, plan: FieldPlan, texts: BatchTexts, usable: np.ndarray, tokenizer) -> dict[str, np.ndarray]:
    """Per text field, the characters of each usable record that has it (a conversation: all its turns); with
    `tokenizer`, the tokens of each record as the trainer renders it (a ConversationTokens per view, see
    dataaudit.stats.rendered_records), and of each flat text field no view covers; per token-ids field, the
    tokens the model sees."""
    out: dict[str, Any] = {}
    segs = texts.prose
    seg_chars = char_lengths(segs.values) if len(segs) else np.zeros(0, np.int64)   # measured once (empty_text)
    has_value = _to_numpy(pc.is_valid(segs.values)).astype(bool) if len(segs) else np.zeros(0, bool)
    present_in: dict[str, np.ndarray] = {}
    for f, col in enumerate(plan.text):
        mine = (segs.field == f) & has_value
        present = np.zeros(batch.num_rows, bool)
        present[segs.rows[mine]] = True
        present &= usable
        present_in[col.name] = present
        chars = np.bincount(segs.rows[mine], weights=seg_chars[mine], minlength=batch.num_rows)
        out[col.name] = chars[present].astype(np.int64)
        if col.kind == "conversation":
            lt = None if tokenizer is None else as_length_tokenizer(tokenizer).tokenizer
            out.update(reasoning_lengths(batch, col, segs, mine, usable, lt))
    if tokenizer is not None:
        rendered = texts.render(batch, plan, tokenizer)
        covered = set()
        for view in rendered.views:
            out[view.key + ".tokens"] = view.tokens.take(usable & view.has_turns)
            covered.update(view.columns)
        for col in plan.text:
            if col.name in covered or col.kind == "conversation":
                continue
            rows = np.flatnonzero(present_in[col.name])
            one = record_text(batch.take(pa.array(rows, pa.int64())), (col,)) if rows.size else \
                pa.array([], pa.string())
            out[col.name + ".tokens"] = token_lengths(as_length_tokenizer(tokenizer).tokenizer, one)
    if plan.input_ids is not None:
        keep = pa.array(usable)
        ids = batch.column(plan.input_ids).filter(keep)
        if plan.attention_mask is not None:
            # Real tokens are those the mask marks, which is what the model sees.
            mask = batch.column(plan.attention_mask).filter(keep)
            parents = _to_numpy(pc.list_parent_indices(mask))
            weights = _to_numpy(pc.list_flatten(mask)).astype(np.float64)
            out[plan.input_ids] = np.bincount(parents, weights=weights, minlength=len(mask)).astype(np.int64)
        else:
            out[plan.input_ids] = _to_numpy(pc.fill_null(pc.list_value_length(ids), 0))
    return out
