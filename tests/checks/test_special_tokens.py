"""The `special_tokens` check (dataaudit/checks/special_tokens.py): literal special-token strings in text.

Exact flags, values and details on hand-made texts; the tokens a real tokenizer.json contributes; the config
hooks (tokens replaced, extra_tokens added, [data] tokenizer); and no flag on the real corpora.
"""
from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dataaudit.checks import REGISTRY
from dataaudit.checks.special_tokens import token_list, tokenizer_control_tokens
from dataaudit.config import ConfigError, build_config
from dataaudit.textops.special_tokens import CHAT_SPECIAL_TOKENS, ENCODER_SPECIAL_TOKENS, SPECIAL_TOKEN_STRINGS
from dataaudit.tokenization import probes
from dataaudit.pipelines.engine import EngineOptions
from tests.checks.repetition_cases import real_corpora
from tests.paths import needs_shared, shared_file

SPEC = REGISTRY["special_tokens"]

REQUIRED = ("<|im_start|>", "<|im_end|>", "<|endoftext|>", "<|end_of_text|>", "<s>", "</s>", "<unk>", "<pad>",
            "<|eot_id|>", "<|begin_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eom_id|>", "[INST]",
            "[/INST]", "<<SYS>>", "<</SYS>>", "<|user|>", "<|assistant|>", "<|system|>", "<|end|>", "<|im_sep|>",
            "<start_of_turn>", "<end_of_turn>", "<bos>", "<eos>", "<|endofprompt|>", "<|fim_prefix|>",
            "<|fim_middle|>", "<|fim_suffix|>", "<|pad|>")


def run(rows, **params):
    arr = rows if isinstance(rows, (pa.Array, pa.ChunkedArray)) else pa.array(rows, type=pa.string())
    out = SPEC.fn(arr, **{**SPEC.params, **params})
    assert out.flagged.dtype == np.bool_ and out.flagged.shape == (len(arr),)
    assert out.value.dtype == np.float64 and out.value.shape == (len(arr),)
    return out


def details(out) -> list:
    return [None if out.detail is None else out.detail[i] for i in range(len(out.flagged))]


# ----------------------------------------------------------------------------------------------- registry

def test_registered_as_a_text_warning_with_the_shared_list():
    assert SPEC.target == "text" and SPEC.severity == "warning"
    assert SPEC.params == {"tokens": CHAT_SPECIAL_TOKENS, "extra_tokens": (), "tokenizer": None}
    assert SPEC.data == {"tokenizer": "tokenizer"}
    assert sorted(CHAT_SPECIAL_TOKENS) == sorted(REQUIRED)
    assert len(CHAT_SPECIAL_TOKENS) == len(set(CHAT_SPECIAL_TOKENS)) == 31
    # one list: the tokenizer-drift probes write the same strings (plus the encoder ones) into their texts
    assert probes.COMMON_SPECIAL_STRINGS is SPECIAL_TOKEN_STRINGS == CHAT_SPECIAL_TOKENS + ENCODER_SPECIAL_TOKENS
    SPEC.detail.format(value=2.0, **SPEC.params)
    names = list(REGISTRY)
    assert names.index("non_text_ratio") + 1 == names.index("special_tokens") < names.index("tokenizer_drift")


# --------------------------------------------------------------------------------------------- exact flags

def test_exact_flags_values_and_details():
    rows = [
        "Sure, here it is.<|im_end|>\n<|im_start|>user\nthanks<|im_end|>",      # ChatML leak
        "The story ends here.</s><s>Another one starts.",                       # SentencePiece bos/eos
        "[INST] <<SYS>>\nBe nice.\n<</SYS>>\n\nHi [/INST] Hello</s>",           # Llama-2 chat, whole
        "done<|endoftext|>",
        "<|end|> is not <|endoftext|> and <|end_of_text|> differs again",        # prefixes never shadow
        "<start_of_turn>model\nok<end_of_turn><eos>",                           # Gemma
        "fim: <|fim_prefix|>a<|fim_suffix|>c<|fim_middle|>b",
        "x" + "<|eot_id|>" * 7,
        "plain text with <b>html</b>, a <span>tag</span>, <<SYS> broken, [inst] lower, < s >, <S>",
        "<|im_end", "im_end|>", "<eos_token>", "[INST", "",
        None,
    ]
    out = run(rows)
    assert out.value.tolist() == [3, 2, 5, 1, 3, 3, 3, 7, 0, 0, 0, 0, 0, 0, 0]
    assert out.flagged.tolist() == [v > 0 for v in out.value]
    assert details(out)[:8] == [
        "special token '<|im_end|>' x2, '<|im_start|>'",
        "special token '</s>', '<s>'",
        "special token '[INST]', '<<SYS>>', '<</SYS>>', '[/INST]', '</s>'",
        "special token '<|endoftext|>'",
        "special token '<|end|>', '<|endoftext|>', '<|end_of_text|>'",
        "special token '<start_of_turn>', '<end_of_turn>', '<eos>'",
        "special token '<|fim_prefix|>', '<|fim_suffix|>', '<|fim_middle|>'",
        "special token '<|eot_id|>' x7",
    ]
    assert details(out)[8:] == [None] * 7


