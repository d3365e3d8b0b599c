"""`dataaudit tokenizer-drift`: the real tokenizers against themselves and each other, and modified copies built in
tmp_path (padding side, normalizer, one added special token, chat template)."""
from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from dataaudit.cli import main
from dataaudit.tokenization import compare_tokenizers, load_bundle
from dataaudit.tokenization.behaviour import TextSet
from dataaudit.tokenization.probes import BUILTIN_PROBES
from dataaudit.tokenization.ragged import Ragged, compare


@pytest.fixture(scope="module")
def toks(shared_data) -> dict[str, Path]:
    folder = shared_data / "tokenizers"
    return {"llama": folder / "llama-test-tokenizer.json", "neo": folder / "gpt-neo-test-tokenizer.json"}


@pytest.fixture(scope="module")
def llama_spec(toks) -> dict:
    return json.loads(toks["llama"].read_text())


def _folder(root: Path, name: str, tokenizer_json: Path | dict, config: dict | None = None) -> Path:
    """A tokenizer folder as a user ships it: tokenizer.json (+ tokenizer_config.json)."""
    folder = root / name
    folder.mkdir()
    if isinstance(tokenizer_json, dict):
        (folder / "tokenizer.json").write_text(json.dumps(tokenizer_json))
    else:
        shutil.copy(tokenizer_json, folder / "tokenizer.json")
    if config is not None:
        (folder / "tokenizer_config.json").write_text(json.dumps(config))
    return folder


def _codes(result: dict) -> list[tuple[str, str]]:
    return [(r["level"], r["code"]) for r in result["reasons"]]


def _differing_probes(result: dict) -> list[str]:
    return [p["label"] for p in result["behaviour"]["probes"] if not p["identical"]]


# -- the real tokenizers -------------------------------------------------------------------------------------

