"""The chat data generator (fixtures/chat_data.py) and the chat benchmark's scorer (benchmarks/chat_recall.py): the
truth table points at the defect that was planted (record, field, turn), the scorer counts exactly, a small audit
finds every plant of the checks that locate it today, and fixtures/chat is what the generator writes.

All but the scorer's test need the real chat data (../shared/data/chat): they skip with a reason naming it when
../shared/data is missing."""
from __future__ import annotations

import json
import re

import pyarrow.parquet as pq
import pytest

from benchmarks import chat_recall
from fixtures import chat_data
from tests.paths import REPO, needs_shared

SMALL = {"records": 40, "rate": 0.0, "real_limit": 10, "seed": 3}
ASSISTANT = ("assistant", "gpt")


def _jsonl(out, form: str, shard: str) -> list[dict]:
    return [json.loads(x) for x in chat_data.shard_path(out, "jsonl", form, shard).read_text("utf-8").splitlines()]


def _records(out, form: str) -> dict[str, list[dict]]:
    return {s: _jsonl(out, form, s) for s in chat_data.SHARDS[form]}


def _turn_text(turn: dict):
    c = turn.get("content", turn.get("value"))
    if isinstance(c, list):
        return "\n".join(p["text"] for p in c if p.get("type") == "text")
    return c


def _role(turn: dict):
    return turn.get("role", turn.get("from"))


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    out = tmp_path_factory.mktemp("chat-small")
    truth = chat_data.generate(out, SMALL["records"], SMALL["rate"], SMALL["seed"], real_limit=SMALL["real_limit"],
                               log=lambda s: None)
    return out, truth


@needs_shared
def test_generator_counts_and_determinism(small, tmp_path):
    out, truth = small
    for form, ft in truth["forms"].items():
        assert sum(ft["shards"].values()) == 40
        assert sum(1 for r in ft["records"] if r[2] == "real") == 10
        kinds = [t["kind"] for t in ft["planted"]]
        assert sorted(kinds) == sorted(chat_data.KINDS[form]), form        # one record per kind (rate 0 -> 1)
        planted_rows = {(t["shard"], t["row"]) for t in ft["planted"]}
        assert len(planted_rows) == len(kinds)                               # one kind per planted record
        assert all(r[2] == "generated" for r in ft["records"] if (r[0], r[1]) in planted_rows)
    again = chat_data.generate(tmp_path, SMALL["records"], SMALL["rate"], SMALL["seed"],
                               real_limit=SMALL["real_limit"], log=lambda s: None)
    assert again["forms"] == truth["forms"]
    for path in sorted(p for p in out.rglob("*") if p.is_file()):
        assert (tmp_path / path.relative_to(out)).read_bytes() == path.read_bytes(), path


@needs_shared
def test_formats_hold_the_same_records(small):
    out, _ = small
    for form in chat_data.FORMS:
        for shard in chat_data.SHARDS[form]:
            jsonl = _jsonl(out, form, shard)
            assert json.loads(chat_data.shard_path(out, "json", form, shard).read_text("utf-8")) == jsonl
            table = pq.read_table(chat_data.shard_path(out, "parquet", form, shard)).to_pylist()
            assert len(table) == len(jsonl)
            for a, b in zip(table, jsonl):        # Parquet holds absent keys as nulls
                assert _drop_nulls(a) == _drop_nulls(b)


def _drop_nulls(x):
    if isinstance(x, dict):
        return {k: _drop_nulls(v) for k, v in x.items() if v is not None}
    if isinstance(x, list):
        return [_drop_nulls(v) for v in x]
    return x


def _field_turn(field: str) -> int:
    return int(re.search(r"\[(\d+)\]", field).group(1))


