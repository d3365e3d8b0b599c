"""One record-numbering rule for every command: `row` is the 0-based record index in the shard (blank JSONL lines
are no records), `line` the 1-based physical line where the record starts (JSONL, JSON arrays; null otherwise).
Checked in flags.parquet, report.json and report.html examples, the unreadable-record text, clean's dropped list,
contamination's matches and decontaminate list, and on the real GSM8K file."""
from __future__ import annotations

import json
import math
import re

import pyarrow as pa
import pyarrow.parquet as pq
from click.testing import CliRunner

from dataaudit.cli import main
from dataaudit.formats import iter_shard
from dataaudit.sources import LINE, ROW


def run(*args) -> None:
    r = CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)
    assert r.exit_code in (0, 1), r.output


def table(path) -> pa.Table:
    return pa.Table.from_batches(list(iter_shard(str(path))))


# A JSONL shard: blank lines 2 and 5-6, a broken record on line 4 (row 2), a record after the blanks on line 7.
JSONL = (b'{"text": "The first record is fine and reads well enough."}\n'
         b"\n"
         b'{"text": "The second record sits on line three of the file."}\n'
         b'{"text": broken}\n'
         b"\n"
         b"   \n"
         b'{"text": "The fourth record starts on line seven."}\n')


def test_jsonl_rows_skip_blank_lines_lines_do_not(tmp_path):
    (tmp_path / "data").mkdir()
    shard = tmp_path / "data" / "s.jsonl"     # clean writes beside, never inside, its inputs' folder
    shard.write_bytes(JSONL)
    t = table(shard)
    assert t.column(ROW).to_pylist() == [0, 1, 2, 3] and t.column(LINE).to_pylist() == [1, 3, 4, 7]
    assert t.column("__key__").to_pylist() == ["0", "1", "2", "3"]   # the key is the row, as text

    out = tmp_path / "audit"
    run("audit", shard, "--out", out)
    flags = pq.read_table(out / "flags.parquet").to_pylist()
    bad = [f for f in flags if f["check"] == "unreadable_record"]
    assert [(f["key"], f["row"], f["line"], f["detail"]) for f in bad] == [
        ("2", 2, 4, "row 2 (line 4): Expecting value at column 10")]
    report = json.loads((out / "report.json").read_text())
    (ex,) = report["examples"]["unreadable_record"]
    assert (ex["key"], ex["row"], ex["line"]) == ("2", 2, 4)
    assert ex["detail"] == "row 2 (line 4): Expecting value at column 10"
    page = (out / "report.html").read_text()
    assert re.search(r'<td class="num">2</td>\s*<td class="num">4</td><td></td>\s*'
                     r'<td>row 2 \(line 4\): Expecting value at column 10</td>', page)

    # clean drops that record and names it by the same row and line
    run("clean", shard, "--audit", out, "--out", tmp_path / "clean")
    dropped = pq.read_table(tmp_path / "clean" / ".dataaudit/dropped.parquet").to_pylist()
    assert [(d["key"], d["row"], d["line"], d["reasons"]) for d in dropped] == [
        ("2", 2, 4, ["check:unreadable_record"])]


def test_json_array_line_is_where_each_object_starts(tmp_path):
    shard = tmp_path / "a.json"
    data = '[\n  {\n    "text": "one"\n  },\n\n  {"text": "two"},\n  7,\n  {\n    "text":\n      "three"\n  }\n]\n'
    shard.write_text(data)
    t = table(shard)
    assert t.column(ROW).to_pylist() == [0, 1, 2, 3] and t.column(LINE).to_pylist() == [2, 6, 7, 8]
    assert data.index("7,") == 51
    assert t.column("__error__").to_pylist()[2] == "row 2 (line 7) at byte 51: not a JSON object (int)"
    # Parquet has no lines
    pq.write_table(pa.table({"text": ["a", "b"]}), tmp_path / "p.parquet")
    assert table(tmp_path / "p.parquet").column(LINE).to_pylist() == [None, None]


LEAK = "Natalia sold clips to forty eight of her friends in April and then she sold half as many clips in May"


def _contamination(tmp_path, train, bench_arg):
    out = tmp_path / "con"
    run("contamination", "--train", train, "--benchmark", bench_arg, "--out", out, "--decontaminate-train")
    return out


