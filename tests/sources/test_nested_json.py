"""Nested JSON values (chat turns, content parts, image lists, objects) as Arrow nested types: exact types, values
and warnings, for JSONL, JSON arrays and WebDataset .json members (one BatchBuilder behind all three)."""
from __future__ import annotations

import json
import time

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from dataaudit.formats import iter_shard
from dataaudit.sources import ERROR, KEY, WARNING
from dataaudit.sources.batch import LIST_INT, NESTED, BatchBuilder
from tests.builders import make_tar

S = pa.string()


def struct(**fields) -> pa.DataType:
    return pa.struct(list(fields.items()))


def turns(**fields) -> pa.DataType:
    return pa.list_(struct(**fields))


def read_jsonl(tmp_path, records: list[dict], name: str = "s.jsonl", **kw) -> pa.Table:
    p = tmp_path / name
    p.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    batches = list(iter_shard(str(p), **kw))
    assert len(batches) == 1
    t = pa.Table.from_batches(batches)
    assert t.column(ERROR).null_count == t.num_rows
    return t


def column(t: pa.Table, name: str) -> tuple[pa.DataType, list]:
    return t.schema.field(name).type, t.column(name).to_pylist()


# --- well-formed chat data: one pa.array call, exact types ------------------------------------------------------

def test_openai_messages_are_list_of_struct(tmp_path):
    msgs = [[{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}],
            [{"role": "user", "content": "2+2?"}, {"role": "assistant", "content": "4"}]]
    t = read_jsonl(tmp_path, [{"messages": m} for m in msgs])
    assert column(t, "messages") == (turns(role=S, content=S), msgs)
    assert t.column(WARNING).null_count == 2


def test_sharegpt_conversations(tmp_path):
    conv = [{"from": "human", "value": "你好"}, {"from": "gpt", "value": "您好！有什么可以帮您？"}]
    t = read_jsonl(tmp_path, [{"id": "a1", "conversations": conv, "system": "s"}])
    assert column(t, "conversations") == (turns(**{"from": S, "value": S}), [conv])
    assert column(t, "id") == (S, ["a1"])


def test_content_as_parts_and_missing_keys_are_null_fields(tmp_path):
    m0 = [{"role": "user", "content": [{"type": "text", "value": "hi"}], "loss_weight": 0.0},
          {"role": "assistant", "content": [{"type": "text", "value": "Hello!"}], "loss_weight": 1.0}]
    m1 = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "value": "what is it?"}]}]
    t = read_jsonl(tmp_path, [{"messages": m0}, {"messages": m1}])
    part = struct(type=S, value=S)
    assert t.schema.field("messages").type == turns(role=S, content=pa.list_(part), loss_weight=pa.float64())
    assert t.column("messages").to_pylist() == [
        m0, [{"role": "user", "content": [{"type": "image", "value": None}, {"type": "text", "value": "what is it?"}],
              "loss_weight": None}]]
    assert t.column(WARNING).null_count == 2


def test_role_null_and_content_null(tmp_path):
    m = [{"role": None, "content": "orphan"}, {"role": "user", "content": None}, {"role": "assistant"}]
    t = read_jsonl(tmp_path, [{"messages": m}])
    assert column(t, "messages") == (turns(role=S, content=S), [[
        {"role": None, "content": "orphan"}, {"role": "user", "content": None},
        {"role": "assistant", "content": None}]])
    assert t.column(WARNING).to_pylist() == [None]


def test_images_list_of_strings_and_empty_lists(tmp_path):
    t = read_jsonl(tmp_path, [{"images": ["a.jpg", "b.png"]}, {"images": []}, {"images": None}, {}])
    assert column(t, "images") == (pa.list_(S), [["a.jpg", "b.png"], [], None, None])


def test_object_is_struct(tmp_path):
    t = read_jsonl(tmp_path, [{"meta": {"source": "web", "score": 0.5, "ok": True, "tags": ["x"]}},
                              {"meta": {"source": "book", "score": 1}}])
    assert column(t, "meta") == (struct(source=S, score=pa.float64(), ok=pa.bool_(), tags=pa.list_(S)), [
        {"source": "web", "score": 0.5, "ok": True, "tags": ["x"]},
        {"source": "book", "score": 1.0, "ok": None, "tags": None}])


def test_nested_numbers_are_nested_lists(tmp_path):
    t = read_jsonl(tmp_path, [{"emb": [[0.5, 1], [2]]}, {"emb": [[3]]}, {"ids": [[1, 2], [3]]}])
    assert column(t, "emb") == (pa.list_(pa.list_(pa.float64())), [[[0.5, 1.0], [2.0]], [[3.0]], None])
    assert column(t, "ids") == (pa.list_(pa.list_(pa.int64())), [None, None, [[1, 2], [3]]])


