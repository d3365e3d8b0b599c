"""The config: every name validated, data facts fill check parameters, the tokenizer gives the vocab size."""
from __future__ import annotations

import pytest

from dataaudit.config import ConfigError, build_config, load_config


def test_defaults_leave_checks_that_need_facts_unconfigured():
    cfg = load_config(None)
    assert cfg.check("label_out_of_range").params["num_classes"] is None
    assert cfg.check("extreme_span").params["threshold"] == 1e4
    assert cfg.check("nonfinite").severity == "error"


def test_data_facts_fill_parameters_and_overrides_apply():
    cfg = build_config({"data": {"num_classes": 7, "vocab_size": 500, "pad_id": 3, "context_length": 128,
                                 "numeric_dtype": "float32"},
                        "checks": {"extreme_span": {"threshold": 5.0, "severity": "error"},
                                   "repetition": {"enabled": False}}})
    assert cfg.check("label_out_of_range").params["num_classes"] == 7
    assert cfg.check("token_id_out_of_range").params["vocab_size"] == 500
    assert cfg.check("all_padding").params["pad_id"] == 3 and cfg.check("mask_mismatch").params["pad_id"] == 3
    assert cfg.check("too_long").params["context_length"] == 128
    assert cfg.check("dtype_mismatch").params["expected"] == "float32"
    assert (cfg.check("extreme_span").params["threshold"], cfg.check("extreme_span").severity) == (5.0, "error")
    assert cfg.check("repetition").enabled is False


def test_vocab_size_from_tokenizer(shared_data, tmp_path):
    tok = shared_data / "tokenizers" / "gpt-neo-test-tokenizer.json"
    path = tmp_path / "audit.toml"
    path.write_text(f'[data]\ntokenizer = "{tok}"\n')
    cfg = load_config(path)
    assert cfg.data["vocab_size"] == 50280          # its vocabulary including added tokens
    assert cfg.check("token_id_out_of_range").params["vocab_size"] == cfg.data["vocab_size"]


@pytest.mark.parametrize("raw, message", [
    ({"checks": {"nonfinit": {}}}, "unknown check [checks.nonfinit]"),
    ({"checks": {"extreme_span": {"treshold": 1}}}, "unknown parameter 'treshold' in [checks.extreme_span]"),
    ({"checks": {"nonfinite": {"severity": "fatal"}}}, "severity must be one of"),
    ({"data": {"num_classes": 0}}, "[data] num_classes must be a positive integer"),
    ({"data": {"vocab": 10}}, "unknown key 'vocab' in [data]"),
    ({"field": {}}, "unknown section [field]"),
    ({"data": {"tokenizer": "/no/such/tokenizer.json"}}, "tokenizer file not found"),
])
def test_bad_config_is_one_clear_error(raw, message):
    with pytest.raises(ConfigError) as err:
        build_config(raw, "audit.toml")
    assert str(err.value).startswith("audit.toml: ") and message in str(err.value)


def test_unparsable_toml_names_the_file(tmp_path):
    path = tmp_path / "broken.toml"
    path.write_text("[data\n")
    with pytest.raises(ConfigError, match="broken.toml: not valid TOML"):
        load_config(path)


@pytest.mark.parametrize("fields, message", [
    ({"text": ["question", 5]}, "[fields] text must be a field name or a list of them, got ['question', 5]"),
    ({"text": []}, "[fields] text must be a field name or a list of them, got []"),
    ({"input_ids": ["a"]}, "[fields] input_ids must be one column name, got ['a']"),
    ({"label": 3}, "[fields] label must be one column name, got 3"),
    ({"text": ""}, "[fields] text must be a field name or a list of them, got ''"),
    ({"numeric": [1]}, "[fields] numeric must be a list of column names"),
    ({"numeric": 5}, "[fields] numeric must be a list of column names"),
])
def test_field_names_must_be_column_names(fields, message):
    """(Several text fields are allowed: `text = ["question", "answer"]`.)"""
    with pytest.raises(ConfigError) as exc:
        build_config({"fields": fields}, "a.toml")
    assert str(exc.value) == f"a.toml: {message}"
