"""Benchmark loading: formats, field specs, presets, ids, clean subsets, and one clear error per bad input."""
from __future__ import annotations

import gzip
import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dataaudit.contamination.config import BenchmarkSettings, ContaminationConfigError, build_contamination_config
from dataaudit.contamination.load import BenchmarkError, load_benchmark, parse_benchmark_arg, write_clean
from dataaudit.contamination.presets import find_preset


def _write(path, data: bytes, gz: bool = False):
    path.write_bytes(gzip.compress(data) if gz else data)
    return str(path)


# ------------------------------------------------------------------------------------------ field specs

@pytest.mark.parametrize("arg, want", [
    ("gsm8k=data/test.jsonl", ("gsm8k", "data/test.jsonl", None)),
    ("arc=a.jsonl:question.stem+question.choices.text",
     ("arc", "a.jsonl", ("question.stem", "question.choices.text"))),
    ("x=/abs/path/f.csv:0+1", ("x", "/abs/path/f.csv", ("0", "1"))),
    ("m.v-1_2=f.parquet:q", ("m.v-1_2", "f.parquet", ("q",))),
])
def test_parse_benchmark_arg(arg, want):
    assert parse_benchmark_arg(arg) == want


@pytest.mark.parametrize("arg, msg", [
    ("noequals", "expected NAME=PATH"), ("=f.jsonl", "expected NAME=PATH"), ("a/b=f.jsonl", "must be letters"),
    ("x=f.jsonl:", "empty field spec"), ("x=f.jsonl:a++b", "empty field name"), ("..=f.jsonl", "must be letters"),
])
def test_parse_benchmark_arg_errors(arg, msg):
    with pytest.raises(BenchmarkError, match=msg):
        parse_benchmark_arg(arg)


def test_existing_path_with_colon_is_a_path(tmp_path):
    p = tmp_path / "odd:name.jsonl"
    p.write_text('{"text": "a b c"}\n')
    assert parse_benchmark_arg(f"x={p}") == ("x", str(p), None)


# ------------------------------------------------------------------------------------------ formats

ARC_RECORDS = [
    {"id": "Q1", "question": {"stem": "Which gas do plants take in?",
                              "choices": [{"text": "oxygen", "label": "A"}, {"text": "carbon dioxide", "label": "B"}]},
     "answerKey": "B"},
    {"id": "Q2", "question": {"stem": "What melts ice?", "choices": [{"text": "heat", "label": "A"}]},
     "answerKey": "A"},
]


@pytest.mark.parametrize("gz", [False, True])
def test_jsonl_nested_and_list_fields_ids_and_line_numbers(tmp_path, gz):
    lines = [json.dumps(r) for r in ARC_RECORDS]
    raw = ("\ufeff" + lines[0] + "\r\n\n  \n" + lines[1]).encode()     # BOM, CRLF, blank lines, no final newline
    path = _write(tmp_path / ("arc.jsonl.gz" if gz else "arc.jsonl"), raw, gz)
    b = load_benchmark("arc", path)
    assert b.preset == "arc" and b.fields == ("question.stem",) and b.id_field == "id"
    assert b.ids == ["Q1", "Q2"] and b.lines == [1, 4] and b.compressed is gz
    assert b.texts == ["Which gas do plants take in?", "What melts ice?"]      # the stem, as lm-eval's query
    assert b.choices == [["oxygen", "carbon dioxide"], ["heat"]]
    assert b.answers == [["carbon dioxide", "Answer: B", "answer is B"], ["heat", "Answer: A", "answer is A"]]
    # the clean subset comes from the JSONL writer: every byte as it was (BOM, CRLF, blank lines), never gzipped
    assert write_clean(b, np.array([True, True]), str(tmp_path / "all"), "clean") == ["clean.jsonl"]
    assert (tmp_path / "all" / "clean.jsonl").read_bytes() == raw
    write_clean(b, np.array([False, True]), str(tmp_path / "second"), "clean")
    assert (tmp_path / "second" / "clean.jsonl").read_bytes() == b"\n  \n" + lines[1].encode()


def test_field_spec_overrides_preset_and_indexes_lists(tmp_path):
    path = _write(tmp_path / "arc.jsonl", "".join(json.dumps(r) + "\n" for r in ARC_RECORDS).encode())
    b = load_benchmark("arc", path, ("question.choices.0.text", "answerKey"))
    assert b.texts == ["oxygen\nB", "heat\nA"] and b.preset is None
    b = load_benchmark("whatever", path, ("question.stem",))
    assert b.ids == ["Q1", "Q2"] and b.texts == ["Which gas do plants take in?", "What melts ice?"]