def test_flat_number_lists_and_strings_keep_their_types(tmp_path):
    t = read_jsonl(tmp_path, [{"ids": [1, 2], "f": [0.5], "s": "x"}, {"ids": [], "f": [1], "s": "y"}])
    assert column(t, "ids") == (pa.list_(pa.int64()), [[1, 2], []])
    assert column(t, "f") == (pa.list_(pa.float64()), [[0.5], [1.0]])
    assert column(t, "s") == (S, ["x", "y"])


def test_deep_nesting(tmp_path):
    deep = json.loads("[" * 200 + '{"a": 1}' + "]" * 200)
    t = read_jsonl(tmp_path, [{"d": deep}])
    assert t.column("d").to_pylist() == [deep] and t.column(WARNING).to_pylist() == [None]


# --- normalising what does not fit one type ------------------------------------------------------------------

def test_non_object_turn_becomes_null_with_a_warning(tmp_path):
    good = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    bad = [{"role": "user", "content": "hi"}, "oops", {"role": "assistant", "content": "x"}, ["no"]]
    t = read_jsonl(tmp_path, [{"messages": good}, {"messages": bad}])
    assert column(t, "messages") == (turns(role=S, content=S), [good, [bad[0], None, bad[2], None]])
    assert t.column(WARNING).to_pylist() == [
        None, "column 'messages': messages[1] is not an object (str), read as null (+1 more)"]


def test_openai_string_or_parts_content_becomes_parts(tmp_path):
    a = [{"role": "user", "content": [{"type": "text", "text": "look"},
                                      {"type": "image_url", "image_url": {"url": "http://x/a.png"}}]},
         {"role": "assistant", "content": "a cat"}]
    t = read_jsonl(tmp_path, [{"messages": a}, {"messages": [{"role": "user", "content": "plain"}]}])
    part = struct(type=S, text=S, image_url=struct(url=S))
    assert t.schema.field("messages").type == turns(role=S, content=pa.list_(part))
    assert t.column("messages").to_pylist() == [
        [{"role": "user", "content": [{"type": "text", "text": "look", "image_url": None},
                                      {"type": "image_url", "text": None, "image_url": {"url": "http://x/a.png"}}]},
         {"role": "assistant", "content": [{"type": "text", "text": "a cat", "image_url": None}]}],
        [{"role": "user", "content": [{"type": "text", "text": "plain", "image_url": None}]}]]
    assert t.column(WARNING).null_count == 2   # nothing lost: the string is the text part


def test_string_content_wraps_with_the_columns_part_key(tmp_path):
    parts = [{"role": "user", "content": [{"type": "text", "value": "hi"}]}]
    t = read_jsonl(tmp_path, [{"messages": parts}, {"messages": [{"role": "assistant", "content": "hey"}]}])
    assert column(t, "messages") == (turns(role=S, content=pa.list_(struct(type=S, value=S))), [
        parts, [{"role": "assistant", "content": [{"type": "text", "value": "hey"}]}]])


def test_mixed_type_key_keeps_the_type_most_values_have(tmp_path):
    """Rule (t): a tie goes to the type seen first; only the record holding the other type is noted."""
    t = read_jsonl(tmp_path, [{"meta": {"n": 1, "src": "a"}}, {"meta": {"n": "two", "src": "b"}}, {"meta": {}},
                              {"meta": {"src": "c"}}])
    assert column(t, "meta") == (struct(n=pa.int64(), src=S), [{"n": 1, "src": "a"}, {"n": None, "src": "b"},
                                                               {"n": None, "src": None}, {"n": None, "src": "c"}])
    assert t.column(WARNING).to_pylist() == [
        None, "column 'meta': field_type: meta.n is text here, number in 1 of the batch's 2 values (value not read)",
        None, None]


def test_mixed_types_deep_inside_turns_null_only_the_values_of_another_type(tmp_path):
    m0 = [{"role": "user", "content": "hi", "tool": {"args": [1, "x"]}},
          {"role": "assistant", "content": "ok", "tool": {"args": [3]}}]
    m1 = [{"role": "user", "content": "yo", "tool": {"args": [2]}}]
    t = read_jsonl(tmp_path, [{"messages": m0}, {"messages": m1}])
    assert column(t, "messages") == (turns(role=S, content=S, tool=struct(args=pa.list_(pa.int64()))), [
        [{"role": "user", "content": "hi", "tool": {"args": [1, None]}},
         {"role": "assistant", "content": "ok", "tool": {"args": [3]}}],
        [{"role": "user", "content": "yo", "tool": {"args": [2]}}]])
    assert t.column(WARNING).to_pylist() == [   # the record of the odd value only, naming where it is
        "column 'messages': field_type: messages[0].tool.args[1] is text here, number in 3 of the batch's 4 values "
        "(value not read)", None]


