"""Which columns of a shard each check runs on, resolved from the config and the shard's schema."""
from __future__ import annotations

from dataclasses import dataclass, field, fields

import pyarrow as pa

from dataaudit.checks import REGISTRY
from dataaudit.checks.runnable import skip_reason
from dataaudit.config import AuditConfig
from dataaudit.fields import Fields, FieldSpec, resolve_schema


@dataclass(frozen=True)
class FieldPlan(Fields):
    """The shard's fields (dataaudit.fields, the rule every command shares) and the checks that cannot run."""

    # check name -> why it cannot run on this data (missing parameter or field)
    skipped: dict[str, str] = field(default_factory=dict)


def resolve_plan(schema: pa.Schema, config: AuditConfig, sample: pa.RecordBatch | None = None) -> FieldPlan:
    """The plan of a schema; `sample` (a batch of it) lets string columns be recognised as identifiers or JSON."""
    resolved = resolve_schema(schema, FieldSpec.from_config(config.fields, config.data), sample)
    text, numeric, label, ids = resolved.text, resolved.numeric, resolved.label, resolved.input_ids
    conversations = any(c.kind == "conversation" for c in text)
    has_target = {"text": bool(text), "json": bool(resolved.json) or conversations, "conversation": conversations,
                  "ids": resolved.id is not None, "image": bool(resolved.images), "pairs": bool(resolved.images),
                  "numeric": bool(numeric), "label": label is not None,
                  "tokens": ids is not None, "text_tokens": resolved.primary_text is not None and ids is not None,
                  "image_tensor": resolved.image_tensor is not None, "reader": True}
    skipped = {}
    for name in REGISTRY:
        why = skip_reason(name, config, has_target, "this shard")
        if why is not None:
            skipped[name] = why
    return FieldPlan(**{f.name: getattr(resolved, f.name) for f in fields(Fields)}, skipped=skipped)
