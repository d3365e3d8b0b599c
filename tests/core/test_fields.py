"""The one field-resolution rule (dataaudit.fields), on Arrow schemas and on guard batches."""
from __future__ import annotations

import json

import pyarrow as pa
import torch

from dataaudit.config import build_config
from dataaudit.fields import Column, Fields, FieldSpec, arrow_columns, missing_fields, resolve, resolve_schema
from dataaudit.guard.plan import GuardPlan

SCHEMA = pa.schema([
    ("id", pa.string()), ("text", pa.string()), ("label", pa.int64()), ("features", pa.list_(pa.float32())),
    ("input_ids", pa.list_(pa.int32())), ("attention_mask", pa.list_(pa.int8())),
    ("pixels.shape", pa.list_(pa.int64())), ("score", pa.float64()), ("pixels.dtype", pa.string()),
    ("__key__", pa.string()), ("__row__", pa.int64()), ("__error__", pa.string()), ("__warning__", pa.string()),
])


def _names(cols) -> list[str]:
    return [c.name for c in cols]


def test_automatic_roles():
    f = resolve_schema(SCHEMA, FieldSpec())
    assert f == Fields(text=(Column("text", "string", "string"),), numeric=("features", "score"), label=None,
                       input_ids="input_ids", attention_mask="attention_mask", id="id", identifiers=("id",),
                       problems=())
    assert f.columns() == ["text", "features", "score", "input_ids", "attention_mask", "id", "features.dtype",
                           "score.dtype"]
    assert f.roles() == {"text": ["text"], "image": [], "json": [], "numeric": ["features", "score"], "label": [],
                         "input_ids": ["input_ids"], "attention_mask": ["attention_mask"], "id": ["id"],
                         "image_tensor": [], "token_labels": [], "train_mask": []}
    assert f.formats() == {"text": "text", "id": "identifier (not audited as prose)"}


def test_label_by_name_only_when_the_data_has_classes():
    spec = FieldSpec.from_config({}, {"num_classes": 10})
    assert spec.auto_label
    f = resolve_schema(SCHEMA, spec)
    assert f.label == "label" and f.numeric == ("features", "score")


def test_text_is_every_prose_column_text_first_never_a_dtype_column_or_an_identifier():
    schema = pa.schema([("pixels.dtype", pa.string()), ("caption", pa.string()), ("body", pa.string()),
                        ("text", pa.string()), ("sample_id", pa.string())])
    f = resolve_schema(schema, FieldSpec())
    assert _names(f.text) == ["text", "caption", "body"] and f.primary_text == "text"
    assert (f.identifiers, f.id) == (("sample_id",), "sample_id")
    assert resolve_schema(pa.schema([("text", pa.int64()), ("id", pa.string())]), FieldSpec()).text == ()
    assert resolve_schema(pa.schema([("n", pa.int64())]), FieldSpec()).text == ()


def test_configured_names_win_and_a_wrong_type_is_a_problem_not_another_column():
    spec = FieldSpec.from_config({"text": "label", "numeric": "features", "label": "text"})
    f = resolve_schema(SCHEMA, spec)
    assert (f.text, f.numeric, f.label) == ((), ("features",), None)
    assert f.problems == (
        "column 'label' (text) is int64, expected text (a string, a list of strings or a conversation): its checks "
        "are skipped",
        "column 'text' (label) is string, expected numbers: its checks are skipped",
    )


def test_a_configured_name_absent_from_one_shard_resolves_to_nothing_there():
    f = resolve_schema(SCHEMA, FieldSpec(text="caption", numeric=("nope", "score")))
    assert (f.text, f.numeric, f.problems) == ((), ("score",), ())


def test_missing_fields_names_what_no_shard_has():
    spec = FieldSpec(text="caption", numeric=("features", "nope"), label="label")
    schemas = [arrow_columns(SCHEMA), [Column("caption", "string", "string")]]
    assert missing_fields(spec, schemas) == ["numeric 'nope'"]
    assert missing_fields(spec, []) == ["text 'caption'", "label 'label'", "numeric 'features'",
                                        "numeric 'nope'"]


def test_provenance_is_never_data():
    schema = pa.schema([("__key__", pa.string()), ("__shard__", pa.string()), ("v", pa.float32())])
    assert resolve_schema(schema, FieldSpec()) == Fields(numeric=("v",))


