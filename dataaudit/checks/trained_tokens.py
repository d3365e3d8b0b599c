"""What is trained in tokenized SFT data (target "trained", a TrainedTokens): token ids beside per-token labels or
a train mask.

Two layouts (dataaudit.fields resolves them beside `input_ids`):
  labels  `labels`: one integer per token, aligned with input_ids (Hugging Face's causal-LM convention: the model
          shifts them by one inside its forward, the data does not); a token is trained where its label !=
          ignore_index (-100). The trained id is the label itself (what the loss asks the model to predict).
  mask    `assistant_masks` / `assistant_mask` / `loss_mask`: 0/1 per token; a token is trained where the mask != 0.
          The trained id is input_ids at that position.
"Real" tokens are those the attention mask marks (all of them without one). Labels or a mask of another length
than the ids are labels_misaligned's; the other checks then compare the positions both have.

Same contract as tokens.py: torch tensors on the batch's device, flagged bool [B] and value float64 [B], no Python
loop over samples, no host read (the ragged Arrow form and the padded tensor form give the same results).
"""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from dataaudit.checks.base import CheckOutput, SettingError, register
from dataaudit.checks.truncation import untrained_rendered
from dataaudit.checks.tokens import _class_range, _eq, _real_ids
from dataaudit.extras import LazyModule
from dataaudit.tensors import (
    NumericField,
    TrainedTokens,
    element_position,
    memo,
    same_dense_layout,
    seg_count,
    seg_lengths,
    with_valid,
)

torch = LazyModule("torch", globals())   # imported on first use: the audit of text never loads it

IGNORE_INDEX = -100
# End-of-turn tokens chat templates write after each reply (ChatML, Llama 3, Gemma, Phi-3, Llama 3 tool calls):
# one the tokenizer's chat template uses and its vocabulary has is an end token, like its eos token.
END_OF_TURN_TOKENS = ("<|im_end|>", "<|eot_id|>", "<|eom_id|>", "<end_of_turn>", "<|end|>", "<|endoftext|>")
# Files beside a tokenizer.json that make its folder the tokenizer (as dataaudit.stats.conversation_lengths).
_FOLDER_FILES = ("tokenizer_config.json", "special_tokens_map.json", "chat_template.jinja", "chat_template.json")

__all__ = ["no_trainable_tokens", "labels_misaligned", "label_id_out_of_range", "eos_never_trained",
           "tokenizer_end_ids", "trained_positions"]


def _out(flagged: torch.Tensor, value: torch.Tensor) -> CheckOutput:
    return CheckOutput(flagged=flagged.to(torch.bool), value=value.to(torch.float64))


def _aligned(t: TrainedTokens) -> tuple[torch.Tensor | None, torch.Tensor | None]:
    """(real, idx) per element of t.trained: whether the ids have a real token at the same position of the same
    sample (None: every element, a padded batch without attention mask), and the index of that id element (None:
    the same index, ids and labels of one padded shape; 0 where the ids have no such position)."""
    ids, tr = _real_ids(t.tokens), t.trained
    if same_dense_layout(ids, tr):
        return ids.valid, None
    n = tr.values.shape[0]
    if ids.values.shape[0] == 0 or n == 0:
        return torch.zeros(n, dtype=torch.bool, device=tr.device), torch.zeros(n, dtype=torch.int64,
                                                                              device=tr.device)
    lens = seg_lengths(ids)
    starts = torch.cumsum(lens, 0) - lens
    pos = element_position(tr)
    inside = pos < lens.index_select(0, tr.sample)
    idx = torch.where(inside, starts.index_select(0, tr.sample) + pos, torch.zeros_like(pos))
    real = inside if ids.valid is None else inside & ids.valid.index_select(0, idx)
    return real, idx


def trained_positions(t: TrainedTokens, ignore_index=IGNORE_INDEX) -> tuple[torch.Tensor, torch.Tensor]:
    """(trained, token) per element of t.trained: whether it is a trained real token (label != ignore_index, or
    mask != 0, at a real position of the ids), and its trained token id (the label, or the id under the mask).
    Computed once per field and ignore_index, shared by the checks."""
    def compute():
        tr = t.trained
        v = tr.values
        hit = ~_eq(v, ignore_index) if t.labels else v != 0
        if v.is_floating_point():
            hit = hit & ~torch.isnan(v)
        real, idx = _aligned(t)
        trained = hit if real is None else hit & real
        if t.labels:
            token = v
        else:
            ids = t.tokens.ids.values
            token = ids if idx is None else ids.index_select(0, idx) if ids.shape[0] else torch.zeros_like(v)
        return trained, token
    return memo(t.trained, f"trained_positions:{ignore_index!r}", compute)


