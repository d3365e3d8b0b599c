"""End to end: a tokenized SFT shard (input_ids, attention_mask, labels) audited through the CLI: exactly the
planted trained-token defects are flagged, on the labels field; the fields line names the token labels; with a
real tokenizer, eos_never_trained runs and the shard carries its decoded trained example (report.json and the
HTML page, escaped)."""
from __future__ import annotations

import json
import shutil

import pyarrow as pa
import pyarrow.parquet as pq
from click.testing import CliRunner

from dataaudit.cli import main
from tests.paths import shared_file

LLAMA = "tokenizers/llama-test-tokenizer.json"
EOS = 2
# the llama test tokenizer's ids of "User: what is two plus two?\nAssistant:" and " Four."
PROMPT = [4911, 29901, 825, 338, 1023, 2298, 1023, 29973, 13, 7900, 22137, 29901]
REPLY = [29871, 12458, 29889]
IGN = -100


def _record(labels_of):
    ids = PROMPT + REPLY + [EOS]
    return {"input_ids": ids, "attention_mask": [1] * len(ids), "labels": labels_of(ids)}


ROWS = [
    _record(lambda ids: [IGN] * len(PROMPT) + REPLY + [EOS]),                     # 0 fine
    _record(lambda ids: [IGN] * len(ids)),                                         # 1 trains nothing
    _record(lambda ids: [IGN] * len(PROMPT) + REPLY + [EOS, IGN]),                 # 2 one label too many
    _record(lambda ids: [IGN] * len(PROMPT) + [99999] + REPLY[1:] + [EOS]),        # 3 label past the vocabulary
    _record(lambda ids: [IGN] * len(PROMPT) + REPLY + [IGN]),                      # 4 eos not trained
    {"input_ids": PROMPT + REPLY + [EOS], "attention_mask": [1] * 16,              # 5 trains nothing either
     "labels": [IGN] * 16},
]
EXPECTED = {(1, "no_trainable_tokens", "labels", 0.0), (2, "labels_misaligned", "labels", 1.0),
            (3, "label_id_out_of_range", "labels", 99999.0), (4, "eos_never_trained", "labels", 3.0),
            (5, "no_trainable_tokens", "labels", 0.0)}


def _shard(tmp_path):
    folder = tmp_path / "data"
    folder.mkdir()
    pq.write_table(pa.Table.from_pylist(ROWS), folder / "sft.parquet")
    return folder


def _tokenizer(tmp_path):
    """The llama test tokenizer as a folder whose config names </s> its eos."""
    tok = tmp_path / "tok"
    tok.mkdir()
    shutil.copy(shared_file(LLAMA), tok / "tokenizer.json")
    (tok / "tokenizer_config.json").write_text(json.dumps({"bos_token": "<s>", "eos_token": "</s>"}))
    return tok


def _audit(folder, out, config=None):
    args = ["audit", str(folder), "--out", str(out), "--engine", "local"]
    result = CliRunner().invoke(main, args + (["--config", str(config)] if config else []))
    flags = pq.read_table(out / "flags.parquet").to_pylist()
    return result, json.loads((out / "report.json").read_text()), flags


def test_audit_flags_exactly_the_planted_rows_on_the_labels_field(tmp_path):
    folder = _shard(tmp_path)
    cfg = tmp_path / "audit.toml"
    cfg.write_text("[data]\nvocab_size = 32003\neos_token_id = 2\n")
    result, report, flags = _audit(folder, tmp_path / "out", cfg)
    assert result.exit_code == 1, result.output      # errors planted
    assert {(f["row"], f["check"], f["field"], f["value"]) for f in flags} == EXPECTED
    shard = report["shards"][0]
    assert shard["fields"] == {"input_ids": ["input_ids"], "attention_mask": ["attention_mask"],
                               "token_labels": ["labels"]}
    assert shard["unchecked"] == {} and shard["trained_example"] is None   # no tokenizer: no example
    assert "token_labels = labels (1 shard)" in result.output
    assert {n: c["flagged"] for n, c in report["checks"].items() if n in (
        "no_trainable_tokens", "labels_misaligned", "label_id_out_of_range", "eos_never_trained")} == {
        "no_trainable_tokens": 2, "labels_misaligned": 1, "label_id_out_of_range": 1, "eos_never_trained": 1}
    details = {f["check"]: f["detail"] for f in flags}
    assert details["label_id_out_of_range"] == "trained label id 99999 outside [0, 32003)"
    assert details["labels_misaligned"] == "+1 labels/mask positions vs the token ids"


def test_without_end_tokens_eos_never_trained_is_not_run_and_says_why(tmp_path):
    folder = _shard(tmp_path)
    result, report, flags = _audit(folder, tmp_path / "out")
    assert report["checks"]["eos_never_trained"]["skipped"] == "not configured: end_token_ids"
    assert report["checks"]["label_id_out_of_range"]["skipped"] == "not configured: vocab_size"
    assert "eos_never_trained" in result.output and "not configured: end_token_ids" in result.output
    assert {(f["row"], f["check"]) for f in flags} == {(1, "no_trainable_tokens"), (2, "labels_misaligned"),
                                                       (5, "no_trainable_tokens")}


def test_with_a_real_tokenizer_eos_is_known_and_the_trained_example_is_decoded(tmp_path):
    folder = _shard(tmp_path)
    tok = _tokenizer(tmp_path)
    cfg = tmp_path / "audit.toml"
    cfg.write_text(f"[data]\ntokenizer = {json.dumps(str(tok))}\n")
    result, report, flags = _audit(folder, tmp_path / "out", cfg)
    assert report["config"]["data"]["eos_token_id"] == [2] and report["config"]["data"]["vocab_size"] == 32003
    assert {(f["row"], f["check"], f["field"], f["value"]) for f in flags} == EXPECTED
    assert report["shards"][0]["trained_example"] == {
        "record": 0, "field": "input_ids", "text": "User: what is two plus two?\nAssistant:⟦ Four. </s>⟧"}
    page = (tmp_path / "out" / "report.html").read_text()
    assert "User: what is two plus two?\nAssistant:⟦ Four. &lt;/s&gt;⟧" in page
