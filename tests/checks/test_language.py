"""Language checks (dataaudit.checks.language): unexpected_language, language_mismatch and language_mix on
hand-written English, Chinese, French and code-mixed texts and chat records; `[data] languages` validation; skip
reasons. The model (pycld2, the `language` extra) is optional: the tests that need it skip without it."""
from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pytest
from click.testing import CliRunner

from dataaudit.audit.plan import resolve_plan
from dataaudit.checks import REGISTRY
from dataaudit.checks.language_id import identify, script_pass
from dataaudit.cli import main
from dataaudit.config import ConfigError, build_config
from dataaudit.extras import available
from tests.checks.chat_shards import audit, msg, write

needs_model = pytest.mark.skipif(not available("pycld2"),
                                 reason="pycld2 is not installed: pip install 'dataaudit[language]'")
LANGS = {"data": {"languages": ["en", "zh"]}}
W = "warning"

EN = "The quick brown fox jumps over the lazy dog, and then it runs back to the barn for the night."
ZH = "我需要为客户生成一张发票，他购买了两个苹果和三根香蕉，请帮我计算总价。"
ZH_TERMS = "请使用 pandas 的 DataFrame.groupby 方法按照城市分组，然后计算每个城市的平均收入。"
FR = "Le renard brun rapide saute par-dessus le chien paresseux, puis il retourne à la grange pour la nuit."
DE = "Der schnelle braune Fuchs springt über den faulen Hund und läuft danach zurück in die Scheune."
EN_CODE = ("Here is how you can read the file and print each line of it:\n```python\nwith open('data.txt') as f:\n"
           "    for line in f:\n        print(line.strip())\n```\nThis closes the file for you when the block ends.")
CODE_ONLY = "```python\ndef add(a, b):\n    return a + b\n\nprint(add(2, 3))\n```"
SHORT = "Merci beaucoup !"


def test_the_script_pre_pass_decides_cjk_and_plain_english_without_the_model():
    code, letters = script_pass(pa.array([EN, ZH, ZH_TERMS, FR, SHORT, None, "これは日本語のテキストです。ひらがなとカタカナと漢字で書かれています。",
                                             "한국어 문장입니다 오늘은 날씨가 좋습니다 정말"]))
    assert code.tolist() == ["en", "zh", "zh", "?", "", "", "ja", "ko"]
    assert letters[4] < 20 and letters[5] == 0


@needs_model
def test_identify_every_language_and_code_is_not_judged():
    code, _ = identify(pa.array([EN, ZH, ZH_TERMS, FR, DE, EN_CODE, CODE_ONLY, SHORT, None]))
    assert code.tolist() == ["en", "zh", "zh", "fr", "de", "en", "", "", ""]


@needs_model
def test_the_model_reads_a_repeated_text_once_and_only_its_first_max_chars(monkeypatch):
    import pycld2
    read = []
    real = pycld2.detect
    monkeypatch.setattr(pycld2, "detect", lambda t, **kw: read.append(t) or real(t, **kw))
    long_fr = FR + " " + DE * 5          # French first, then German: the first 120 characters decide
    code, _ = identify(pa.array([FR, DE, FR, long_fr, FR]), max_chars=120)
    assert code.tolist() == ["fr", "de", "fr", "fr", "fr"]
    assert read == [FR.encode(), DE.encode(), long_fr[:120].encode()]


@needs_model
def test_unexpected_language_flags_exactly_the_other_languages(tmp_path):
    path = write(tmp_path / "t.parquet", {"text": [EN, ZH, FR, ZH_TERMS, EN_CODE, CODE_ONLY, SHORT, DE]})
    summary, flags = audit(path, LANGS)
    got = [(r["row"], r["check"]) for r in flags.to_pylist() if r["check"] == "unexpected_language"]
    assert got == [(2, "unexpected_language"), (7, "unexpected_language")]
    details = {r["row"]: r["detail"] for r in flags.to_pylist() if r["check"] == "unexpected_language"}
    assert details[2].startswith("language fr (expected en, zh; ")
    assert details[7].startswith("language de (expected en, zh; ")
    mix = summary["language_mix"]
    assert mix == {"texts": 8, "undetermined": 2, "short": 2, "languages": {"en": 2, "zh": 2, "de": 1, "fr": 1}}


@needs_model
def test_chat_turns_are_judged_one_by_one_and_replies_against_their_question(tmp_path):
    rows = [
        [msg("user", EN), msg("assistant", EN)],                                 # 0 clean
        [msg("user", ZH), msg("assistant", EN)],                                 # 1 reply in English to Chinese
        [msg("user", ZH_TERMS), msg("assistant", ZH)],                           # 2 clean: zh with English terms
        [msg("user", EN), msg("assistant", CODE_ONLY)],                          # 3 code-only reply: not judged
        [msg("user", EN), msg("assistant", FR)],                                 # 4 French reply: both checks
        [msg("system", FR), msg("user", EN), msg("assistant", EN_CODE)],         # 5 French system prompt
        [msg("user", SHORT), msg("assistant", ZH)],                              # 6 short question: not judged
        [msg("user", EN), msg("assistant", EN), msg("user", ZH), msg("assistant", ZH)],   # 7 each answers its own
        [msg("user", ZH), msg("assistant", ZH), msg("user", EN), msg("assistant", ZH)],   # 8 the last reply
    ]
    summary, flags = audit(write(tmp_path / "c.parquet", {"messages": rows}), LANGS)
    lang = [r for r in flags.to_pylist() if r["check"] in ("unexpected_language", "language_mismatch")]
    assert sorted((r["row"], r["field"], r["check"]) for r in lang) == [
        (1, "messages[1].role", "language_mismatch"),
        (4, "messages[1].content", "unexpected_language"),
        (4, "messages[1].role", "language_mismatch"),
        (5, "messages[0].content", "unexpected_language"),
        (8, "messages[3].role", "language_mismatch"),
    ]
    detail = {r["row"]: r["detail"] for r in lang if r["check"] == "language_mismatch"}
    assert detail[1] == "turn 1 is en, the user turn 0 it answers is zh"
    assert detail[8] == "turn 3 is zh, the user turn 2 it answers is en"
    assert all(r["severity"] == W for r in lang)
    mix = summary["language_mix"]
    assert mix == {"texts": 23, "undetermined": 2, "short": 2, "languages": {"en": 10, "zh": 9, "fr": 2}}