@needs_shared
def test_truth_points_at_the_planted_defect(small):
    out, truth = small
    for form, ft in truth["forms"].items():
        recs = _records(out, form)
        for t in ft["planted"]:
            rec = recs[t["shard"]][t["row"]]
            kind, field = t["kind"], t["field"]
            if form == "alpaca":
                value = rec[field]
                if kind in ("empty_output", "empty_instruction"):
                    assert not value.strip()
                elif kind == "repetition":
                    assert value.count(t["inserted"]) >= 8
                else:
                    assert t["inserted"] in value, (kind, field)
                continue
            turns = rec[chat_data.CONV_COLUMN[form]]
            if kind == "no_assistant_turn":
                assert field == chat_data.CONV_COLUMN[form]
                assert not any(_role(x) in ASSISTANT for x in turns)
                continue
            if kind == "json_invalid_tools":
                assert field == "tools"
                with pytest.raises(ValueError):
                    json.loads(rec["tools"])
                continue
            if kind == "duplicate_id":
                shard, row = t["original"]
                assert rec["id"] == recs[shard][row]["id"] and (shard, row) != (t["shard"], t["row"])
                continue
            k = _field_turn(field)
            assert k == t["turn"]
            turn = turns[k]
            if kind == "json_invalid_call":
                text = turn["tool_calls"][0]["function"]["arguments"] if form == "messages" else turn["value"]
                with pytest.raises(ValueError):
                    json.loads(text)
            elif kind == "unknown_role":
                assert field.endswith(f"[{k}].{chat_data.ROLE_KEY[form]}") and _role(turn) == t["inserted"]
            elif kind == "role_order":
                before = _role(turns[k - 1])
                assert (_role(turn) == "system" and k > 0) or \
                    (_role(turn) in ("user", "human") and before == _role(turn))
            elif kind == "last_turn_not_assistant":
                assert k == len(turns) - 1 and _role(turn) not in ASSISTANT
            elif kind == "empty_reply":
                assert _role(turn) in ASSISTANT and not (_turn_text(turn) or "").strip()
            elif kind == "empty_user":
                assert _role(turn) in ("user", "human") and _turn_text(turn) == t["inserted"]
            elif kind == "repetition":
                assert _role(turn) in ASSISTANT and _turn_text(turn).count(t["inserted"]) >= 8
            else:                                  # control_chars, mojibake, special_tokens, long_unbroken_run
                assert t["inserted"] in _turn_text(turn), (form, kind)


def test_scorer_counts_exactly():
    truth = {"planted": [
        {"shard": "m-000", "row": 1, "kind": "empty_reply", "check": "empty_reply", "field": "messages[3].content",
         "role": "assistant"},
        {"shard": "m-000", "row": 2, "kind": "empty_reply", "check": "empty_reply", "field": "messages[1].content",
         "role": "assistant"},
        {"shard": "m-001", "row": 0, "kind": "role_order", "check": "role_order", "field": "messages[2].role",
         "role": "user"},
        {"shard": "m-001", "row": 4, "kind": "special_tokens", "check": "special_tokens",
         "field": "messages[0].content", "role": "user", "inserted": "</s>"},
        {"shard": "m-001", "row": 5, "kind": "special_tokens", "check": "special_tokens",
         "field": "messages[2].content", "role": "user", "inserted": "<s>"},
    ], "records": [["m-000", 0, "real", None], ["m-000", 1, "generated", "empty_reply"],
                   ["m-000", 2, "generated", "empty_reply"], ["m-000", 3, "real", None],
                   ["m-000", 4, "generated", None],
                   ["m-001", 0, "generated", "role_order"], ["m-001", 1, "real", None],
                   ["m-001", 4, "generated", "special_tokens"], ["m-001", 5, "generated", "special_tokens"]]}

    def flag(shard, row, check, field, role=None, detail="d"):
        return {"shard": f"/x/{shard}.jsonl", "row": row, "check": check, "field": field, "role": role,
                "detail": detail}

    flags = [flag("m-000", 1, "empty_reply", "messages[3].content", "assistant"),   # found
             flag("m-000", 1, "repetition", "messages[3].content"),                 # extra on a planted record
             flag("m-000", 2, "empty_reply", "messages[3].content", "assistant"),   # right check, wrong turn
             flag("m-001", 0, "role_order", "messages[2].role", "system"),          # found, with the wrong role
             flag("m-001", 4, "special_tokens", "messages[0].content", "user", "special token '</s>'"),  # named
             flag("m-001", 5, "special_tokens", "messages[2].content", "user", "special token '<|x|>'"),  # not named
             flag("m-000", 0, "repetition", "messages[1].content"),                 # a clean record flagged
             flag("m-000", 0, "long_unbroken_run", "messages[1].content"),          # the same clean record
             flag("m-001", 1, "empty_reply", "messages[1].content"),                # another clean record
             flag("m-000", 4, "empty_reply", "messages[1].content")]                # a generated unplanted record
    r = chat_recall.score(truth, flags, checks_run={"empty_reply", "role_order", "repetition", "long_unbroken_run",
                                                    "special_tokens"})
    k = r["kinds"]
    assert (k["empty_reply"]["planted"], k["empty_reply"]["found"], k["empty_reply"]["wrong_field"]) == (2, 1, 1)
    assert (k["empty_reply"]["recall"], k["empty_reply"]["wrong_role"], k["empty_reply"]["named"]) == (0.5, 0, None)
    assert (k["role_order"]["found"], k["role_order"]["recall"], k["role_order"]["wrong_role"]) == (1, 1.0, 1)
    assert (k["special_tokens"]["found"], k["special_tokens"]["named"]) == (2, 1)
    assert k["empty_reply"]["reasons"] == {"empty_reply on another field (messages[3].content)": 1}
    assert (r["clean"]["records"], r["clean"]["flagged"]) == (3, 2)
    assert {c: v["records"] for c, v in r["clean"]["by_check"].items()} == \
        {"repetition": 1, "long_unbroken_run": 1, "empty_reply": 1}
    assert (r["generated_unplanted"]["records"], r["generated_unplanted"]["flagged"]) == (1, 1)
    assert r["planted_extra"] == {"repetition": 1}
    met, missed = chat_recall.targets_met(r)
    assert not met and missed == ["empty_reply recall 0.50", "clean flagged 66.7%"]
    no_check = chat_recall.score(truth, flags, checks_run={"empty_reply", "role_order"})["kinds"]["special_tokens"]
    assert not no_check["scored"] and no_check["recall"] is None