def test_json_array_object_holding_array_and_jsonl_in_json(tmp_path):
    recs = [{"question": "one two", "answer": "1"}, {"question": "three", "answer": "2"}]
    arr = _write(tmp_path / "a.json", json.dumps(recs, indent=2).encode())
    b = load_benchmark("gsm8k", arr)
    # no id field: the id is the row (0-based); the line is where each object starts (indent=2: lines 2 and 6)
    assert b.texts == ["one two", "three"] and b.ids == ["0", "1"] and b.format == "json"
    assert b.lines == [2, 6]
    wrapped = _write(tmp_path / "w.json.gz", json.dumps({"version": 1, "data": recs}).encode(), gz=True)
    b = load_benchmark("gsm8k", wrapped)
    # read by the reader's wrapper rule (as every command reads it): the line of each element is known now
    assert b.texts == ["one two", "three"] and b.ids == ["0", "1"] and b.lines == [1, 1]
    assert b.nested_in == "data"
    lines = _write(tmp_path / "l.json", "".join(json.dumps(r) + "\n" for r in recs).encode())
    b = load_benchmark("gsm8k", lines)
    assert b.texts == ["one two", "three"] and b.lines == [1, 2] and b.nested_in is None


def test_csv_with_header_bom_and_quoted_newlines(tmp_path):
    raw = ('\ufeffid,question,answer\r\n7,"What is\nup?",x\r\n9,plain,"y, z"\r\n').encode()
    path = _write(tmp_path / "t.csv", raw)
    b = load_benchmark("truthfulqa", path)
    assert b.fields == ("question",) and b.id_field == "id"
    assert b.ids == ["7", "9"] and b.lines == [2, 4] and b.texts == ["What is\nup?", "plain"]
    assert b.csv_header is True
    assert write_clean(b, np.array([False, True]), str(tmp_path / "out"), "clean") == ["clean.jsonl", "clean.csv"]
    assert (tmp_path / "out" / "clean.csv").read_bytes() == '\ufeffid,question,answer\r\n9,plain,"y, z"\r\n'.encode()


def test_headerless_mmlu_csv_and_numbered_columns(tmp_path):
    raw = b'What is 2+2?,3,4,5,6,B\n"Capital of France?",Rome,Paris,Oslo,Bern,B\n'
    path = _write(tmp_path / "anatomy_test.csv.gz", raw, gz=True)
    b = load_benchmark("mmlu_anatomy", path)
    assert b.preset == "mmlu" and b.csv_columns == ("question", "A", "B", "C", "D", "answer")
    assert b.csv_header is False and b.ids == ["1", "2"]
    assert b.texts == ["What is 2+2?", "Capital of France?"]
    assert b.choices == [["3", "4", "5", "6"], ["Rome", "Paris", "Oslo", "Bern"]]
    assert b.answers == [["4", "Answer: B", "answer is B"], ["Paris", "Answer: B", "answer is B"]]
    b = load_benchmark("x", path, ("0", "5"))
    assert b.texts == ["What is 2+2?\nB", "Capital of France?\nB"]


def test_tsv_and_parquet(tmp_path):
    tsv = _write(tmp_path / "t.tsv", b"prompt\ttask_id\ndef f():\tHumanEval/0\n")
    b = load_benchmark("humaneval", tsv)
    assert b.ids == ["HumanEval/0"] and b.texts == ["def f():"]
    t = pa.table({"task_id": [11, 12], "text": ["Write a function.", None],
                  "test_list": [["assert f(1)"], []]})
    pq.write_table(t, tmp_path / "mbpp.parquet")
    b = load_benchmark("mbpp", str(tmp_path / "mbpp.parquet"))
    assert b.ids == ["11", "12"] and b.texts == ["Write a function.", ""] and b.lines == [None, None]