def test_contamination_names_the_leak_by_row_and_line(tmp_path):
    train = tmp_path / "train.jsonl"
    lines = [json.dumps({"text": f"An unrelated training document number {i} about gardens and rivers."})
             for i in range(3)]
    train.write_text("\n".join(lines[:2]) + "\n\n\n" + json.dumps({"text": f"Intro. {LEAK}. Outro."}) + "\n"
                     + lines[2] + "\n")
    bench = tmp_path / "bench.json"
    bench.write_text(json.dumps([{"text": "something else entirely, not in the training data at all"},
                                 {"text": LEAK}], indent=1))
    out = _contamination(tmp_path, train, f"toy={bench}")
    items = pq.read_table(out / "toy" / "items.parquet").to_pylist()
    assert [(i["index"], i["id"], i["line"], i["contaminated"]) for i in items] == [
        (0, "0", 2, False), (1, "1", 5, True)]
    (m,) = items[1]["matches"]
    assert (m["key"], m["row"], m["line"]) == ("2", 2, 5)   # row 2 (blank lines 3-4 take none) on line 5
    decon = pq.read_table(out / "decontaminate.parquet").to_pylist()
    assert [(d["key"], d["row"], d["line"], d["items"]) for d in decon] == [("2", 2, 5, ["toy/1"])]
    (worst,) = [w for w in json.loads((out / "contamination.json").read_text())["benchmarks"]["toy"]["worst"]
                if w["contaminated"]]
    assert (worst["index"], worst["line"], worst["match"]["row"], worst["match"]["line"]) == (1, 5, 2, 5)
    assert "row 1 (line 5)" in (out / "contamination.html").read_text()


def test_gsm8k_record_10_is_line_11(shared_data, tmp_path):
    gsm = shared_data / "benchmarks" / "gsm8k_test.jsonl"
    t = table(gsm)
    assert (t.column("__key__")[10].as_py(), t.column(ROW)[10].as_py(), t.column(LINE)[10].as_py()) == ("10", 10, 11)
    question = json.loads(gsm.read_text(encoding="utf-8").splitlines()[10])["question"]
    train = tmp_path / "train.jsonl"
    train.write_text("\n\n" + json.dumps({"text": "A short unrelated document about the sea."}) + "\n\n"
                     + json.dumps({"text": question}) + "\n")
    out = _contamination(tmp_path, train, f"gsm8k={gsm}")
    items = pq.read_table(out / "gsm8k" / "items.parquet").to_pylist()
    hit = [i for i in items if i["contaminated"]]
    assert [(i["index"], i["id"], i["line"]) for i in hit] == [(10, "11", 11)]   # preset id: the line number
    assert [(m["row"], m["line"]) for m in hit[0]["matches"]] == [(1, 5)]


# --- numeric findings show the offending value ------------------------------------------------------------------

def test_numeric_details_name_the_element_and_value(tmp_path):
    nan, inf = math.nan, math.inf
    shard = tmp_path / "num.parquet"
    pq.write_table(pa.table({
        "text": ["a plain caption of a few words"] * 4,
        "embedding": [[0.0, 1.0, nan, 2.0, inf], [1.0, 2.0, 3.0], [0.0, 0.0, 0.0], [-5e4, 1.0, 2e4]],
        "loss_weight": [1.0, 1e38, -inf, 2.0]}), shard)
    config = tmp_path / "c.toml"
    config.write_text("[checks.out_of_range]\nmax = 1e6\n")
    out = tmp_path / "audit"
    run("audit", shard, "--out", out, "--config", config)
    numeric = ("nonfinite", "out_of_range", "extreme_span", "constant")
    flags = sorted((f["row"], f["field"], f["check"], f["detail"])
                   for f in pq.read_table(out / "flags.parquet").to_pylist() if f["check"] in numeric)
    assert flags == [
        (0, "embedding", "nonfinite", "embedding[2] = nan (2 non-finite elements)"),
        (0, "embedding", "out_of_range", "embedding[4] = inf > 1e+06"),
        (1, "loss_weight", "out_of_range", "loss_weight = 1e+38 > 1e+06"),
        (2, "embedding", "constant", "embedding: all 3 finite elements = 0 (std 0 < 1e-06)"),
        (2, "loss_weight", "nonfinite", "loss_weight = -inf"),
        (3, "embedding", "extreme_span",
         "embedding: max embedding[2] = 20000, min embedding[0] = -50000, span 70000 > 10000"),
    ]
    report = json.loads((out / "report.json").read_text())
    (ex,) = report["examples"]["extreme_span"]
    assert (ex["row"], ex["line"], ex["snippet"]) == (3, None, None)   # the value, not the record's text
    page = (out / "report.html").read_text()
    assert "<td>embedding: max embedding[2] = 20000, min embedding[0] = -50000, span 70000 &gt; 10000</td><td></td>" \
        in page
    assert "a plain caption" not in page