@pytest.mark.parametrize("name, probes, tokens", [("llama", 69, 1959), ("neo", 70, 1625)])
def test_each_real_tokenizer_against_itself_is_identical(toks, tmp_path, name, probes, tokens):
    res = CliRunner().invoke(main, ["tokenizer-drift", str(toks[name]), str(toks[name]), "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    result = json.loads((tmp_path / "tokenizer_drift.json").read_text())
    assert result["verdict"] == "identical" and result["reasons"] == []
    beh = result["behaviour"]
    # 32 built-in probes + one per added/special token string of the tokenizer and the common spellings
    assert len(BUILTIN_PROBES) == 32
    assert (beh["texts"], beh["identical"], beh["differing"]) == (probes, probes, 0)
    assert beh["token_count"]["train"] == beh["token_count"]["infer"] == tokens
    assert beh["examples"] == []
    assert "verdict: identical" in res.output
    assert (tmp_path / "tokenizer_drift.html").read_text().count('class="verdict identical"') == 1


def test_llama_vs_gpt_neo_is_breaking_and_quantified(toks, tmp_path):
    res = CliRunner().invoke(main, ["tokenizer-drift", str(toks["llama"]), str(toks["neo"]), "--out", str(tmp_path)])
    assert res.exit_code == 1, res.output
    r = json.loads((tmp_path / "tokenizer_drift.json").read_text())
    assert r["verdict"] == "breaking"
    codes = [c for level, c in _codes(r) if level == "breaking"]
    assert codes == ["ids_differ", "model_params", "vocab", "merges", "added_tokens", "added_tokens", "added_tokens",
                     "normalizer", "pre_tokenizer", "post_processor", "add_bos_token", "bos_token", "unk_token"]
    assert ("compatible", "decoder") in _codes(r)
    v = r["static"]["vocab"]
    assert (v["size"], v["shared"], v["only_train"], v["only_infer"], v["id_differs"]) == \
        ({"train": 32003, "infer": 50280}, 8996, 23007, 41284, 8996)
    m = r["static"]["merges"]
    assert (m["count"], m["only_train"], m["only_infer"], m["rank_differs"], m["first_differing_rank"]) == \
        ({"train": 61249, "infer": 50009}, 52698, 41458, 8548, 0)
    added = r["static"]["added_tokens"]
    assert [t["content"] for t in added["only_train"]] == ["<unk>", "<s>", "</s>"]
    assert len(added["only_infer"]) == 25 and added["only_infer"][0]["content"] == "<|padding|>"
    assert [(c["content"], c["fields"]["id"]) for c in added["changed"]] == [
        ("|||EMAIL_ADDRESS|||", {"train": 32000, "infer": 50277}),
        ("|||PHONE_NUMBER|||", {"train": 32001, "infer": 50278}),
        ("|||IP_ADDRESS|||", {"train": 32002, "infer": 0})]
    assert r["static"]["special_tokens"]["bos"]["train"] == {"token": "<s>", "id": 1,
                                                             "source": "tokenizer.json post_processor"}
    assert r["static"]["special_tokens"]["bos"]["infer"] == {"token": None, "id": None, "source": None}
    beh = r["behaviour"]
    assert (beh["texts"], beh["differing"], beh["first_diff"]["at_position_0"]) == (70, 70, 70)
    assert (beh["token_count"]["train"], beh["token_count"]["infer"]) == (1982, 1625)
    probes = {p["label"]: p for p in beh["probes"]}
    assert (probes["ascii_sentence"]["train_tokens"], probes["ascii_sentence"]["infer_tokens"]) == (13, 10)
    assert (probes["emoji"]["byte_fallback"], probes["emoji"]["delta"]) == ({"train": 36, "infer": 0}, -12)
    # GPT-NeoX's NFC normalizer composes decomposed accents: its round trip fails there, Llama's does not
    assert probes["combining_decomposed"]["roundtrip"] == {"train": True, "infer": False}
    assert (beh["train"]["roundtrip_failures"], beh["infer"]["roundtrip_failures"]) == (0, 1)
    assert (beh["train"]["byte_fallback_tokens"], beh["infer"]["byte_fallback_rate"]) == (138, None)
    hazards = [line for line in " ".join(res.output.split()).split("hazard (")[1:]]
    assert [h.split(":")[0] for h in hazards] == ["train) no_pad", "train) special_in_text", "infer) no_pad",
                                                  "infer) special_in_text", "infer) roundtrip"]
    assert "decode(encode(x)) != x on 1 probes: combining_decomposed" in hazards[-1]
    html = (tmp_path / "tokenizer_drift.html").read_text()
    assert html.count('class="seg diff"') >= 20 and "▁quick" in html and "Ġquick" in html
    # GPT-NeoX's added tokens of 2-24 spaces are spelled out, not blank cells
    assert "<code>␠␠</code>" in html and "<code>" + "␠" * 24 + "</code>" in html and "<code>  </code>" not in html


def test_sample_shards_are_compared_and_counted(toks, tmp_path):
    shard_a, shard_b = tmp_path / "a.parquet", tmp_path / "b.jsonl"
    pq.write_table(pa.table({"id": [1, 2, 3], "text": ["first text", None, "third text"]}), shard_a)
    shard_b.write_text("\n".join(json.dumps({"content": f"line {i}"}) for i in range(5)) + "\n")
    res = CliRunner().invoke(main, ["tokenizer-drift", str(toks["neo"]), str(toks["neo"]), "--out",
                                    str(tmp_path / "o"), "--sample", str(shard_a), str(shard_b), "--max-texts", "6"])
    assert res.exit_code == 0, res.output
    beh = json.loads((tmp_path / "o" / "tokenizer_drift.json").read_text())["behaviour"]
    # 3 per shard: the null text is skipped, the JSONL shard gives its first 3 lines
    assert beh["by_source"]["sample"] == {"texts": 5, "differing": 0}
    assert beh["texts"] == 70 + 5


def test_sample_texts_make_the_diff_and_html_escapes_them(toks, tmp_path, llama_spec):
    spec = copy.deepcopy(llama_spec)
    spec["normalizer"]["normalizers"].append({"type": "Lowercase"})
    lower = tmp_path / "lower.json"
    lower.write_text(json.dumps(spec))
    shard = tmp_path / "s.parquet"
    hostile = "<script>alert('x')</script> \x1b[31m BIG"
    pq.write_table(pa.table({"text": ["all lower case", hostile]}), shard)
    res = CliRunner().invoke(main, ["tokenizer-drift", str(toks["llama"]), str(lower), "--out", str(tmp_path / "o"),
                                    "--sample", str(shard)])
    assert res.exit_code == 1, res.output
    r = json.loads((tmp_path / "o" / "tokenizer_drift.json").read_text())
    assert r["behaviour"]["by_source"]["sample"] == {"texts": 2, "differing": 1}
    assert [e["label"] for e in r["behaviour"]["examples"] if e["kind"] == "sample"] == [f"{shard}#1"]
    assert ("breaking", "normalizer") in _codes(r)
    html = (tmp_path / "o" / "tokenizer_drift.html").read_text()
    assert "<script" not in html and "&lt;script&gt;" in html and "\\x1b" in html
    assert not any(ord(c) < 32 and c not in "\t\n\r" for c in html)


# -- modified copies -----------------------------------------------------------------------------------------

def test_padding_side_alone_without_pad_token_is_compatible(toks, tmp_path):
    a = _folder(tmp_path, "a", toks["llama"], {"padding_side": "right"})
    b = _folder(tmp_path, "b", toks["llama"], {"padding_side": "left"})
    res = CliRunner().invoke(main, ["tokenizer-drift", str(a), str(b), "--out", str(tmp_path / "o")])
    assert res.exit_code == 0, res.output
    r = json.loads((tmp_path / "o" / "tokenizer_drift.json").read_text())
    assert r["verdict"] == "compatible"
    assert _codes(r) == [("compatible", "padding_side")]
    assert r["static"]["settings"]["padding_side"] == {"train": "right", "infer": "left",
                                                       "train_source": "tokenizer_config.json",
                                                       "infer_source": "tokenizer_config.json", "same": False}
    assert r["behaviour"]["differing"] == 0


def test_padding_side_with_a_pad_token_is_breaking(toks, tmp_path):
    a = _folder(tmp_path, "a", toks["llama"], {"padding_side": "right", "pad_token": "</s>"})
    b = _folder(tmp_path, "b", toks["llama"], {"padding_side": "left", "pad_token": "</s>"})
    r = compare_tokenizers(a, b)
    assert r["verdict"] == "breaking"
    assert _codes(r) == [("breaking", "padding_side")]
    assert "padding side differs (right -> left)" in r["reasons"][0]["message"]
    assert r["behaviour"]["differing"] == 0
    assert r["static"]["special_tokens"]["pad"]["train"] == {"token": "</s>", "id": 2,
                                                             "source": "tokenizer_config.json"}


def test_tokenizer_json_padding_is_a_setting_not_ids(tmp_path, llama_spec):
    pad = {"strategy": "BatchLongest", "direction": "Left", "pad_to_multiple_of": None, "pad_id": 0,
           "pad_type_id": 0, "pad_token": "<unk>"}
    left, right = copy.deepcopy(llama_spec), copy.deepcopy(llama_spec)
    left["padding"], right["padding"] = pad, {**pad, "direction": "Right"}
    a, b = _folder(tmp_path, "a", left), _folder(tmp_path, "b", right)
    r = compare_tokenizers(a, b)
    assert _codes(r) == [("breaking", "padding_side")]
    assert r["static"]["settings"]["padding_side"]["train_source"] == "tokenizer.json padding"
    # the texts are encoded one by one as the model sees them, never padded to their batch's longest
    assert r["behaviour"]["token_count"] == {**r["behaviour"]["token_count"], "train": 1959, "infer": 1959}
    assert compare_tokenizers(a, a)["verdict"] == "identical"


def test_pad_equal_eos_is_a_hazard(toks, tmp_path):
    a = _folder(tmp_path, "a", toks["neo"], {"pad_token": "<|endoftext|>", "eos_token": "<|endoftext|>"})
    r = compare_tokenizers(a, a)
    assert r["verdict"] == "identical"
    assert [h["code"] for h in r["hazards"]["infer"]][0] == "pad_is_eos"
    assert "PAD == EOS (id 50279)" in r["hazards"]["infer"][0]["message"]


def test_normalizer_change_is_breaking_and_named(toks, tmp_path, llama_spec):
    spec = copy.deepcopy(llama_spec)
    spec["normalizer"]["normalizers"].append({"type": "NFKC"})
    b = _folder(tmp_path, "b", spec)
    res = CliRunner().invoke(main, ["tokenizer-drift", str(toks["llama"]), str(b), "--out", str(tmp_path / "o")])
    assert res.exit_code == 1
    r = json.loads((tmp_path / "o" / "tokenizer_drift.json").read_text())
    assert _codes(r) == [("breaking", "ids_differ"), ("breaking", "normalizer")]
    assert r["reasons"][1]["message"] == 'normalizer differs: normalizers[2] added {"type": "NFKC"}'
    assert _differing_probes(r) == ["cjk_japanese", "combining_decomposed", "compatibility_forms", "unicode_spaces",
                                    "numbers", "math_symbols"]
    assert r["static"]["components"]["normalizer"]["changes"] == [
        {"path": "normalizers[2]", "op": "added", "train": None, "infer": {"type": "NFKC"}}]


def test_one_added_special_token_is_breaking_and_named(toks, tmp_path, llama_spec):
    spec = copy.deepcopy(llama_spec)
    spec["added_tokens"].append({"id": 32003, "content": "<|im_end|>", "single_word": False, "lstrip": False,
                                 "rstrip": False, "normalized": False, "special": True})
    b = _folder(tmp_path, "b", spec)
    r = compare_tokenizers(toks["llama"], b)
    assert r["verdict"] == "breaking"
    assert _codes(r) == [("breaking", "ids_differ"), ("breaking", "vocab"), ("breaking", "added_tokens")]
    assert r["reasons"][2]["message"] == 'added token only at inference: "<|im_end|>" (id 32003, special)'
    assert _differing_probes(r) == ["special_in_text:<|im_end|>"]
    example = r["behaviour"]["examples"][0]
    assert (example["first_diff"], example["train_tokens"], example["infer_tokens"]) == (5, 27, 17)
    assert ["<|im_end|>", 32003] in [t for s in example["aligned"] for t in s["infer"]]


def test_chat_templates_rendered_compared_and_doubled_bos_found(toks, tmp_path):
    tpl = ("{{ bos_token }}{% for m in messages %}[{{ m['role'] }}] {{ m['content'] }}\n{% endfor %}"
           "{% if add_generation_prompt %}[assistant] {% endif %}")
    a = _folder(tmp_path, "a", toks["llama"], {"chat_template": tpl})
    b = _folder(tmp_path, "b", toks["llama"], {"chat_template": tpl.replace("[assistant] ", "<|assistant|>\n")})
    r = compare_tokenizers(a, b)
    assert _codes(r) == [("breaking", "chat_template")]
    assert r["reasons"][0]["message"] == ("chat template renders the probe conversation to other text: "
                                          "model inputs first differ at token 46")
    assert r["chat_template"]["train"]["doubled_bos"] is True
    assert r["chat_template"]["train"]["ids_head"][:3] == [1, 1, 29961]
    assert "doubled_bos" in [h["code"] for h in r["hazards"]["train"]]
    only_one = compare_tokenizers(toks["llama"], a)
    assert _codes(only_one) == [("compatible", "chat_template")]
    broken = _folder(tmp_path, "c", toks["llama"], {"chat_template": "{{ raise_exception('no system role') }}"})
    r = compare_tokenizers(broken, broken)
    assert r["verdict"] == "identical"
    assert {"code": "chat_template_error", "message": "chat template does not render: no system role"} in \
        r["hazards"]["train"]


def test_add_eos_in_config_changes_model_inputs(toks, tmp_path):
    a = _folder(tmp_path, "a", toks["llama"], {"add_eos_token": False})
    b = _folder(tmp_path, "b", toks["llama"], {"add_eos_token": True})
    r = compare_tokenizers(a, b)
    assert _codes(r) == [("breaking", "add_eos_token")]
    assert "add_eos_mismatch" in [h["code"] for h in r["hazards"]["infer"]]


# -- bad input -----------------------------------------------------------------------------------------------

def test_usage_and_io_errors_exit_2_with_one_line_naming_the_file(toks, tmp_path):
    runner = CliRunner()
    out = str(tmp_path / "o")

    def run(*args):
        res = runner.invoke(main, ["tokenizer-drift", *map(str, args), "--out", out])
        assert res.exit_code == 2, res.output
        return res.output.strip().splitlines()[-1]

    assert run(tmp_path / "nope.json", toks["llama"]) == \
        f"Error: {tmp_path / 'nope.json'}: path not found (give a local tokenizer.json or a folder; " \
        "hub names are not fetched)"
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    assert run(toks["llama"], bad).startswith(f"Error: {bad}: not valid JSON")
    wrong = tmp_path / "wrong.json"
    wrong.write_text('{"model": 3}')
    assert run(wrong, toks["llama"]).startswith(f"Error: {wrong}: not a usable HF tokenizers file")
    empty = tmp_path / "empty"
    empty.mkdir()
    assert f"Error: {empty}: folder has no tokenizer.json" in run(empty, toks["llama"])
    sided = _folder(tmp_path, "sided", toks["llama"], {"padding_side": "middle"})
    assert run(sided, toks["llama"]) == \
        f"Error: {sided / 'tokenizer_config.json'}: padding_side must be 'left' or 'right', got 'middle'"
    assert run(toks["llama"], toks["llama"], "--sample", tmp_path / "missing.parquet") == \
        f"Error: {tmp_path / 'missing.parquet'}: path not found"
    numbers = tmp_path / "n.parquet"
    pq.write_table(pa.table({"x": [1, 2]}), numbers)
    assert "n.parquet: no text field" in run(toks["llama"], toks["llama"], "--sample", numbers)
    res = runner.invoke(main, ["tokenizer-drift", str(toks["llama"]), str(toks["llama"]), "extra", "--out", out])
    assert res.exit_code == 2 and "unexpected extra argument 'extra'" in res.output


# -- whole-array helpers -------------------------------------------------------------------------------------

def test_ragged_compare_exact():
    a = Ragged.from_lists([[1, 2, 3], [1, 2], [], [5], [7, 8]])
    b = Ragged.from_lists([[1, 2, 3], [1, 2, 9], [], [6], [7, 9, 9]])
    equal, first = compare(a, b)
    assert equal.tolist() == [True, False, True, False, False]
    assert first.tolist() == [-1, 2, -1, 0, 1]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.lists(st.integers(0, 3), max_size=6), st.lists(st.integers(0, 3), max_size=6)),
                max_size=12))