def test_every_default_token_alone_and_glued():
    rows = [f"text{t}glued" for t in CHAT_SPECIAL_TOKENS] + [f"{t} {t}" for t in CHAT_SPECIAL_TOKENS]
    out = run(rows)
    n = len(CHAT_SPECIAL_TOKENS)
    assert out.value.tolist() == [1] * n + [2] * n
    assert details(out) == [f"special token '{t}'" for t in CHAT_SPECIAL_TOKENS] + \
        [f"special token '{t}' x2" for t in CHAT_SPECIAL_TOKENS]


def test_detail_names_five_tokens_then_counts_the_rest():
    text = "".join(CHAT_SPECIAL_TOKENS[:8]) + CHAT_SPECIAL_TOKENS[3]
    out = run([text])
    t = CHAT_SPECIAL_TOKENS
    assert out.value[0] == 9
    assert out.detail[0] == (f"special token '{t[3]}' x2, '{t[0]}', '{t[1]}', '{t[2]}', '{t[4]}', +3 more")


def test_array_types_and_unicode():
    rows = ["训练数据<|im_end|>结束", "é<s>", None, "", "🚀</s>🚀</s>"]
    expected = run(rows)
    assert expected.value.tolist() == [1, 1, 0, 0, 2]
    for arr in (pa.array(rows, type=pa.large_string()), pa.chunked_array([pa.array(rows[:2]), pa.array(rows[2:])]),
                pa.array(rows).dictionary_encode(), pa.array(rows).cast(pa.string_view())):
        out = run(arr)
        assert out.value.tolist() == expected.value.tolist()
        assert details(out) == details(expected)
    assert not run(pa.array([], type=pa.string())).flagged.any()
    assert not run(pa.array([None, None], type=pa.null())).flagged.any()


# ------------------------------------------------------------------------------------------- params, config

def test_tokens_replace_and_extra_tokens_add():
    rows = ["a <|im_end|> b", "a <turn> b", "a <|my_eos|> b <|my_eos|>", "a $$END$$ b"]
    assert run(rows).value.tolist() == [1, 0, 0, 0]
    assert run(rows, tokens=["<turn>"]).value.tolist() == [0, 1, 0, 0]
    assert run(rows, extra_tokens=["<|my_eos|>", "$$END$$"]).value.tolist() == [1, 0, 2, 1]
    out = run(rows, tokens=[], extra_tokens=[])
    assert not out.flagged.any() and out.detail is None
    assert token_list(["<a>", "", "<a>"], ["<b>"]) == ("<a>", "<b>")       # empties dropped, each once
    with pytest.raises(TypeError):
        token_list("<a>")


def test_config_replaces_or_extends_the_list():
    cfg = build_config({"checks": {"special_tokens": {"tokens": ["<x>"], "extra_tokens": ["<y>"]}}})
    params = cfg.check("special_tokens").params
    assert params["tokens"] == ["<x>"] and params["extra_tokens"] == ["<y>"] and params["tokenizer"] is None
    out = run(["<x><y>", "<|im_end|>"], **params)
    assert out.value.tolist() == [2, 0]


# ----------------------------------------------------------------------------------------------- tokenizer