@needs_model
def test_the_report_has_a_language_mix_section_and_a_note(tmp_path):
    a = tmp_path / "a.jsonl"
    a.write_text("".join(json.dumps({"text": t}) + "\n" for t in (EN, EN, ZH, SHORT)))
    b = tmp_path / "b.jsonl"
    b.write_text("".join(json.dumps({"text": t}) + "\n" for t in (FR, ZH)))
    cfg = tmp_path / "c.toml"
    cfg.write_text('[data]\nlanguages = ["en", "zh"]\n')
    res = CliRunner().invoke(main, ["audit", str(a), str(b), "--out", str(tmp_path / "out"), "--engine", "local",
                                    "--config", str(cfg)])
    assert res.exit_code == 0, res.output      # warnings only
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    mix = report["language_mix"]
    assert mix["texts"] == 6 and mix["languages"] == {"en": 2, "zh": 2, "fr": 1}
    assert mix["undetermined"] == 1 and mix["share_undetermined"] == round(1 / 6, 4)
    assert mix["expected"] == ["en", "zh"]
    assert [(s["path"].rsplit("/", 1)[-1], s["texts"], s["languages"]) for s in mix["shards"]] == [
        ("a.jsonl", 4, {"en": 2, "zh": 1}), ("b.jsonl", 2, {"fr": 1, "zh": 1})]
    assert "language_mix: 6 texts: en 33.3%, zh 33.3%, fr 16.7%; undetermined 16.7% (short or unknown)" \
        in report["notes"]
    page = (tmp_path / "out" / "report.html").read_text()
    assert '<h2 id="language-mix">Language mix</h2>' in page and "<th>fr</th>" in page


def test_languages_unset_skips_the_three_checks():
    plan = resolve_plan(pa.schema([("text", pa.string())]), build_config({}))
    assert plan.skipped["unexpected_language"] == plan.skipped["language_mix"] == "not configured: languages"
    assert plan.skipped["language_mismatch"] == "no conversation field in this shard"
    turns = pa.list_(pa.struct([("role", pa.string()), ("content", pa.string())]))
    plan = resolve_plan(pa.schema([("messages", turns)]), build_config({}))
    for name in ("unexpected_language", "language_mismatch", "language_mix"):
        assert plan.skipped[name] == "not configured: languages"


def test_a_missing_model_package_is_a_skip_reason_with_the_install(monkeypatch):
    from dataaudit.checks import runnable

    monkeypatch.setattr(runnable, "available", lambda module: module != "pycld2")
    plan = resolve_plan(pa.schema([("text", pa.string())]), build_config(LANGS))
    assert plan.skipped["unexpected_language"] == \
        "needs pycld2, which is not installed: pip install 'dataaudit[language]'"
    assert plan.skipped["language_mix"] == plan.skipped["unexpected_language"]
    assert REGISTRY["language_mismatch"].needs == "pycld2"


@pytest.mark.parametrize("value, message", [
    (["en", "english"], "[data] languages: 'english' is not an ISO 639-1 code"),
    (["EN"], "[data] languages: 'EN' is not an ISO 639-1 code"),
    ([], "[data] languages must be a list of ISO 639-1 codes"),
    (5, "[data] languages must be a list of ISO 639-1 codes"),
])
def test_bad_languages_are_a_config_error(value, message):
    with pytest.raises(ConfigError, match=r"^<config>: " + message.replace("[", r"\[").replace("]", r"\]")):
        build_config({"data": {"languages": value}})


def test_a_single_language_is_a_list_of_one():
    assert build_config({"data": {"languages": "en"}}).check("unexpected_language").params["languages"] == ["en"]


def test_a_bad_language_code_is_exit_2_one_line(tmp_path):
    shard = tmp_path / "s.jsonl"
    shard.write_text(json.dumps({"text": EN}) + "\n")
    cfg = tmp_path / "c.toml"
    cfg.write_text('[data]\nlanguages = ["en", "chinese"]\n')
    res = CliRunner().invoke(main, ["audit", str(shard), "--out", str(tmp_path / "out"), "--engine", "local",
                                    "--config", str(cfg)])
    assert res.exit_code == 2
    (line,) = [ln for ln in res.output.splitlines() if ln.strip()]
    assert line == (f"Error: {cfg}: [data] languages: 'chinese' is not an ISO 639-1 code (two lowercase letters: "
                    "en, zh, fr, ...)")


def test_short_and_null_texts_are_not_judged_even_without_the_model():
    code, letters = identify(pa.array([SHORT, None, "", "12345 67890 !!!"]))
    assert code.tolist() == ["", "", "", ""] and np.all(letters < 20)
