"""The audit's tokenizer-drift stage: records whose stored ids came from another tokenizer are found, exactly."""
from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from tokenizers import Tokenizer

from dataaudit.audit.shard import audit_shard
from dataaudit.cli import main
from dataaudit.config import ConfigError, build_config, load_config
from dataaudit.pipelines.audit import run_audit
from dataaudit.pipelines.engine import EngineOptions

PLANTED_PARQUET = (3, 17, 29)      # rows whose ids came from GPT-NeoX
PLANTED_JSONL = (5,)
NO_SPECIALS_ROW, TRUNCATED_ROW = 10, 20
PAD = 0


@pytest.fixture(scope="module")
def data(shared_data, tmp_path_factory) -> dict:
    """Two pre-tokenized shards (Llama ids) with planted GPT-NeoX ids, plus a text-only shard."""
    root = tmp_path_factory.mktemp("drift")
    toks = shared_data / "tokenizers"
    llama = Tokenizer.from_file(str(toks / "llama-test-tokenizer.json"))
    neo = Tokenizer.from_file(str(toks / "gpt-neo-test-tokenizer.json"))
    text = (shared_data / "corpora" / "tinyshakespeare.txt").read_text()
    lines = [ln for ln in text.split("\n") if len(ln.split()) >= 4][:50]
    a_texts, b_texts = lines[:40], lines[40:50]
    ids = [e.ids for e in llama.encode_batch(a_texts)]
    for row in PLANTED_PARQUET:
        ids[row] = neo.encode(a_texts[row]).ids
    ids[NO_SPECIALS_ROW] = llama.encode(a_texts[NO_SPECIALS_ROW], add_special_tokens=False).ids
    ids[TRUNCATED_ROW] = ids[TRUNCATED_ROW][:4]
    width = max(map(len, ids)) + 2
    # left-padded with an attention mask, as a collator would store them
    padded = [[PAD] * (width - len(x)) + x for x in ids]
    mask = [[0] * (width - len(x)) + [1] * len(x) for x in ids]
    pq.write_table(pa.table({"text": a_texts, "input_ids": padded, "attention_mask": mask}), root / "a.parquet")
    b_ids = [e.ids + [PAD] * 3 for e in llama.encode_batch(b_texts)]   # right-padded, no mask
    for row in PLANTED_JSONL:
        b_ids[row] = neo.encode(b_texts[row]).ids
    (root / "b.jsonl").write_text("".join(json.dumps({"text": t, "input_ids": i}) + "\n"
                                          for t, i in zip(b_texts, b_ids)))
    pq.write_table(pa.table({"text": ["only text here"]}), root / "c.parquet")
    cfg = root / "audit.toml"
    cfg.write_text(f'[data]\ninference_tokenizer = "{toks / "llama-test-tokenizer.json"}"\n'
                   f"drift_sample = 0\npad_id = {PAD}\n")
    return {"root": root, "paths": [str(root / n) for n in ("a.parquet", "b.jsonl", "c.parquet")], "config": cfg}


def test_planted_records_are_found_exactly(data, tmp_path):
    res = CliRunner().invoke(main, ["audit", *data["paths"], "--config", str(data["config"]),
                                    "--out", str(tmp_path), "--engine", "local"])
    assert res.exit_code == 1, res.output          # stored ids the inference tokenizer does not produce: error
    report = json.loads((tmp_path / "report.json").read_text())
    drift = report["tokenizer_drift"]
    assert {k: drift[k] for k in ("checked", "same", "same_without_special_tokens", "truncated", "differs")} == \
        {"checked": 50, "same": 44, "same_without_special_tokens": 1, "truncated": 1, "differs": 4}
    assert drift["differs_share"] == 0.08 and drift["ran"] is True and drift["sample_per_shard"] == 0
    found = {(Path(e["shard"]).name, e["key"], e["row"]) for e in drift["examples"]}
    assert found == {("a.parquet", str(r), r) for r in PLANTED_PARQUET} | \
        {("b.jsonl", str(r), r) for r in PLANTED_JSONL}
    assert all(e["first_diff"] == 0 and e["inference_ids"][0] == 1 for e in drift["examples"])
    assert drift["shards"] == [{"path": data["paths"][0], "checked": 40, "differs": 3},
                               {"path": data["paths"][1], "checked": 10, "differs": 1}]
    assert any(n.startswith("tokenizer_drift: 4 of 50 sampled records (8.0%)") for n in report["notes"])
    html = (tmp_path / "report.html").read_text()
    assert 'id="tokenizer-drift"' in html and "<script" not in html


def test_sample_size_per_shard_spans_batches(data):
    cfg = load_config(data["config"])
    cfg.check("tokenizer_drift").params["sample"] = 10   # the resolved [data] drift_sample
    result, _ = audit_shard(data["paths"][0], cfg, batch_rows=7)
    state = result.summary()["tokenizer_drift"]
    # the first 10 records: rows 3 (planted) and none of the others
    assert (state["checked"], state["differs"], state["same"]) == (10, 1, 9)
    assert [e["row"] for e in state["examples"]] == [3]