@pytest.mark.parametrize("name, record, fields, id_field", [
    ("gsm8k", {"question": "q", "answer": "a"}, ("question",), None),
    ("arc_easy", {"id": "x", "question": "q", "choices": {"text": ["a", "b"], "label": ["A", "B"]}},
     ("question",), "id"),
    ("mmlu", {"question": "q", "subject": "s", "choices": ["a", "b"], "answer": 1}, ("question",), None),
    ("hellaswag", {"ind": 4, "ctx": "c", "ctx_a": "a", "ctx_b": "b", "endings": ["e"]}, ("ctx",), "ind"),
    ("humaneval", {"task_id": "HumanEval/1", "prompt": "p", "canonical_solution": "s"}, ("prompt",), "task_id"),
    ("mbpp", {"task_id": 2, "text": "t", "code": "c"}, ("text",), "task_id"),
    ("mbpp_sanitized", {"task_id": 2, "prompt": "t", "code": "c"}, ("prompt",), "task_id"),
    ("truthful_qa", {"type": "Adversarial", "question": "q", "best_answer": "b"}, ("question",), None),
])
def test_presets(tmp_path, name, record, fields, id_field):
    path = _write(tmp_path / "b.jsonl", (json.dumps(record) + "\n").encode())
    b = load_benchmark(name, path)
    assert (b.fields, b.id_field) == (fields, id_field)
    assert find_preset(name) is not None


def test_no_preset_uses_text_field_else_asks_for_fields(tmp_path):
    path = _write(tmp_path / "b.jsonl", b'{"text": "hello there"}\n')
    assert load_benchmark("custom", path).texts == ["hello there"]
    path = _write(tmp_path / "c.jsonl", b'{"prompt": "hello there"}\n')
    with pytest.raises(BenchmarkError, match=r"c\.jsonl: line 1: no preset for benchmark name 'custom'.*prompt"):
        load_benchmark("custom", path)


# ------------------------------------------------------------------------------------------ errors

@pytest.mark.parametrize("name, content, fields, msg", [
    ("b.jsonl", b'{"question": "a"}\n[1, 2]\n', None, r"b\.jsonl: row 1 \(line 2\): not a JSON object \(list\)$"),
    ("b.jsonl", b'{"question": "a"}\n{"question": \xff}\n', None, r"row 1 \(line 2\): invalid UTF-8 at byte 13$"),
    ("b.jsonl", b'{"question": {"x": 1}}\n', None, r"line 1: field 'question' is an object"),
    ("b.jsonl", b'{"question": "a"}\n', ("question.stem",), r"line 1: field 'question.stem': question is text"),
    ("b.json", b'[{"question": "a"},\n {"question": 1,}]', None,
     r"b\.json: cannot read it: json: Expecting property name enclosed in double quotes at line 2, byte 36 \(row 1\)"),
    ("b.json", b'[{"question": "a"},\n {"nope": 1}\n]', None, r"b\.json: line 2: field 'question' not found"),
    ("b.csv", b'question,answer\na,b\nc\n', None, r"b\.csv: line 3: 1 columns, expected 2"),
    ("b.csv", b'question,answer\na,b\n', ("stem",), r"b\.csv: line 1: field 'stem' not found in the header"),
    ("b.csv", b'q,q\na,b\n', ("q",), r"line 1: the header names column 'q' twice"),
    ("b.parquet", b"PAR1 not really", None, r"b\.parquet: cannot read it: parquet: .*Parquet magic bytes not found"),
    ("b.jsonl.gz", b"\x1f\x8bgarbage", None,
     r"b\.jsonl\.gz: cannot read it: jsonl: Compressed file ended before the end-of-stream marker was reached"),
    ("b.jsonl", b"\n\n", None, r"b\.jsonl: holds no records"),
    ("b.jsonl", b'{"question": "a", "id": 1}\n{"question": "b"}\n', None, r"line 2: id field 'id' not found"),
])
def test_errors_name_file_line_and_field(tmp_path, name, content, fields, msg):
    path = _write(tmp_path / name, content)
    with pytest.raises(BenchmarkError, match=msg):
        load_benchmark("gsm8k", path, fields)


# ------------------------------------------------------------------------------------------ clean subsets

