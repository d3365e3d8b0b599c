"""Which columns of a shard each check runs on, resolved from the config and the shard's schema."""
from __future__ import annotations

from dataclasses import dataclass, field, fields, replace

import pyarrow as pa

from dataaudit.checks import REGISTRY
from dataaudit.checks.runnable import skip_reason
from dataaudit.config import AuditConfig
from dataaudit.extras import available, missing_message
from dataaudit.fields import Fields, FieldSpec, resolve_schema

SHARD_WORDS = "this shard"     # how a shard's skip reasons name it; the job's report says "any shard" instead

# target kinds whose data needs an optional dependency: the checks on them run on torch tensors or decoded images
NEEDS = {"numeric": "torch", "label": "torch", "tokens": "torch", "token_ids": "torch", "trained": "torch",
         "image_tensor": "torch",
         "text_tokens": "torch", "image": "PIL", "pairs": "PIL", "media": "av", "media_pairs": "av"}
# what each leaves unchecked when missing (the fields are dropped from the plan, named in `problems`)
_DROPPED = {"torch": dict(numeric=(), label=None, input_ids=None, attention_mask=None, image_tensor=None,
                          token_labels=None, train_mask=None),
            "PIL": dict(images=()), "av": dict(media=())}
_WHAT = {"torch": "numeric, label, token and image-tensor checks", "PIL": "image checks", "av": "video and audio checks"}


def _columns_needing(resolved: Fields, module: str) -> list[str]:
    if module == "PIL":
        return [c.name for c in resolved.images]
    if module == "av":
        return [c.name for c in resolved.media]
    return [c for c in (*resolved.numeric, resolved.label, resolved.input_ids, resolved.token_labels,
                        resolved.train_mask, resolved.image_tensor) if c]


def _without_missing_extras(resolved: Fields) -> tuple[Fields, set[str]]:
    """The fields whose checks need a dependency that is not installed are left out, each named in `problems`
    with the extra to install (never a silent pass); also the modules missing for this schema."""
    missing = set()
    for module in ("torch", "PIL", "av"):
        cols = _columns_needing(resolved, module)
        if cols and not available(module):
            missing.add(module)
            note = f"{', '.join(cols)}: not checked: {missing_message(module, 'the ' + _WHAT[module], 'need')}"
            resolved = replace(resolved, **_DROPPED[module], problems=resolved.problems + (note,))
    return resolved, missing


@dataclass(frozen=True)
class FieldPlan(Fields):
    """The shard's fields (dataaudit.fields, the rule every command shares) and the checks that cannot run."""

    # check name -> why it cannot run on this data (missing parameter or field)
    skipped: dict[str, str] = field(default_factory=dict)


def resolve_plan(schema: pa.Schema, config: AuditConfig, sample: pa.RecordBatch | None = None,
                 pairs: dict | None = None) -> FieldPlan:
    """The plan of a schema; `sample` (a batch of it) lets string columns be recognised as identifiers or JSON;
    `pairs`: the shard's dataset_info.json entry (its pair layout)."""
    spec = replace(FieldSpec.from_config(config.fields, config.data), pairs=pairs)
    resolved, missing = _without_missing_extras(resolve_schema(schema, spec, sample))
    text, numeric, label, ids = resolved.text, resolved.numeric, resolved.label, resolved.input_ids
    conversations = any(c.kind == "conversation" for c in text)
    has_target = {"text": bool(text), "json": bool(resolved.json) or conversations, "conversation": conversations,
                  "tool_use": conversations,
                  "ids": resolved.id is not None, "image": bool(resolved.images), "pairs": bool(resolved.images),
                  "media": bool(resolved.media), "media_pairs": bool(resolved.media),
                  "numeric": bool(numeric), "label": label is not None,
                  "tokens": ids is not None,
                  "trained": ids is not None and (resolved.token_labels or resolved.train_mask) is not None,
                  "text_tokens": resolved.primary_text is not None and ids is not None,
                  "image_tensor": resolved.image_tensor is not None, "reader": True,
                  "pair": resolved.pairs is not None and resolved.pairs.layout not in ("kto", "ranked"),
                  "kto": resolved.pairs is not None and resolved.pairs.layout == "kto",
                  "ranked": resolved.pairs is not None and resolved.pairs.layout == "ranked",
                  "rendered": bool(text),   # yielded with a tokenizer (the checks require one)
                  "rendered_pair": resolved.pairs is not None and resolved.pairs.layout not in ("kto", "ranked")}
    skipped = {}
    for name in REGISTRY:
        why = skip_reason(name, config, has_target, SHARD_WORDS)
        needs = {NEEDS.get(t.kind) for t in REGISTRY[name].targets} & missing
        if why is not None and needs and config.check(name).enabled:
            why = missing_message(needs.pop(), f"its field in {SHARD_WORDS}")
        if why is not None:
            skipped[name] = why
    return FieldPlan(**{f.name: getattr(resolved, f.name) for f in fields(Fields)}, skipped=skipped)
