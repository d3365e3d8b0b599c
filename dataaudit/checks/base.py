"""The check registry: every validator is defined once here and run by the audit (Arrow, CPU) and the guard
(torch, any device).

A check is a pure function over a whole batch of samples. It returns one flag and one measured value per
sample; it never loops over samples in Python and never reads a tensor back to the host.

Its registry entry (CheckSpec) carries everything a runner needs, so that no runner names a check: the targets
it runs on, its parameters and which `[data]` settings fill them, what must be set before it can run, its own
`[data]` validation, and for a check that keeps state over a shard, that state and its report section.

Targets (what the function receives, always as its first argument):
  "text"         pa.Array of strings (nulls allowed): every text the model trains on, flattened over text
                 fields, list elements and conversation turns (dataaudit.texts; JSON turns aside)  -> numpy arrays
  "json"         pa.Array of strings that should each be one JSON document (JSON columns, function-call and
                 observation turns)                                   -> numpy arrays
  "conversation" dataaudit.texts.Conversation (turns of one conversation field, roles, counts per record)
  "tool_use"     dataaudit.tool_turns.ToolUse (tool calls, results, reasoning parts and declared tools of one
                 conversation field; only its tool-use records)
  "ids"          pa.Array of the record id column (audit only)
  "image"        dataaudit.images.ImageBatch: every image of the batch, probed once (audit only)
  "pairs"        dataaudit.images.Pairs: per record, its images and its caption or conversation (audit only)
  "media"        dataaudit.media.MediaBatch: every video and audio file of the batch, probed once (audit only)
  "media_pairs"  dataaudit.media.MediaPairs: per record, its media files, placeholders and transcript (audit only)
  "numeric"      NumericField (any numeric field)                    -> torch tensors on the field's device
  "label"        NumericField of class labels                        -> torch tensors
  "tokens"       TokenFields (token ids + optional attention mask)   -> torch tensors
  "token_ids"    NumericField of the token ids alone                 -> torch tensors
  "trained"      TrainedTokens: token ids (+ attention mask) and, per token, its label or train-mask value (what
                 the loss trains; one per labels / train-mask field)   -> torch tensors
  "image_tensor" NumericField of decoded image tensors ([C, H, W] per sample) -> torch tensors
  "text_tokens"  TextAndTokens: a record batch with both a text field and token ids (audit only)
  "reader"       the record batch itself, for the reader's findings (audit only; sees undecodable records too)
  "pair"         dataaudit.pairs.PairBatch: both sides of every preference pair (audit only)
  "kto"          dataaudit.pairs.KtoBatch: the label column of KTO records, with each record's prompt and reply
                 (audit only)
  "ranked"       dataaudit.pairs.RankBatch: the responses of reward data with ranked responses and their scores
                 or ranks (audit only)
  "rendered"     dataaudit.stats.rendered_records.RenderedBatch: every record rendered as the trainer does and
                 tokenized, with where its trained tokens start (audit only, with `[data] tokenizer`)
  "rendered_pair" the same, yielded for preference pairs only (both sides rendered with their prompt)
  "samples"      the list of samples a dataset yielded for one batch, before collation (guard only: the collate
                 guard; a sample may be None)
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

SEVERITIES = ("info", "warning", "error")
# Keys of a shard summary and of report.json: a stateful check's name must not be one of them.
SUMMARY_KEYS = frozenset(("path", "records", "flagged", "status", "error", "checks", "lengths", "examples", "fields",
                          "skipped", "problems", "schema_version", "totals", "shards", "notes", "config", "run",
                          "images", "media", "formats", "unchecked", "fingerprint", "trained_example"))
TARGET_KINDS = ("text", "json", "conversation", "tool_use", "ids", "image", "pairs", "media", "media_pairs", "numeric", "label", "tokens",
                "token_ids", "trained", "image_tensor", "text_tokens", "reader", "samples", "pair", "kto", "ranked",
                "rendered", "rendered_pair")
# Which text segments a text check sees: all, the assistant's turns, all others (flat text included), or what is
# trained (the assistant's turns and flat text: a conversation's prompt turns are not).
TURNS = (None, "assistant", "other", "trained")


class SettingError(ValueError):
    """A `[data]` setting a check cannot use (the config adds the file's name to the message)."""


@dataclass
class CheckOutput:
    """Per-sample result of one check over one batch.

    flagged: bool, shape [num_samples]; value: float64, shape [num_samples] (the measured quantity shown in
    reports). detail: optional per-sample strings (only read for flagged samples); when None the report uses the check's `detail` format string with `value` and the check's params. state: a stateful check's part of
    its shard state from this batch (folded in with its ShardState.merge). where: optional per-sample suffix of
    the field path (a conversation check names the turn: "[3].role"). role: optional per-sample role of the turn
    `where` names (flags.parquet's `role`; None: no turn). span: optional per-sample (start, end) of what was flagged,
    exactly what the check's `locate` gives for the sample's text (a check that found it on the way; None: the
    audit runs `locate` on each flagged text).
    """

    flagged: Any
    value: Any
    detail: Any = None
    state: Any = None
    where: Any = None
    role: Any = None
    span: Any = None


class FieldDetail:
    """Per-sample details that name where in the field the offending value is and show it ("embedding[17] = nan",
    "loss_weight = 1e+38 > 1e+06"), formatted only for the samples a report shows. A check's `explain` builds
    one; the audit knows the field's name and whether its values are lists, the check does not."""

    def text(self, i: int, field: str, listed: bool) -> str:
        """Sample i's detail; `field`: the flagged field's name, `listed`: its values are lists (name the element)."""
        raise NotImplementedError


@dataclass
class TextAndTokens:
    """The "text_tokens" target: a batch holding both a text field and the token ids stored for it."""

    batch: Any                  # pa.RecordBatch (with the reader's provenance columns)
    text: str
    input_ids: str
    attention_mask: str | None = None
    shard: str = ""


@dataclass(frozen=True)
class Target:
    """One kind of field a check runs on, with the parameters fixed on that kind (they win over the config's):
    dtype_mismatch runs on labels and token ids with expected="int" whatever [data] numeric_dtype says. `required`:
    params this target needs beyond the check's own (no_trainable_tokens needs a tokenizer and a context length
    on rendered records only)."""

    kind: str
    params: Mapping[str, Any] = field(default_factory=dict)
    required: tuple[str | tuple[str, ...], ...] = ()


def _no_notes(section: dict) -> list[str]:
    return []


@dataclass(frozen=True)
class ShardState:
    """What a check that keeps state over a shard gives the audit's runners.

    The check function then takes the shard's state after its field: `fn(arg, state, **params)`, and returns its
    part from the batch as CheckOutput.state. The state is JSON-able: it travels in the shard's summary.
      start()                          a fresh state (for a shard where the check is configured)
      merge(into, part) -> into        folds a batch's part into the shard's state, and one shard's into the total
      section(total, shards, settings, data) -> dict | None
                                       report.json's section named after the check (None: no section), from the
                                       merged total and the (path, state or None) of every shard
      notes(section) -> [str]          lines for report.json's `notes`
      examples                         whether report.json's `examples` also lists its flagged records (its
                                       section usually shows its own)
    """

    start: Callable[[], Any]
    merge: Callable[[Any, Any], Any]
    section: Callable[..., dict | None]
    notes: Callable[[dict], list[str]] = _no_notes
    examples: bool = False


@dataclass(frozen=True)
class CheckSpec:
    name: str
    targets: tuple[Target, ...]
    severity: str
    params: dict[str, Any]
    fn: Callable[..., CheckOutput]
    detail: str
    description: str
    # Params that must be set (by the config) before the check can run, e.g. vocab_size; a tuple of names is
    # "one of these" (out_of_range needs min or max).
    required: tuple[str | tuple[str, ...], ...] = ()
    # [data] key -> the param it fills (num_classes -> num_classes, numeric_dtype -> expected).
    data: Mapping[str, str] = field(default_factory=dict)
    # Validates and resolves the [data] keys this check owns, in place (paths against the config's folder,
    # defaults): resolve_data(data, config_folder or None); raises SettingError.
    resolve_data: Callable[[dict, Path | None], None] | None = None
    state: ShardState | None = None
    # The training guard: its position among the default checks (None: run only when asked for), and the order
    # of checks on one field (lower first: those computing a reduction the others reuse).
    guard_default: int | None = None
    guard_rank: int = 9
    # Text checks: "assistant" sees only the assistant's turns, "other" every text but those, "trained" the
    # assistant's turns and text outside conversations (None: all).
    turns: str | None = None
    # The guard runs a check on its first target only, unless this is set: then on every target it has.
    guard_all_targets: bool = False
    # explain(arg, value, **params) -> FieldDetail: the report's details, built by the audit only for a batch the
    # check flagged (the guard never pays for it); None: the `detail` format string.
    explain: Callable[..., FieldDetail] | None = None
    # A text check called apart on the text outside conversations and on conversation turns, with the param
    # `in_conversation` False / True (a chat reply is not a web document: some statistics do not fit it).
    split_turns: bool = False
    # locate(text, **params) -> (start, end) | None: where in one flagged text (a text or JSON check's sample) the
    # first thing the check flagged is, for the report's highlighted span. Run by the audit on the few examples
    # it keeps per check only (plain Python, never over a batch); None: the check has no place (empty text).
    locate: Callable[..., tuple[int, int] | None] | None = None
    # What the check finds must never be printed (personal data, secrets): the audit masks it in every example
    # snippet of the flagged text (with `*`, the length kept so a highlighted span stays in place). True: the span
    # `locate` finds; a callable masks(text, **params) -> [(start, end)]: every span it returns. A text check whose
    # values must not show writes masked values in its own `detail` (flags.parquet, report.json, the page).
    masks: bool | Callable[..., list[tuple[int, int]]] = False
    # An optional module the check imports (its extra, dataaudit.extras.EXTRAS): without it the check is skipped,
    # its reason naming the extra to install.
    needs: str | None = None
    # False: the check runs only when a profile (`--profile`) or the config's [checks.NAME] enabled = true turns it
    # on (the pretraining quality rules: made for web documents, not chat or instruction data).
    default_enabled: bool = True

    @property
    def target(self) -> str:
        """The first target's kind: the one the guard runs the check on and a skip reason names."""
        return self.targets[0].kind

    def params_for(self, target: Target, params: Mapping[str, Any]) -> dict[str, Any]:
        """The call's parameters on `target`: the configured ones, then the target's fixed ones."""
        return {**params, **target.params} if target.params else dict(params)

    def missing(self, params: Mapping[str, Any], target: Target | None = None) -> list[str]:
        """The required params not set in `params` ("min or max" for a group none of which is set), the check's and
        `target`'s."""
        out = []
        for req in self.required + (target.required if target is not None else ()):
            group = (req,) if isinstance(req, str) else req
            if all(params.get(p) is None for p in group):
                out.append(" or ".join(group))
        return out


REGISTRY: dict[str, CheckSpec] = {}


def register(name: str, *, target: str | tuple[str, ...] | Mapping[str, Mapping[str, Any]], severity: str,
             detail: str, description: str, params: dict[str, Any] | None = None,
             required: tuple[str | tuple[str, ...], ...] = (), data: Mapping[str, str] | None = None,
             resolve_data: Callable[[dict, Path | None], None] | None = None, state: ShardState | None = None,
             guard_default: int | None = None, guard_rank: int = 9, turns: str | None = None,
             guard_all_targets: bool = False,
             explain: Callable[..., FieldDetail] | None = None, split_turns: bool = False,
             target_required: Mapping[str, tuple] | None = None,
             locate: Callable[..., tuple[int, int] | None] | None = None,
             masks: bool | Callable[..., list[tuple[int, int]]] = False, needs: str | None = None,
             enabled: bool = True):
    """Decorator: add a check function to the registry under a stable name.

    target: a kind, a tuple of kinds, or {kind: the params fixed on it}; the check runs on each, in that order.
    turns: for a text check, "assistant" or "other" restricts it to those conversation turns (one function can
    be registered twice, once per side, with different severities). target_required: {kind: params} a target
    needs beyond `required`. locate: where in a flagged text the finding is (CheckSpec.locate). masks: what the
    report must mask in snippets (CheckSpec.masks). needs: the optional package it imports (CheckSpec.needs).
    enabled: False for a check that is off unless a profile or the config turns it on (CheckSpec.default_enabled)."""
    assert severity in SEVERITIES, severity
    assert turns in TURNS, turns
    kinds = {target: {}} if isinstance(target, str) else target if isinstance(target, Mapping) else \
        dict.fromkeys(target, {})
    targets = tuple(Target(kind, dict(fixed), tuple((target_required or {}).get(kind, ())))
                    for kind, fixed in kinds.items())
    assert targets and all(t.kind in TARGET_KINDS for t in targets), targets
    assert masks is False or callable(masks) or locate is not None, "masks=True masks the span `locate` finds"

    def wrap(fn):
        if name in REGISTRY:
            raise ValueError(f"check {name!r} registered twice")
        if state is not None and name in SUMMARY_KEYS:
            # its state travels in the shard summary and its section in report.json, under its name
            raise ValueError(f"stateful check {name!r} would overwrite the report's own {name!r}")
        REGISTRY[name] = CheckSpec(name, targets, severity, dict(params or {}), fn, detail, description,
                                   tuple(required), dict(data or {}), resolve_data, state, guard_default,
                                   guard_rank, turns, guard_all_targets, explain, split_turns, locate,
                                   masks, needs, default_enabled=enabled)
        return fn

    return wrap
