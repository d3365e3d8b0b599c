"""What every command says about fields: a configured field that no shard has is a usage error (exit 2), and the
summary names the columns each role resolved to (dataaudit.fields is the rule)."""
from __future__ import annotations

from collections import Counter
from typing import Iterable, Sequence

from dataaudit.cli.common import InputError, plural
from dataaudit.fields import FieldSpec

ROLE_ORDER = ("text", "json", "numeric", "image_tensor", "label", "input_ids", "attention_mask", "token_labels",
              "train_mask", "id")
PEEK_ROWS = 256   # JSONL and tar shards have no schema: their first records stand for it


def require_fields(paths: Sequence[str], spec: FieldSpec, where: str) -> None:
    """Raise InputError naming every configured field that none of `paths` has. Unreadable shards are left to the
    job, which reports each with its error."""
    if not spec.configured():
        return
    from dataaudit.fields import arrow_columns, missing_fields
    from dataaudit.formats import peek_schema

    schemas = [s for s in (peek_schema(p, PEEK_ROWS) for p in paths) if s is not None]
    missing = missing_fields(spec, (arrow_columns(s) for s in schemas)) if schemas else []
    if missing:
        raise InputError(f"{where}: {', '.join(missing)} found in none of the {plural(len(paths), 'shard')} "
                         f"(Parquet footers, the first {PEEK_ROWS} records of other shards)")


def text_fields(given: Sequence[str]) -> tuple[str, ...] | None:
    """--text-field values (repeated and/or comma-separated) as the rule's configured text (None: automatic)."""
    names = tuple(n.strip() for value in given for n in value.split(",") if n.strip())
    return names or None


def fields_line(per_shard: Iterable[dict[str, list[str]]], formats: dict[str, str] | None = None) -> str:
    """'fields: text = text (3 shards), txt (2 shards); numeric = features (3 shards)': what the checks ran on.
    `formats`: field -> its format, shown after the field when it is not plain text."""
    counts: dict[str, Counter] = {}
    for roles in per_shard:
        for role, columns in roles.items():
            for column in columns:
                counts.setdefault(role, Counter())[column] += 1
    formats = formats or {}

    def named(c: str) -> str:
        fmt = formats.get(c)
        return f"{c} [{fmt}]" if fmt and fmt != "text" else c

    order = sorted(counts, key=lambda r: ROLE_ORDER.index(r) if r in ROLE_ORDER else len(ROLE_ORDER))
    parts = [f"{role} = " + ", ".join(f"{named(c)} ({n} shard{'s' if n > 1 else ''})" for c, n in counts[role].items())
             for role in order]
    return "fields: " + ("; ".join(parts) if parts else "none resolved")