def test_clean_subsets_keep_original_bytes(tmp_path):
    lines = [b'{"question": "caf\\u00e9  one", "x": [1, 2]}\r\n', b'{"question":"two"}\n',
             '{"question": "tr\u00e8s three"}\n'.encode(), b'{"question": "four"}']
    b = load_benchmark("gsm8k", _write(tmp_path / "b.jsonl", b"".join(lines)))
    assert write_clean(b, np.array([True, False, True, True]), str(tmp_path / "out"), "clean") == ["clean.jsonl"]
    assert (tmp_path / "out" / "clean.jsonl").read_bytes() == lines[0] + lines[2] + lines[3]   # as it was: no final \n

    csv = b'question,answer\r\n"multi\nline",1\r\nplain,2\r\nlast,3'
    b = load_benchmark("gsm8k", _write(tmp_path / "b.csv", csv))
    files = write_clean(b, np.array([True, False, True]), str(tmp_path / "csv"), "clean")
    assert files == ["clean.jsonl", "clean.csv"]
    assert (tmp_path / "csv" / "clean.csv").read_bytes() == b'question,answer\r\n"multi\nline",1\r\nlast,3'
    assert [json.loads(ln) for ln in (tmp_path / "csv" / "clean.jsonl").read_text().splitlines()] == \
        [{"question": "multi\nline", "answer": "1"}, {"question": "last", "answer": "3"}]

    t = pa.table({"question": ["a", "b", "c"], "n": pa.array([1, 2, 3], pa.int8())})
    pq.write_table(t, tmp_path / "b.parquet")
    b = load_benchmark("gsm8k", str(tmp_path / "b.parquet"))
    assert write_clean(b, np.array([False, True, True]), str(tmp_path / "pq"), "clean") == ["clean.jsonl",
                                                                                           "clean.parquet"]
    assert pq.read_table(tmp_path / "pq" / "clean.parquet").equals(t.slice(1))

    arr = [{"question": "one"}, {"question": "two"}, {"question": "three"}]
    b = load_benchmark("gsm8k", _write(tmp_path / "b.json", json.dumps(arr, indent=1).encode()))
    assert write_clean(b, np.array([True, False, True]), str(tmp_path / "js"), "clean") == ["clean.jsonl",
                                                                                           "clean.json"]
    assert json.loads((tmp_path / "js" / "clean.json").read_text()) == [arr[0], arr[2]]   # the array's own layout
    assert (tmp_path / "js" / "clean.json").read_text() == \
        '[\n {\n  "question": "one"\n },\n {\n  "question": "three"\n }\n]'
    wrapped = load_benchmark("gsm8k", _write(tmp_path / "w.json", json.dumps({"data": arr}).encode()))
    assert write_clean(wrapped, np.array([True, True, False]), str(tmp_path / "w"), "clean") == ["clean.jsonl"]


# ------------------------------------------------------------------------------------------ config

def test_config_validation():
    cfg = build_contamination_config({"methods": {"ngram": {"n": 8, "threshold": 0.7}, "minhash": {"enabled": False}},
                                      "train": {"text_field": "body"},
                                      "benchmarks": {"mmlu": {"fields": "question+choices", "header": False}}})
    assert (cfg.ngram.n, cfg.ngram.threshold, cfg.minhash.enabled, cfg.text_field) == (8, 0.7, False, ("body",))
    assert cfg.benchmarks["mmlu"] == BenchmarkSettings(fields=("question", "choices"), header=False)
    for raw, msg in [({"methods": {"ngram": {"treshold": 1}}}, "unknown key 'treshold'"),
                     ({"method": {}}, r"unknown section \[method\]"),
                     ({"methods": {"ngram": {"threshold": 1.5}}}, "from 0 to 1"),
                     ({"methods": {"ngram": {"n": 0}}}, "integer >= 1"),
                     ({"benchmarks": {"x": {"preset": "nope"}}}, "unknown preset 'nope'"),
                     ({"methods": {"ngram": {"score": "max"}}}, "score must be one of fraction, longest"),
                     ({"items": {"min_item_words": 0}}, r"\[items\] min_item_words must be an integer >= 1"),
                     ({"items": {"count_short": True}}, "unknown key 'count_short' in \\[items\\]")]:
        with pytest.raises(ContaminationConfigError, match=msg):
            build_contamination_config(raw, "c.toml")
    cfg = build_contamination_config({"items": {"min_item_words": 5, "count_short_items": True},
                                      "methods": {"ngram": {"score": "longest"}}})
    assert (cfg.min_item_words, cfg.count_short_items, cfg.ngram.score) == (5, True, "longest")
    cfg = cfg.with_overrides(min_item_words=3, score="fraction")
    assert (cfg.min_item_words, cfg.count_short_items, cfg.ngram.score) == (3, True, "fraction")