def test_no_inference_tokenizer_leaves_report_unchanged(data, tmp_path):
    report = run_audit(data["paths"][:1], load_config(None), tmp_path, options=EngineOptions("local"))
    assert "tokenizer_drift" not in report


def test_no_shard_with_ids_is_reported_as_skipped(data, tmp_path):
    report = run_audit(data["paths"][2:], load_config(data["config"]), tmp_path, options=EngineOptions("local"))
    drift = report["tokenizer_drift"]
    assert (drift["ran"], drift["checked"], drift["skipped"]) == \
        (False, 0, "no shard holds both a text field and token ids")


def test_local_and_ray_agree_with_drift(data, tmp_path, ray_session):
    cfg = load_config(data["config"])
    reports = {}
    for engine in ("local", "ray"):
        report = run_audit(data["paths"], cfg, tmp_path / engine, options=EngineOptions(engine))
        report.pop("run")
        reports[engine] = report
    assert reports["local"] == reports["ray"]
    assert reports["ray"]["tokenizer_drift"]["differs"] == 4


@pytest.mark.parametrize("data_table, message", [
    ({"drift_sample": 5}, "[data] drift_sample needs [data] inference_tokenizer"),
    ({"inference_tokenizer": "/no/such/tok.json"}, "[data] inference_tokenizer not found: /no/such/tok.json"),
    ({"inference_tokenizer": 3}, "[data] inference_tokenizer must be a path, got 3"),
])
def test_bad_drift_config_is_one_clear_error(data_table, message):
    with pytest.raises(ConfigError) as err:
        build_config({"data": data_table}, "audit.toml")
    assert str(err.value) == f"audit.toml: {message}"


@pytest.mark.parametrize("value", [-1, True, 1.5, "10"])
def test_drift_sample_must_be_a_non_negative_integer(shared_data, value):
    tok = str(shared_data / "tokenizers" / "llama-test-tokenizer.json")
    with pytest.raises(ConfigError, match=r"audit.toml: \[data\] drift_sample must be a non-negative integer"):
        build_config({"data": {"inference_tokenizer": tok, "drift_sample": value}}, "audit.toml")


def test_inference_tokenizer_relative_to_config_and_default_sample(shared_data, tmp_path):
    (tmp_path / "tok.json").write_text((shared_data / "tokenizers" / "gpt-neo-test-tokenizer.json").read_text())
    cfg_path = tmp_path / "audit.toml"
    cfg_path.write_text('[data]\ninference_tokenizer = "tok.json"\n')
    cfg = load_config(cfg_path)
    assert cfg.data == {"inference_tokenizer": str(tmp_path / "tok.json"), "drift_sample": 1000}
    (tmp_path / "broken.json").write_text("{")
    cfg_path.write_text('[data]\ninference_tokenizer = "broken.json"\n')
    with pytest.raises(ConfigError, match=r"audit.toml: \[data\] inference_tokenizer cannot be loaded: .*broken.json: "
                                          r"not valid JSON"):
        load_config(cfg_path)


def test_drifted_records_are_flags_with_their_shard_and_key(data, tmp_path):
    """Every record whose stored ids differ is a flags.parquet row (check tokenizer_drift) and counts as flagged."""
    import pyarrow.parquet as pq

    from dataaudit.pipelines.audit import run_audit

    report = run_audit(data["paths"], load_config(data["config"]), tmp_path, options=EngineOptions("local"))
    flags = pq.read_table(tmp_path / "flags.parquet").filter(pc.equal(pc.field("check"), "tokenizer_drift"))
    assert {(Path(s).name, k, r) for s, k, r in zip(*(flags[c].to_pylist() for c in ("shard", "key", "row")))} == \
        {("a.parquet", str(r), r) for r in PLANTED_PARQUET} | {("b.jsonl", str(r), r) for r in PLANTED_JSONL}
    assert set(flags["severity"].to_pylist()) == {"error"} and set(flags["value"].to_pylist()) == {0.0}
    assert report["checks"]["tokenizer_drift"]["flagged"] == 4 and report["checks"]["tokenizer_drift"]["ran"]


def test_inference_tokenizer_set_on_the_check_alone(data, shared_data, tmp_path):
    """[checks.tokenizer_drift] may carry the settings itself: the report shows the effective ones."""
    tok = str(shared_data / "tokenizers" / "llama-test-tokenizer.json")
    config = build_config({"data": {"pad_id": PAD},
                           "checks": {"tokenizer_drift": {"inference_tokenizer": tok, "sample": 0}}})
    report = run_audit(data["paths"], config, tmp_path, options=EngineOptions("local"))
    drift = report["tokenizer_drift"]
    assert (drift["inference_tokenizer"], drift["sample_per_shard"]) == (tok, 0)
    assert drift["differs"] == len(PLANTED_PARQUET) + len(PLANTED_JSONL)