def test_ragged_compare_matches_python(pairs):
    a = Ragged.from_lists([p[0] for p in pairs])
    b = Ragged.from_lists([p[1] for p in pairs])
    equal, first = compare(a, b)
    for (x, y), eq, f in zip(pairs, equal.tolist(), first.tolist()):
        assert eq == (x == y)
        expected = -1 if x == y else next((i for i, (u, v) in enumerate(zip(x, y)) if u != v), min(len(x), len(y)))
        assert f == expected


def test_textset_and_bundle_loading(toks, tmp_path):
    folder = _folder(tmp_path, "f", toks["neo"], {"model_max_length": 2048, "bos_token": {"content": "<|endoftext|>"}})
    (folder / "special_tokens_map.json").write_text(json.dumps({"pad_token": "<|padding|>", "bos_token": "x"}))
    b = load_bundle(folder)
    assert b.setting("model_max_length") == 2048
    assert b.special["bos"].to_json() == {"token": "<|endoftext|>", "id": 50279, "source": "tokenizer_config.json"}
    assert b.special["pad"].to_json() == {"token": "<|padding|>", "id": 1, "source": "special_tokens_map.json"}
    assert b.byte_fallback_ids() == [] and len(load_bundle(toks["llama"]).byte_fallback_ids()) == 256
    ts = TextSet()
    ts.add("x", "probe", "p")
    assert len(ts) == 1 and np.array_equal(Ragged.from_lists([[1], []]).lengths, [1, 0])