# Kinds whose check finds every plant at its record and field today, in every form and format.
LOCATED = ("empty_reply", "empty_user", "control_chars", "mojibake", "long_unbroken_run", "unknown_role",
           "role_order", "no_assistant_turn", "json_invalid_tools", "empty_output", "empty_instruction")


@needs_shared
def test_small_audit_finds_every_plant(tmp_path):
    from dataaudit.config import load_config
    from dataaudit.pipelines.audit import run_audit

    truth = chat_data.generate(tmp_path / "data", 30, 0.0, 5, kinds=LOCATED, real_limit=6, log=lambda s: None)
    config = load_config(None)
    for form in chat_data.FORMS:
        expected = {k: 1 for k in LOCATED if k in chat_data.KINDS[form]}
        for fmt in chat_data.FORMATS:
            shards = [str(chat_data.shard_path(tmp_path / "data", fmt, form, s)) for s in chat_data.SHARDS[form]]
            out = tmp_path / f"audit-{form}-{fmt}"
            report = run_audit(shards, config, out, engine="local")
            flags = pq.read_table(out / "flags.parquet").to_pylist()
            r = chat_recall.score(truth["forms"][form], flags, set(report["checks"]))
            assert {k: v["planted"] for k, v in r["kinds"].items()} == expected, (form, fmt)
            assert {k: v["found"] for k, v in r["kinds"].items()} == expected, (form, fmt, r["kinds"])
            assert not any(v["wrong_field"] or v["wrong_role"] for v in r["kinds"].values()), (form, fmt)
            assert r["clean"]["records"] == 6


@needs_shared
def test_committed_fixtures_are_the_generators(tmp_path):
    committed = REPO / "fixtures" / "chat"
    chat_data.write_fixtures(tmp_path)
    made = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file())
    assert made == sorted(p.relative_to(committed) for p in committed.rglob("*") if p.is_file())
    for rel in made:
        if rel.suffix == ".parquet":             # compare the data, not the writer's metadata
            assert pq.read_table(tmp_path / rel).equals(pq.read_table(committed / rel)), rel
        else:
            assert (tmp_path / rel).read_bytes() == (committed / rel).read_bytes(), rel
    assert sum((committed / rel).stat().st_size for rel in made) < 200_000


# Plants no check locates today (the fixtures' README would say why); not required, never "extra" when found.
KNOWN_GAPS: dict[tuple[str, str], str] = {}


@needs_shared
def test_fixtures_audit_reports_exactly_the_truth_table(tmp_path):
    from dataaudit.config import load_config
    from dataaudit.pipelines.audit import run_audit

    root = REPO / "fixtures" / "chat"
    truth = json.loads((root / "truth.json").read_text("utf-8"))
    config = load_config(None)
    for form in chat_data.FORMS:
        planted = {(t["shard"], t["row"], t["check"], t["field"]) for t in truth["forms"][form]["planted"]}
        required = {(t["shard"], t["row"], t["check"], t["field"]) for t in truth["forms"][form]["planted"]
                    if (form, t["kind"]) not in KNOWN_GAPS}
        for fmt in chat_data.FORMATS:
            out = tmp_path / f"{form}-{fmt}"
            run_audit([str(chat_data.shard_path(root, fmt, form, s)) for s in chat_data.SHARDS[form]], config, out,
                      engine="local")
            got = {(chat_recall._stem(f["shard"]), f["row"], f["check"], f["field"])
                   for f in pq.read_table(out / "flags.parquet").to_pylist()}
            assert got - planted == set(), (form, fmt)
            assert required - got == set(), (form, fmt)