def test_a_content_of_another_type_does_not_hide_empty_replies(tmp_path):
    """F01 one level down: one reply that is a number left every content JSON text ('""' for an empty reply)."""
    rows = [{"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": c}]}
            for c in ["yo", "", 5, "fine"]]
    t = read_jsonl(tmp_path, rows)
    replies = [m[1]["content"] for m in column(t, "messages")[1]]
    assert replies == ["yo", "", None, "fine"]
    assert t.column(WARNING).to_pylist() == [
        None, None, "column 'messages': field_type: messages[1].content is number here, text in 7 of the batch's 8 "
        "values (value not read)", None]


@pytest.mark.parametrize("values,why", [
    ([{"n": 2 ** 64}, {"n": 1}], "integers beyond int64"),
    ([{"n": 2 ** 60}, {"n": 0.5}], "integers beyond 2**53 next to floats"),
])
def test_numbers_arrow_cannot_hold_exactly_become_text(tmp_path, values, why):
    t = read_jsonl(tmp_path, [{"o": v} for v in values])
    assert column(t, "o") == (struct(n=S), [{"n": json.dumps(v["n"])} for v in values])
    assert t.column(WARNING).to_pylist() == [f"column 'o': o.n read as JSON text ({why})"] * 2


def test_ints_and_floats_in_one_key_are_float(tmp_path):
    t = read_jsonl(tmp_path, [{"o": {"n": 1}}, {"o": {"n": 0.5}}])
    assert column(t, "o") == (struct(n=pa.float64()), [{"n": 1.0}, {"n": 0.5}])
    assert t.column(WARNING).null_count == 2


def test_empty_objects_are_json_text_without_warnings(tmp_path):
    t = read_jsonl(tmp_path, [{"meta": {}, "o": {"extra": {}, "k": 1}}, {"meta": {}, "o": {"extra": {}, "k": 2}}])
    assert column(t, "meta") == (S, ["{}", "{}"])    # a struct without fields cannot be stored in Parquet
    assert column(t, "o") == (struct(extra=S, k=pa.int64()), [{"extra": "{}", "k": 1}, {"extra": "{}", "k": 2}])
    assert t.column(WARNING).to_pylist() == [None, None]
    # next to objects with keys, an empty object is a struct whose fields are null
    t = read_jsonl(tmp_path, [{"meta": {}}, {"meta": {"a": 1}}], name="b.jsonl")
    assert column(t, "meta") == (struct(a=pa.int64()), [{"a": None}, {"a": 1}])


def test_bool_and_int_in_one_key_keep_the_first_seen_on_a_tie(tmp_path):
    t = read_jsonl(tmp_path, [{"o": {"n": True}}, {"o": {"n": 1}}])
    assert column(t, "o") == (struct(n=pa.bool_()), [{"n": True}, {"n": None}])
    assert t.column(WARNING).to_pylist() == [
        None, "column 'o': field_type: o.n is number here, boolean in 1 of the batch's 2 values (value not read)"]


def test_values_of_another_type_anywhere_in_a_column_are_left_out_and_noted(tmp_path):
    t = read_jsonl(tmp_path, [{"x": [1, "a"]}, {"x": {"k": 1}}, {"x": None}])
    assert column(t, "x") == (pa.list_(pa.int64()), [[1, None], None, None])
    assert t.column(WARNING).to_pylist() == [
        "column 'x': field_type: x[1] is text here, number in 1 of the batch's 2 values (value not read)",
        "column 'x': field_type: x is object here, list in 1 of the batch's 2 values (value not read)", None]
    t = read_jsonl(tmp_path, [{"x": [[1], ["a"]]}], name="b.jsonl")
    assert column(t, "x") == (pa.list_(pa.list_(pa.int64())), [[[1], [None]]])
    assert t.column(WARNING).to_pylist() == [
        "column 'x': field_type: x[1][0] is text here, number in 1 of the batch's 2 values (value not read)"]


def test_strings_and_nested_values_in_one_column_keep_the_type_most_records_hold(tmp_path):
    """F01: the string among conversations is flagged and left out; the conversations stay conversations."""
    parts = [{"type": "text", "text": "x"}]
    t = read_jsonl(tmp_path, [{"content": "plain"}, {"content": parts}, {"content": parts}])
    assert column(t, "content") == (pa.list_(struct(type=S, text=S)), [None, parts, parts])
    assert t.column(WARNING).to_pylist() == [
        "field_type: column 'content' is text here, list or object in 2 of the batch's 3 records (value not read)",
        None, None]