def _trained_count(t: TrainedTokens, ignore_index) -> torch.Tensor:
    return memo(t.trained, f"trained_count:{ignore_index!r}",
                lambda: seg_count(t.trained, trained_positions(t, ignore_index)[0]))


def _ids_present(t: TrainedTokens) -> torch.Tensor | None:
    return t.tokens.ids.present


def _in_samples_with_ids(t: TrainedTokens, flagged: torch.Tensor) -> torch.Tensor:
    """A null ids row is no record to flag (missing_value's); tensor batches have no nulls."""
    present = _ids_present(t)
    return flagged if present is None else flagged & present


# Guard default: a batch whose records train on nothing gives a NaN mean loss (0 / 0) or silently wastes the step.
# Raw records (target "rendered", audit only): rendered as the trainer does and cut to the context length, see
# dataaudit.checks.truncation; the tokenizer and the context length are needed there only.
@register("no_trainable_tokens", target=("trained", "rendered"), severity="error",
          params={"ignore_index": IGNORE_INDEX, "train_on_prompt": False, "tokenizer": None, "context_length": None},
          data={"tokenizer": "tokenizer", "context_length": "context_length"},
          target_required={"rendered": ("tokenizer", "context_length")},
          guard_default=11, guard_rank=1,
          detail="no trained token ({value:.0f} trained)",
          description="No real token of the record is trained: every label is ignore_index (-100) or the train "
                      "mask is all 0 (a null labels list trains nothing either). The record costs a step and "
                      "teaches nothing; a batch of them makes a NaN loss. value = the number of trained tokens. "
                      "Raw records, with `[data] tokenizer` and `[data] context_length`: rendered as the trainer "
                      "does (chat template or role-prefixed turns; a pair's side with its prompt; Alpaca's fields "
                      "as user and assistant turns), the first trained token (the assistant's first reply) lies "
                      "past the context length, so the cut leaves nothing; `train_on_prompt = true` (every token "
                      "trained) turns that off. value = that token's position.")
def no_trainable_tokens(t, ignore_index=IGNORE_INDEX, train_on_prompt: bool = False, **params) -> CheckOutput:
    if not isinstance(t, TrainedTokens):
        return untrained_rendered(t, train_on_prompt)
    n = _trained_count(t, ignore_index)
    return _out(_in_samples_with_ids(t, n == 0), n)


# Guard default: with labels of another length the loss is computed against the wrong tokens (or raises).
@register("labels_misaligned", target="trained", severity="error", guard_default=12, guard_rank=2,
          detail="{value:+.0f} labels/mask positions vs the token ids",
          description="The record's labels (or train mask) are not as long as its input_ids: they were built for "
                      "other ids (a truncation or packing step that cut one but not the other). A null labels "
                      "list counts as empty. value = len(labels) - len(input_ids).")
def labels_misaligned(t: TrainedTokens) -> CheckOutput:
    d = seg_lengths(t.trained) - seg_lengths(t.tokens.ids)
    return _out(_in_samples_with_ids(t, d != 0), d)


def _trained_ids_field(t: TrainedTokens, ignore_index) -> NumericField:
    """The trained token ids of a mask layout as a field in the mask's element layout (valid = trained)."""
    trained, token = trained_positions(t, ignore_index)
    tr = t.trained
    if token is t.tokens.ids.values:   # a padded batch: the ids' own field, its valid replaced
        return with_valid(t.tokens.ids, trained)
    return NumericField(values=token, sample=tr.sample, num_samples=tr.num_samples, dtypes=t.tokens.ids.dtypes,
                        valid=trained, present=tr.present)


