"""Which column is what: the ONE field-resolution rule of every command (audit, guard, dedup, contamination,
tokenizer-drift samples).

Pure Python over a description of the columns: an Arrow schema (`arrow_columns`) or a training batch (the guard
describes its tensors with `Column`s itself, so importing this module loads neither pyarrow nor torch).

The rule, for each role (a name the user configured always wins; a configured name of the wrong type is a
problem, reported, and never silently replaced by another column):
  text            configured, else "text", else "content", else the first string column
  label           configured, else (only when the data has classes) "label", "labels", "cls"
  input_ids       configured, else "input_ids"
  attention_mask  configured, else "attention_mask"
  numeric         configured, else every floating-point column (scalars, lists, tensors) not used above
Provenance columns (dataaudit.provenance) are never data. A configured name that no shard has is a usage
error: `missing_fields` finds those.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Mapping

from dataaudit.provenance import RESERVED_NAMES

TEXT_NAMES = ("text", "content")
LABEL_NAMES = ("label", "labels", "cls")
DTYPE_SUFFIX = ".dtype"   # WebDataset .npy members carry their per-sample dtype in "<name>.dtype"
SHAPE_SUFFIX = ".shape"
ROLES = ("text", "numeric", "label", "input_ids", "attention_mask")
KINDS = ("string", "float", "int", "bool", "other")


@dataclass(frozen=True)
class Column:
    """What resolution needs to know of one column: its name, the kind of its (leaf) values, the type to show in
    messages, and whether it holds one value per sample only (a 0-dim tensor does not: it is no field)."""

    name: str
    kind: str          # one of KINDS
    type_name: str
    per_sample: bool = True

    @property
    def numeric(self) -> bool:
        return self.kind in ("float", "int", "bool")


@dataclass(frozen=True)
class FieldSpec:
    """What the user named ([fields] of the audit config, --text-field, the guard's overrides); None = automatic.
    auto_label: pick a label column by its name only when the data has classes ([data] num_classes)."""

    text: str | None = None
    numeric: tuple[str, ...] | None = None
    label: str | None = None
    input_ids: str | None = None
    attention_mask: str | None = None
    auto_label: bool = False

    @classmethod
    def from_config(cls, fields: Mapping, data: Mapping = {}) -> "FieldSpec":  # noqa: B006 (read only)
        numeric = fields.get("numeric")
        if isinstance(numeric, str):
            numeric = (numeric,)
        return cls(text=fields.get("text"), numeric=None if numeric is None else tuple(numeric),
                   label=fields.get("label"), input_ids=fields.get("input_ids"),
                   attention_mask=fields.get("attention_mask"), auto_label="num_classes" in data)

    def configured(self) -> dict[str, tuple[str, ...]]:
        """role -> the names the user gave for it."""
        out = {role: (getattr(self, role),) for role in ("text", "label", "input_ids", "attention_mask")
               if getattr(self, role) is not None}
        if self.numeric:
            out["numeric"] = self.numeric
        return out


@dataclass(frozen=True)
class Fields:
    """The columns of one schema, by role, and the configured columns that could not be used (with why)."""

    text: str | None = None
    numeric: tuple[str, ...] = ()
    label: str | None = None
    input_ids: str | None = None
    attention_mask: str | None = None
    problems: tuple[str, ...] = field(default_factory=tuple)

    def roles(self) -> dict[str, list[str]]:
        """role -> columns (every role, possibly empty): what a report says was resolved."""
        single = lambda c: [c] if c else []  # noqa: E731
        return {"text": single(self.text), "numeric": list(self.numeric), "label": single(self.label),
                "input_ids": single(self.input_ids), "attention_mask": single(self.attention_mask)}

    def columns(self) -> list[str]:
        """Every column some role uses, plus the per-sample dtype companions of numeric columns."""
        cols = [self.text, *self.numeric, self.label, self.input_ids, self.attention_mask]
        cols += [c + DTYPE_SUFFIX for c in self.numeric]
        return [c for c in dict.fromkeys(cols) if c]


_EXPECTED = {"text": ("a string", lambda c: c.kind == "string"),
             "numeric": ("numbers", lambda c: c.numeric and c.per_sample),
             "label": ("numbers", lambda c: c.numeric),
             "input_ids": ("numbers", lambda c: c.numeric),
             "attention_mask": ("numbers", lambda c: c.numeric)}


def resolve(columns: Iterable[Column], spec: FieldSpec) -> Fields:
    """The fields of one schema (or batch) under `spec`."""
    cols = {c.name: c for c in columns if c.name not in RESERVED_NAMES}
    problems: list[str] = []

    def pick(role: str, configured: str | None, defaults: tuple[str, ...] = ()) -> str | None:
        name = configured if configured is not None else next((n for n in defaults if n in cols), None)
        if name is None or name not in cols:
            return None
        expected, fits = _EXPECTED[role]
        if fits(cols[name]):
            return name
        problems.append(f"column {name!r} ({role}) is {cols[name].type_name}, expected {expected}: "
                        "its checks are skipped")
        return None

    if spec.text is not None:
        text = pick("text", spec.text)
    else:
        strings = [n for n, c in cols.items() if c.kind == "string" and not n.endswith(DTYPE_SUFFIX)]
        text = next((n for n in TEXT_NAMES if n in strings), strings[0] if strings else None)
    label = pick("label", spec.label, LABEL_NAMES if spec.auto_label else ())
    ids = pick("input_ids", spec.input_ids, ("input_ids",))
    mask = pick("attention_mask", spec.attention_mask, ("attention_mask",))
    if spec.numeric is not None:
        numeric = tuple(n for n in spec.numeric if pick("numeric", n) is not None)
    else:
        special = {label, ids, mask}
        numeric = tuple(n for n, c in cols.items() if n not in special and not n.endswith(SHAPE_SUFFIX)
                        and c.kind == "float" and c.per_sample)
    return Fields(text, numeric, label, ids, mask, tuple(problems))


def missing_fields(spec: FieldSpec, schemas: Iterable[Iterable[Column]]) -> list[str]:
    """Configured names that none of `schemas` has, as "role 'name'" strings (empty: all found somewhere)."""
    seen: set[str] = set()
    for columns in schemas:
        seen.update(c.name for c in columns)
    return [f"{role} {name!r}" for role, names in spec.configured().items() for name in names if name not in seen]


def arrow_columns(schema) -> list[Column]:
    """The Columns of an Arrow schema: the kind is that of the leaf values of (nested) lists."""
    import pyarrow as pa

    out = []
    for f in schema:
        t = leaf = f.type
        while pa.types.is_list(leaf) or pa.types.is_large_list(leaf) or pa.types.is_fixed_size_list(leaf):
            leaf = leaf.value_type
        if pa.types.is_string(t) or pa.types.is_large_string(t):
            kind = "string"
        elif pa.types.is_floating(leaf):
            kind = "float"
        elif pa.types.is_integer(leaf):
            kind = "int"
        elif pa.types.is_boolean(leaf):
            kind = "bool"
        else:
            kind = "other"
        out.append(Column(f.name, kind, str(t)))
    return out


def resolve_schema(schema, spec: FieldSpec) -> Fields:
    """`resolve` over an Arrow schema."""
    return resolve(arrow_columns(schema), spec)


def text_field(schema, configured: str | None = None) -> str | None:
    """The text column of an Arrow schema under the rule (the configured one if the schema has it as text)."""
    return resolve_schema(schema, FieldSpec(text=configured)).text
