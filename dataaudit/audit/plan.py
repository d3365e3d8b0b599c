"""Which columns of a shard each check runs on, resolved from the config and the shard's schema."""
from __future__ import annotations

from dataclasses import dataclass, field

import pyarrow as pa

from dataaudit.checks import REGISTRY
from dataaudit.config import AuditConfig, skip_reason
from dataaudit.sources.base import PROVENANCE_COLUMNS, TEXT_NAMES

LABEL_NAMES = ("label", "labels", "cls")
DTYPE_SUFFIX = ".dtype"   # WebDataset .npy members carry their per-sample dtype in "<name>.dtype"
SHAPE_SUFFIX = ".shape"


@dataclass(frozen=True)
class FieldPlan:
    text: str | None = None
    numeric: tuple[str, ...] = ()
    label: str | None = None
    input_ids: str | None = None
    attention_mask: str | None = None
    # check name -> why it cannot run on this data (missing parameter or field)
    skipped: dict[str, str] = field(default_factory=dict)
    # configured columns this shard has with the wrong type (their checks are skipped, the shard says why)
    problems: tuple[str, ...] = ()

    def columns(self) -> list[str]:
        cols = [self.text, *self.numeric, self.label, self.input_ids, self.attention_mask]
        cols += [c + DTYPE_SUFFIX for c in self.numeric]
        return [c for c in dict.fromkeys(cols) if c]


def _is_string(t: pa.DataType) -> bool:
    return pa.types.is_string(t) or pa.types.is_large_string(t)


def _leaf_type(t: pa.DataType) -> pa.DataType:
    while pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        t = t.value_type
    return t


def _is_numeric(t: pa.DataType) -> bool:
    leaf = _leaf_type(t)
    return pa.types.is_integer(leaf) or pa.types.is_floating(leaf) or pa.types.is_boolean(leaf)


def _data_columns(schema: pa.Schema) -> dict[str, pa.DataType]:
    return {f.name: f.type for f in schema if f.name not in PROVENANCE_COLUMNS}


def _pick(configured: str | None, names: tuple[str, ...], cols: dict[str, pa.DataType]) -> str | None:
    if configured is not None:
        return configured if configured in cols else None
    return next((n for n in names if n in cols), None)


def resolve_plan(schema: pa.Schema, config: AuditConfig) -> FieldPlan:
    cols = _data_columns(schema)
    f, data = config.fields, config.data
    problems: list[str] = []

    def typed(name: str | None, role: str, ok, expected: str) -> str | None:
        """Keep a picked column only if its type fits its role; a misfit is reported, never crashed on."""
        if name is None or ok(cols[name]):
            return name
        problems.append(f"column {name!r} ({role}) is {cols[name]}, expected {expected}: its checks are skipped")
        return None

    if "text" in f:
        text = typed(_pick(f["text"], (), cols), "text", _is_string, "a string")
    else:   # auto: among string columns, "text", else "content", else the first
        strings = [n for n, t in cols.items() if _is_string(t) and not n.endswith(DTYPE_SUFFIX)]
        text = next((n for n in TEXT_NAMES if n in strings), strings[0] if strings else None)
    label = typed(_pick(f.get("label"), LABEL_NAMES if "num_classes" in data else (), cols), "label",
                  _is_numeric, "numbers")
    ids = typed(_pick(f.get("input_ids"), ("input_ids",), cols), "input_ids", _is_numeric, "numbers")
    mask = typed(_pick(f.get("attention_mask"), ("attention_mask",), cols), "attention_mask", _is_numeric,
                 "numbers")
    special = {label, ids, mask}
    if "numeric" in f:
        numeric = tuple(n for n in f["numeric"]
                        if n in cols and typed(n, "numeric", _is_numeric, "numbers") is not None)
    else:
        numeric = tuple(n for n, t in cols.items()
                        if n not in special and not n.endswith(SHAPE_SUFFIX) and _is_numeric(t)
                        and pa.types.is_floating(_leaf_type(t)))

    has_target = {"text": text is not None, "numeric": bool(numeric), "label": label is not None,
                  "tokens": ids is not None, "text_tokens": text is not None and ids is not None, "reader": True}
    skipped = {}
    for name in REGISTRY:
        why = skip_reason(name, config, has_target, "this shard")
        if why is not None:
            skipped[name] = why
    return FieldPlan(text, numeric, label, ids, mask, skipped, tuple(problems))