# Guard default: a label id past the vocabulary is a device-side assert in cross_entropy on CUDA.
@register("label_id_out_of_range", target="trained", severity="error",
          params={"vocab_size": None, "ignore_index": IGNORE_INDEX}, required=("vocab_size",),
          data={"vocab_size": "vocab_size"}, guard_default=13, guard_rank=3,
          detail="trained label id {value:g} outside [0, {vocab_size})",
          description="A trained label (any label other than ignore_index, padding positions included: the loss "
                      "reads them all) is negative or >= vocab_size; with a train mask, a trained token id. "
                      "cross_entropy fails on it (a device-side assert on CUDA). value = the worst offending id "
                      "(the largest if one is >= vocab_size, else the smallest).")
def label_id_out_of_range(t: TrainedTokens, vocab_size: int, ignore_index=IGNORE_INDEX) -> CheckOutput:
    if t.labels:
        return _class_range(t.trained, int(vocab_size), ignore_index)
    return _class_range(_trained_ids_field(t, ignore_index), int(vocab_size))


# ------------------------------------------------------------------------------ end tokens from [data]

def _bundle_path(path: str) -> Path:
    """What to load: a folder; a tokenizer.json whose folder has config files (that folder); any other file."""
    from dataaudit.io import is_file

    p = Path(path)
    if is_file(p) and p.name == "tokenizer.json" and any(is_file(p.parent / f) for f in _FOLDER_FILES):
        return p.parent
    return p


@lru_cache(maxsize=8)
def tokenizer_end_ids(path: str) -> tuple[int, ...]:
    """The end tokens of a tokenizer (a tokenizer.json or a folder, as [data] tokenizer): its eos token (from
    tokenizer_config.json / special_tokens_map.json, else its post-processor), then every END_OF_TURN_TOKENS
    token its chat template writes and its vocabulary has. Empty when it names none."""
    from dataaudit.tokenization.loading import load_bundle

    bundle = load_bundle(_bundle_path(path))
    out = [bundle.special["eos"].id] if bundle.special["eos"].id is not None else []
    template = bundle.chat_template or ""
    for tok in END_OF_TURN_TOKENS:
        tid = bundle.tokenizer.token_to_id(tok)
        if tok in template and tid is not None:
            out.append(tid)
    return tuple(dict.fromkeys(out))


def _resolve_data(data: dict, folder: Path | None) -> None:
    """[data] eos_token_id: one token id or a list of them (made a list); unset, the end tokens of [data]
    tokenizer (none known: left unset, and eos_never_trained does not run, saying why)."""
    if "eos_token_id" in data:
        v = data["eos_token_id"]
        ids = v if isinstance(v, list) else [v]
        if not ids or not all(isinstance(i, int) and not isinstance(i, bool) and 0 <= i < 2 ** 31 for i in ids):
            raise SettingError(f"[data] eos_token_id must be a token id or a list of them, got {v!r}")
        data["eos_token_id"] = list(ids)
    elif data.get("tokenizer"):
        try:
            ends = tokenizer_end_ids(data["tokenizer"])
        except Exception as exc:  # the tokenizer loaded for vocab_size already: a failure here is its end tokens'
            raise SettingError(f"[data] tokenizer {data['tokenizer']}: cannot read its end tokens: {exc}") from None
        if ends:
            data["eos_token_id"] = list(ends)


# Guard opt-in: an elementwise pass per end token.
@register("eos_never_trained", target="trained", severity="warning",
          params={"end_token_ids": None, "ignore_index": IGNORE_INDEX}, required=("end_token_ids",),
          data={"eos_token_id": "end_token_ids"}, resolve_data=_resolve_data,
          detail="none of the {value:.0f} trained tokens is an end token {end_token_ids}",
          description="The record trains tokens but none of them is an end token (the eos token, or the "
                      "end-of-turn token the chat template writes: <|im_end|>, <|eot_id|>, <end_of_turn>, ...): "
                      "the model never learns to stop. end_token_ids: [data] eos_token_id, else from [data] "
                      "tokenizer (its eos token and the end-of-turn tokens its chat template uses). value = the "
                      "number of trained tokens.")
def eos_never_trained(t: TrainedTokens, end_token_ids, ignore_index=IGNORE_INDEX) -> CheckOutput:
    trained, token = trained_positions(t, ignore_index)
    ends = torch.zeros_like(trained)
    for e in end_token_ids:   # a few ids: one comparison each, no host read
        ends = ends | _eq(token, int(e))
    n = _trained_count(t, ignore_index)
    n_end = seg_count(t.trained, trained & ends)
    return _out(_in_samples_with_ids(t, (n > 0) & (n_end == 0)), n)