def test_invalid_unicode_inside_nested_strings_is_escaped_with_a_warning(tmp_path):
    p = tmp_path / "s.jsonl"
    p.write_bytes(b'{"messages": [{"role": "user", "content": "ok"}, {"role": "user", "content": "bad \\ud800 x"}]}\n'
                  b'{"messages": [{"role": "assistant", "content": "fine"}], "m": {"k\\udfff": "v"}}\n')
    t = pa.Table.from_batches(list(iter_shard(str(p))))
    assert column(t, "messages") == (turns(role=S, content=S), [
        [{"role": "user", "content": "ok"}, {"role": "user", "content": "bad \\ud800 x"}],
        [{"role": "assistant", "content": "fine"}]])
    assert column(t, "m") == (struct(**{"k\\udfff": S}), [None, {"k\\udfff": "v"}])
    assert t.column(WARNING).to_pylist() == ["column 'messages': invalid Unicode escaped (messages[1].content)",
                                             "column 'm': invalid Unicode escaped (m.k\\udfff)"]


# --- every reader, and size ----------------------------------------------------------------------------------

def test_json_array_and_tar_members_type_the_same(tmp_path):
    conv = [{"from": "human", "value": "图里有什么？"}, {"from": "gpt", "value": "一只猫"}]
    (tmp_path / "a.json").write_text(json.dumps([{"conversations": conv, "images": ["c.jpg"]}], ensure_ascii=False),
                                     encoding="utf-8")
    p = make_tar(tmp_path / "s.tar", [("k0.json", json.dumps({"conversations": conv, "images": ["c.jpg"]}).encode()),
                                      ("k1.conversations.json", json.dumps(conv).encode())])
    want = turns(**{"from": S, "value": S})
    for path in (tmp_path / "a.json", p):
        t = pa.Table.from_batches(list(iter_shard(str(path))))
        assert column(t, "conversations")[0] == want and t.column("conversations")[0].as_py() == conv
        assert column(t, "images")[0] == pa.list_(S)
    assert column(t, "conversations")[1] == [conv, conv]   # k1: a member that is a list is typed like a field


def test_numpy_and_nested_lists_in_one_column():
    b = BatchBuilder()
    b.add("a", {"x": (LIST_INT, np.arange(3, dtype=np.int32))})
    b.add("b", {"x": (NESTED, [[1, 2], [3]])})
    b.add("c", {"x": (NESTED, [4, None])})
    batch = b.build()
    assert batch.column("x").type == pa.list_(pa.int64())   # numbers most, the lists among them left out
    assert batch.column("x").to_pylist() == [[0, 1, 2], [None, None], [4, None]]
    assert batch.column(WARNING).to_pylist() == [
        None, "column 'x': field_type: x[0] is list here, number in 4 of the batch's 6 values (value not read) "
              "(+1 more)", None]
    b.add("a", {"x": (LIST_INT, np.arange(3, dtype=np.int32))})
    b.add("c", {"x": (NESTED, [4, None])})
    batch = b.build()
    assert batch.column("x").type == pa.list_(pa.int64()) and batch.column("x").to_pylist() == [[0, 1, 2], [4, None]]


def test_ten_thousand_turn_conversation(tmp_path):
    conv = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"turn {i}"} for i in range(10_000)]
    conv[5000] = "not a turn"
    start = time.perf_counter()
    t = read_jsonl(tmp_path, [{"messages": conv}, {"messages": conv[:2]}])
    assert time.perf_counter() - start < 10
    got = t.column("messages").to_pylist()
    assert len(got[0]) == 10_000 and got[0][5000] is None and got[0][9999] == conv[9999] and got[1] == conv[:2]
    assert t.column(WARNING).to_pylist() == [
        "column 'messages': messages[5000] is not an object (str), read as null", None]


def test_fifty_megabyte_turn(tmp_path):
    big = ("数据" + "x" * 10) * ((50 << 20) // 16)    # 50 MiB of UTF-8
    recs = [{"messages": [{"role": "user", "content": big}]}, {"messages": [{"role": "user", "content": "s"}]}]
    (tmp_path / "a.json").write_text(json.dumps(recs, ensure_ascii=False), encoding="utf-8")
    start = time.perf_counter()
    batches = list(iter_shard(str(tmp_path / "a.json")))
    assert time.perf_counter() - start < 30
    t = pa.Table.from_batches(batches)
    assert t.schema.field("messages").type == turns(role=S, content=S)
    contents = _contents(t)
    assert contents[0] == big and contents[1] == "s"
    assert t.column(KEY).to_pylist() == ["0", "1"] and t.column(ERROR).null_count == 2


def _contents(t: pa.Table) -> list[str]:
    return pc.struct_field(pc.list_flatten(t.column("messages")), "content").to_pylist()