@needs_shared
@pytest.mark.parametrize("name, contributed", [
    # special: <|padding|>, <|endoftext|>; left out: 22 runs of spaces and the three |||PII||| placeholders
    ("gpt-neo-test-tokenizer.json", ("<|padding|>", "<|endoftext|>")),
    # special: <unk> <s> </s>; left out: |||EMAIL_ADDRESS||| |||PHONE_NUMBER||| |||IP_ADDRESS|||
    ("llama-test-tokenizer.json", ("<unk>", "<s>", "</s>")),
])
def test_real_tokenizers_contribute_exactly(name, contributed, tmp_path):
    path = shared_file(f"tokenizers/{name}")
    assert tokenizer_control_tokens(path) == contributed
    added = [t["content"] for t in json.loads(path.read_text())["added_tokens"]]
    assert len(added) == (28 if "neo" in name else 6)
    # through the config: [data] tokenizer fills the check's `tokenizer` parameter
    cfg = build_config({"data": {"tokenizer": str(path)}})
    params = cfg.check("special_tokens").params
    assert params["tokenizer"] == str(path)
    rows = ["x<|padding|>y", "x<unk>y", "|||EMAIL_ADDRESS||| and |||IP_ADDRESS|||", "a      b", "<|endoftext|>"]
    out = run(rows, **params)
    assert out.value.tolist() == ([1, 1, 0, 0, 1] if "neo" in name else [0, 1, 0, 0, 1])
    # a folder holding tokenizer.json works too
    (tmp_path / "tokenizer.json").write_text(path.read_text())
    assert tokenizer_control_tokens(tmp_path) == contributed


def test_which_added_tokens_count(tmp_path):
    added = [("<|user_turn|>", True), ("<think>", False), ("</think>", False), ("[PAD]", False),
             ("<<TOOL>>", False), ("|||EMAIL_ADDRESS|||", False), ("   ", True), ("    ", False),
             ("USER", True), ("hello", False), ("<b r>", False), ("▁<PRE>", True), ("<|user_turn|>", False)]
    spec = {"version": "1.0", "added_tokens": [{"id": i, "content": c, "special": s} for i, (c, s) in enumerate(added)]}
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(spec))
    assert tokenizer_control_tokens(path) == ("<|user_turn|>", "<think>", "</think>", "[PAD]", "<<TOOL>>", "▁<PRE>")
    out = run(["<think>plan</think> USER hello", "[PAD][PAD]", "no <b r> here"], tokenizer=str(path))
    assert out.value.tolist() == [2, 2, 0]
    assert out.detail[0] == "special token '<think>', '</think>'"


def test_unreadable_tokenizer_is_a_config_error(tmp_path):
    bad = tmp_path / "tokenizer.json"
    bad.write_text("{not json")
    with pytest.raises(ConfigError, match="tokenizer .*tokenizer.json cannot be loaded"):  # the config loads it first
        build_config({"data": {"tokenizer": str(bad), "vocab_size": 100}})
    bad.write_text(json.dumps({"added_tokens": "nope"}))
    with pytest.raises(ConfigError, match="tokenizer .*tokenizer.json cannot be loaded"):  # the config loads it first
        build_config({"data": {"tokenizer": str(bad), "vocab_size": 100}})


def test_audit_reports_the_check(tmp_path):
    from dataaudit.pipelines.audit import run_audit

    shard = tmp_path / "s.parquet"
    pq.write_table(pa.table({"text": ["fine text here", "leak <|im_end|> and </s>", "tool <call>", None]}), shard)
    cfg = build_config({"checks": {"special_tokens": {"extra_tokens": ["<call>"]}}})
    report = run_audit([str(shard)], cfg, tmp_path / "out", options=EngineOptions("local"))
    assert report["checks"]["special_tokens"]["flagged"] == 2
    found = [(e["row"], e["value"], e["detail"]) for e in report["examples"]["special_tokens"]]
    assert found == [(1, 2.0, "special token '<|im_end|>', '</s>'"), (2, 1.0, "special token '<call>'")]


# ------------------------------------------------------------------------------------------------ real data

@needs_shared
def test_real_corpora_hold_no_special_tokens():
    from tests.paths import SHARED_DATA

    corpora = real_corpora(SHARED_DATA)
    corpora["tinyshakespeare lines"] = shared_file("corpora/tinyshakespeare.txt").read_text().splitlines()
    arc = [json.loads(line) for line in shared_file("benchmarks/arc_challenge_test.jsonl").read_text().splitlines()]
    corpora["arc"] = [r["question"]["stem"] + " " + " ".join(c["text"] for c in r["question"]["choices"])
                      for r in arc]
    for tok in (None, "llama-test-tokenizer.json", "gpt-neo-test-tokenizer.json"):
        path = str(shared_file(f"tokenizers/{tok}")) if tok else None
        for label, docs in corpora.items():
            assert int(run(docs, tokenizer=path).flagged.sum()) == 0, (label, tok)