def test_the_guard_resolves_batches_with_the_same_rule():
    config = build_config({"data": {"num_classes": 10, "vocab_size": 100}})
    plan = GuardPlan(config, checks="all", names=("pixels", "label", "step", "input_ids", "caption"))
    batch = (torch.zeros(2, 3), torch.tensor([1, 2]), torch.tensor(5.0), torch.ones(2, 4, dtype=torch.long),
             ["a", "b"])
    plan.resolve(batch)
    assert [(p.target, p.key, p.name) for p in plan.fields] == [
        ("numeric", 0, "pixels"), ("label", 1, "label"), ("tokens", 3, "input_ids")]
    # a 0-dim tensor holds no value per sample: never a numeric field
    assert resolve([Column("step", "float", "tensor float32", per_sample=False)], FieldSpec()).numeric == ()


def test_the_guard_reports_a_configured_entry_of_the_wrong_kind():
    plan = GuardPlan(fields={"numeric": ["caption"]})
    plan.resolve({"caption": ["a", "b"], "pixels": torch.zeros(2, 3)})
    assert plan.problems == ("column 'caption' (numeric) is list, expected numbers: its checks are skipped",)
    assert plan.describe()["problems"] == list(plan.problems)
    assert plan.fields == ()


def _parses(text: str) -> bool:
    try:
        json.loads(text)
        return True
    except ValueError:
        return False


def _value_hint_in_python(values) -> str | None:
    """The hint as it was read in Python, value by value: what the Arrow reading must give."""
    from dataaudit.fields import IDENTIFIER_DISTINCT, IDENTIFIER_MAX_CHARS, IDENTIFIER_MIN_VALUES

    present = [v for v in values.drop_null().to_pylist() if v.strip()]
    if not present:
        return None
    if all(v.lstrip()[:1] in ("{", "[") for v in present) and any(map(_parses, present)):
        return "json"
    if len(present) < IDENTIFIER_MIN_VALUES:
        return None
    if any(c in v for v in values.drop_null().to_pylist() for c in "\t\n\f\r ") or \
            max(len(v) for v in present) > IDENTIFIER_MAX_CHARS:
        return None
    return "identifier" if len(set(present)) >= IDENTIFIER_DISTINCT * len(present) else None


def test_value_hints_read_with_arrow_are_those_read_value_by_value():
    from dataaudit.fields import _value_hint

    ids = [f"id-{i:04d}" for i in range(40)]
    samples = {
        "prose": ["a sentence here", "another one", None] * 10,
        "json": ['{"a": 1}', ' [1, 2]', "\u00a0{\"b\": 2}", None] * 5,
        "json-looking, none parses": ["{not json", "[also not"] * 10,
        "one brace short": ['{"a": 1}'] * 20 + ["x"],
        "identifiers": ids,
        "identifiers and whitespace-only values": ids + ["\u00a0", "\x1c", "\u3000", "", None],
        "identifiers, one with a space": ids + ["id 1"],
        "identifiers, one with a vertical tab (not RE2's \\s)": ids + ["id\x0b1"],
        "too few": ids[:15],
        "too long": ids + ["x" * 257],
        "long enough": ids + ["x" * 256],
        "repeated": ids[:20] + ids[:20],
        "nearly distinct": ids[:36] + ids[:4],
        "whitespace only": ["\u2003", "\x85", None],
        "nothing": [None, None],
        "braces after python whitespace": ["\x1f\u2028[1]"] * 3,   # (json.loads wants ASCII whitespace)
    }
    got = {name: _value_hint(pa.array(v, pa.string())) for name, v in samples.items()}
    assert got == {name: _value_hint_in_python(pa.array(v, pa.string())) for name, v in samples.items()}
    assert got == {"prose": None, "json": "json", "json-looking, none parses": None, "one brace short": None,
                   "identifiers": "identifier", "identifiers and whitespace-only values": "identifier",
                   "identifiers, one with a space": None,
                   "identifiers, one with a vertical tab (not RE2's \\s)": "identifier", "too few": None,
                   "too long": None, "long enough": "identifier", "repeated": None, "nearly distinct": "identifier",
                   "whitespace only": None, "nothing": None, "braces after python whitespace": None}
    assert _value_hint(pa.array(ids, pa.large_string())) == "identifier"
