"""Dataset-level preference checks (issue 30): pair_stats (the length bias of chosen vs rejected, per shard and in
total) and contradictory_preference (the same prompt with the preference reversed, within a shard and across
shards; KTO: the same prompt and reply with opposite labels)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from dataaudit.audit.report import build_report
from dataaudit.config import build_config
from tests.checks.chat_shards import audit
from tests.paths import shared_file

FLAG_KEYS = ("row", "check", "field", "value", "detail")


def _jsonl(path: Path, records: list[dict]) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return str(path)


def _text(tag: str, n: int) -> str:
    """A reply of exactly n characters, starting with `tag` (distinct replies, no trailing blank)."""
    return (tag + " " + "lorem ipsum dolor sit amet " * (n // 10 + 2))[:n].rstrip().ljust(n, "x")


def _pair(i: int, chosen: int, rejected: int, prompt: str | None = None) -> dict:
    return {"prompt": prompt or f"Question number {i}?", "chosen": _text(f"yes{i}", chosen),
            "rejected": _text(f"no{i}", rejected)}


def _report(paths: list[str], config: dict | None = None, **kw) -> tuple[dict, list]:
    """(report.json's content, every shard's flags as (row, check, field, value, detail) of the given checks)."""
    cfg = build_config(config or {})
    summaries, flags = [], []
    for p in paths:
        summary, table = audit(p, config, **kw)
        summaries.append(summary)
        flags.append(table)
    return build_report(summaries, cfg, {}), flags


def _rows(table, check: str) -> list[tuple]:
    got = [tuple(r[k] for k in FLAG_KEYS) for r in table.to_pylist() if r["check"] == check]
    return sorted(got)


# ---------------------------------------------------------------------------------------------- pair_stats

def _stats_shards(tmp_path: Path) -> list[str]:
    # a: ten pairs whose chosen reply is twice as long (40 vs 20 characters)
    a = _jsonl(tmp_path / "a.jsonl", [_pair(i, 40, 20) for i in range(10)])
    # b: a chosen reply half as long, two of the same length, and one with an empty rejected reply (not measured)
    b = _jsonl(tmp_path / "b.jsonl", [_pair(10, 20, 40), _pair(11, 30, 30), _pair(12, 25, 25),
                                      {**_pair(13, 30, 30), "rejected": "  "}])
    return [a, b]


def test_text_helper_lengths():
    assert [len(_text("yes1", n)) for n in (20, 25, 30, 40)] == [20, 25, 30, 40]


def test_pair_stats_per_shard_and_total(tmp_path):
    a, b = _stats_shards(tmp_path)
    report, flags = _report([a, b])
    stats = report["pair_stats"]
    assert {k: v for k, v in stats.items() if k != "shards"} == {
        "pairs": 13, "unmeasured": 1,
        "share_chosen_longer": round(10 / 13, 4),                 # 0.7692
        "share_rejected_longer": round(1 / 13, 4),                # 0.0769
        "chars_ratio": round((400 + 20 + 30 + 25) / (200 + 40 + 30 + 25), 4),   # 475 / 295 = 1.6102
        "geometric_mean_ratio": round(2 ** ((10 * 1 - 1) / 13), 4),             # 2 ** (9 / 13) = 1.6154
        "length_bias": False,
        "thresholds": {"high": 0.9, "low": 0.1, "min_pairs": 10},
    }
    assert stats["shards"] == [
        {"path": a, "pairs": 10, "unmeasured": 0, "share_chosen_longer": 1.0, "share_rejected_longer": 0.0,
         "chars_ratio": 2.0, "geometric_mean_ratio": 2.0},
        {"path": b, "pairs": 3, "unmeasured": 1, "share_chosen_longer": 0.0, "share_rejected_longer": 0.3333,
         "chars_ratio": round(75 / 95, 4), "geometric_mean_ratio": round(2 ** (-1 / 3), 4)},
    ]
    assert [n for n in report["notes"] if n.startswith("pair_stats")] == []
    assert report["checks"]["pair_stats"]["flagged"] == 0 and report["checks"]["pair_stats"]["severity"] == "info"
    assert all(_rows(t, "pair_stats") == [] for t in flags)


def test_pair_stats_length_bias_note(tmp_path):
    """Over `high` (here 0.75) with at least `min_pairs` pairs: a note, never a flag."""
    a, b = _stats_shards(tmp_path)
    report, flags = _report([a, b], {"checks": {"pair_stats": {"high": 0.75}}})
    assert report["pair_stats"]["length_bias"] is True
    assert [n for n in report["notes"] if n.startswith("pair_stats")] == [
        "pair_stats: the chosen reply is longer than the rejected one in 76.9% of 13 pairs (chosen/rejected "
        "characters 1.61, geometric mean of the per-pair ratios 1.62): a reward model can learn \"the longer reply "
        "wins\" (length bias), not quality"]
    assert all(_rows(t, "pair_stats") == [] for t in flags)
    # the shard alone is 100% but under min_pairs=11: no note
    alone, _ = _report([a], {"checks": {"pair_stats": {"min_pairs": 11}}})
    assert alone["pair_stats"]["share_chosen_longer"] == 1.0 and alone["pair_stats"]["length_bias"] is False


def test_pair_stats_shorter_note(tmp_path):
    p = _jsonl(tmp_path / "short.jsonl", [_pair(i, 20, 60) for i in range(10)])
    report, _ = _report([p])
    assert report["pair_stats"]["share_chosen_longer"] == 0.0 and report["pair_stats"]["chars_ratio"] == 0.3333
    assert [n for n in report["notes"] if n.startswith("pair_stats")] == [
        "pair_stats: the chosen reply is shorter than the rejected one in 100.0% of 10 pairs (chosen/rejected "
        "characters 0.33, geometric mean of the per-pair ratios 0.33): a reward model can learn \"the shorter reply "
        "wins\" (length bias), not quality"]


# ---------------------------------------------------------------------------------------------- contradictions

A = "Paris is the capital of France, on the Seine."
B = "I am not sure which city you mean by that."
C = "Madrid is the capital of Spain."
D = "Spain has no capital city at all."
E = "Water boils at 100 degrees Celsius at sea level."
F = "Water boils at 50 degrees Celsius everywhere."


def _p(prompt, chosen, rejected):
    return {"prompt": prompt, "chosen": chosen, "rejected": rejected}


def _contra_shards(tmp_path: Path) -> tuple[str, str]:
    first = _jsonl(tmp_path / "a.jsonl", [
        _p("Capital of France?", A, B),               # 0
        _p("Capital of Spain?", C, D),                # 1
        _p("capital of  FRANCE?", B.upper(), A),      # 2 reverses 0 (whitespace and case normalized)
        _p("Capital of France?", "  " + A, B),        # 3 repeats 0, so reverses 2
        _p("Capital of Germany?", B, A),              # 4 the same replies, another prompt: none
        _p("Capital of France?", A, A),               # 5 no preference (pair_identical): left out
    ])
    second = _jsonl(tmp_path / "b.jsonl", [
        _p("Capital of Spain?", D, C),                # 0 reverses a.jsonl row 1 (across shards)
        _p("Boiling point?", E, F),                   # 1
        _p("Boiling point?", F, E),                   # 2 reverses 1 (within this shard)
        _p("Capital of France?", B, A),               # 3 reverses a.jsonl row 0 (across shards)
    ])
    return first, second


@pytest.mark.parametrize("batch_rows", [4096, 1])
def test_contradictions_within_and_across_shards(tmp_path, batch_rows):
    first, second = _contra_shards(tmp_path)
    report, (fa, fb) = _report([first, second], batch_rows=batch_rows)
    assert _rows(fa, "contradictory_preference") == [
        (2, "contradictory_preference", "chosen", 0.0,
         "row 0 prefers the opposite: the same prompt with chosen and rejected swapped"),
        (3, "contradictory_preference", "chosen", 2.0,
         "row 2 prefers the opposite: the same prompt with chosen and rejected swapped")]
    assert _rows(fb, "contradictory_preference") == [
        (2, "contradictory_preference", "chosen", 1.0,
         "row 1 prefers the opposite: the same prompt with chosen and rejected swapped")]
    section = report["contradictory_preference"]
    assert section == {
        "severity": "warning", "shards": 2, "records": 10, "keyed": 9, "contradictions": 5,
        "within_shards": 3, "across_shards": 2,
        "examples_within_shards": [{"shard": first, "row": 2, "opposite_row": 0},
                                   {"shard": first, "row": 3, "opposite_row": 2},
                                   {"shard": second, "row": 2, "opposite_row": 1}],
        "examples_across_shards": [{"first": {"shard": first, "row": 1}, "second": {"shard": second, "row": 0}},
                                   {"first": {"shard": first, "row": 0}, "second": {"shard": second, "row": 3}}],
    }
    assert report["checks"]["contradictory_preference"]["flagged"] == 3
    assert [n for n in report["notes"] if n.startswith("contradictory_preference")] == [
        f"contradictory_preference: 5 preferences reverse an earlier one (same prompt, preference reversed; 3 "
        f"records within a shard, 2 distinct preferences across shards); e.g. {first} row 2 vs row 0; {first} row 3 vs row 2; "
        f"{second} row 0 vs {first} row 1; {second} row 3 vs {first} row 0"]
    assert [e["row"] for e in report["examples"]["contradictory_preference"]] == [2, 3, 2]


def test_contradiction_severity_is_configurable(tmp_path):
    first, _ = _contra_shards(tmp_path)
    report, (fa,) = _report([first], {"checks": {"contradictory_preference": {"severity": "error"}}})
    assert report["contradictory_preference"]["severity"] == "error"
    assert [r["severity"] for r in fa.to_pylist() if r["check"] == "contradictory_preference"] == ["error", "error"]


def test_contradiction_in_conversation_layouts(tmp_path):
    """LLaMA-Factory ranking (a prompt conversation, one-turn sides): the flag names the chosen turn; a prompt
    whose role differs is another prompt."""
    def rec(who, prompt, chosen, rejected):
        return {"conversations": [{"from": who, "value": prompt}], "chosen": {"from": "gpt", "value": chosen},
                "rejected": {"from": "gpt", "value": rejected}}
    p = tmp_path / "dpo.json"
    p.write_text(json.dumps([rec("human", "Capital?", A, B), rec("system", "Capital?", B, A),
                             rec("human", "Capital?", B, A)]))
    _, flags = audit(str(p))
    assert _rows(flags, "contradictory_preference") == [
        (2, "contradictory_preference", "chosen[0].value", 0.0,
         "row 0 prefers the opposite: the same prompt with chosen and rejected swapped")]


def test_kto_contradiction(tmp_path):
    p = _jsonl(tmp_path / "kto.jsonl", [
        {"prompt": "Capital of France?", "completion": A, "label": True},              # 0
        {"prompt": "capital of france?", "completion": A + "  ", "label": False},      # 1 reverses 0
        {"prompt": "Capital of France?", "completion": A, "label": None},              # 2 no label (kto_label)
        {"prompt": "Capital of France?", "completion": B, "label": False},             # 3 another reply
        {"prompt": "Capital of France?", "completion": A, "label": True},              # 4 reverses 1
    ])
    report, (flags,) = _report([p])
    assert _rows(flags, "contradictory_preference") == [
        (1, "contradictory_preference", "label", 0.0, "the same prompt and reply is labelled true at row 0"),
        (4, "contradictory_preference", "label", 1.0, "the same prompt and reply is labelled false at row 1")]
    assert _rows(flags, "kto_label")[0][:3] == (2, "kto_label", "label")
    assert {k: report["contradictory_preference"][k] for k in ("records", "keyed", "contradictions")} == \
        {"records": 5, "keyed": 4, "contradictions": 2}


def test_kto_conversation_contradiction(tmp_path):
    def rec(reply, label):
        return {"messages": [{"role": "user", "content": "Capital?"}, {"role": "assistant", "content": reply}],
                "label": label}
    p = _jsonl(tmp_path / "kto.jsonl", [rec(A, False), rec(B, True), rec(A.lower(), True)])
    _, flags = audit(p)
    assert _rows(flags, "contradictory_preference") == [
        (2, "contradictory_preference", "label", 0.0, "the same prompt and reply is labelled false at row 0")]


def test_state_is_json(tmp_path):
    first, _ = _contra_shards(tmp_path)
    summary, _ = audit(first)
    for name in ("pair_stats", "contradictory_preference"):
        assert json.loads(json.dumps(summary[name])) == summary[name]


# ---------------------------------------------------------------------------------------------- real data

def test_real_dpo_demo():
    """posttrain/dpo_en_demo.json (300 LLaMA-Factory ranking pairs): measured once by hand from the JSON."""
    path = str(shared_file("posttrain/dpo_en_demo.json"))
    report, _ = _report([path])
    stats = report["pair_stats"]
    assert {k: stats[k] for k in ("pairs", "unmeasured", "share_chosen_longer", "share_rejected_longer",
                                  "chars_ratio", "geometric_mean_ratio", "length_bias")} == {
        "pairs": 300, "unmeasured": 0, "share_chosen_longer": 0.4367, "share_rejected_longer": 0.56,
        "chars_ratio": 0.9442, "geometric_mean_ratio": 0.8051, "length_bias": False}
    assert report["contradictory_preference"]["contradictions"] == 0
    assert report["contradictory_preference"]["keyed"] == 300


def test_real_dpo_demo_against_its_swapped_copy(tmp_path):
    """Every pair of dpo_en_demo.json reversed in a second shard: each of its 295 distinct preferences (5 of the
    300 records repeat another) contradicts the first shard, at the same row."""
    path = shared_file("posttrain/dpo_en_demo.json")
    records = json.loads(path.read_text())
    swapped = tmp_path / "swapped.json"
    swapped.write_text(json.dumps([{**r, "chosen": r["rejected"], "rejected": r["chosen"]} for r in records]))
    report, (_, flags) = _report([str(path), str(swapped)])
    section = report["contradictory_preference"]
    assert {k: section[k] for k in ("records", "keyed", "contradictions", "within_shards", "across_shards")} == \
        {"records": 600, "keyed": 600, "contradictions": 295, "within_shards": 0, "across_shards": 295}
    assert all(e["first"]["row"] == e["second"]["row"] for e in section["examples_across_shards"])
    assert len(section["examples_across_shards"]) == 20 and _rows(flags, "contradictory_preference") == []
    assert report["pair_stats"]["chars_ratio"] == 1.0 and report["pair_stats"]["geometric_mean_ratio"] == 1.0