def test_summary_prints_token_text_as_text_not_markup(tmp_path):
    """A hazard quoting '[/INST]' (rich markup syntax) crashed the summary after the reports were written."""
    import io

    from rich.console import Console

    from dataaudit.cli.tokenizer_drift import _print_summary

    side = {"tokens": 10, "roundtrip_failures": 0, "unk_rate": 0.0, "byte_fallback_rate": None}
    result = {"verdict": "compatible", "static": {"vocab": {"size": {"train": 5, "infer": 5}}},
              "behaviour": {"texts": 2, "by_source": {"probe": {"texts": 2}, "sample": {"texts": 0}}, "train": side,
                            "infer": side, "identical": 2, "texts_per_second": 100},
              "reasons": [{"level": "compatible", "code": "special_in_text", "message": "'[/INST]' is [bold]text"}],
              "hazards": {"train": [{"code": "special_in_text", "message": "'[/INST]' appears as text"}],
                          "infer": []}}
    out = io.StringIO()
    _print_summary(Console(file=out, width=200), result, tmp_path / "a.json", tmp_path / "a.html")
    printed = out.getvalue()
    assert "compatible special_in_text: '[/INST]' is [bold]text" in printed
    assert "hazard (train) special_in_text: '[/INST]' appears as text" in printed
