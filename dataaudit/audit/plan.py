"""Which columns of a shard each check runs on, resolved from the config and the shard's schema."""
from __future__ import annotations

from dataclasses import dataclass, field

import pyarrow as pa

from dataaudit.checks import REGISTRY
from dataaudit.config import AuditConfig, skip_reason
from dataaudit.fields import DTYPE_SUFFIX, Fields, FieldSpec, resolve_schema  # noqa: F401  (DTYPE_SUFFIX re-exported)


@dataclass(frozen=True)
class FieldPlan:
    """The shard's fields (dataaudit.fields, the rule every command shares) and the checks that cannot run."""

    fields: Fields
    # check name -> why it cannot run on this data (missing parameter or field)
    skipped: dict[str, str] = field(default_factory=dict)

    def __getattr__(self, name):   # text, numeric, label, input_ids, attention_mask, problems, columns()
        if name.startswith("__") or name == "fields":   # copy/pickle probe dunders before `fields` is set
            raise AttributeError(name)
        return getattr(self.fields, name)


def resolve_plan(schema: pa.Schema, config: AuditConfig) -> FieldPlan:
    resolved = resolve_schema(schema, FieldSpec.from_config(config.fields, config.data))
    text, numeric, label, ids = resolved.text, resolved.numeric, resolved.label, resolved.input_ids
    has_target = {"text": text is not None, "numeric": bool(numeric), "label": label is not None,
                  "tokens": ids is not None, "text_tokens": text is not None and ids is not None, "reader": True}
    skipped = {}
    for name in REGISTRY:
        why = skip_reason(name, config, has_target, "this shard")
        if why is not None:
            skipped[name] = why
    return FieldPlan(resolved, skipped)
