"""End to end: GSM8K and ARC items planted in a tinyshakespeare training corpus (verbatim, with changed case and
spacing, embedded in the middle of longer documents) are found exactly, with the right training records, and the
clean subsets hold exactly the other items' original lines."""
from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from dataaudit.cli import main
from dataaudit.contamination import load_benchmark, load_contamination_config
from dataaudit.pipelines.contamination import run_contamination
from dataaudit.pipelines.engine import EngineOptions

# Planted items: (benchmark, item index (0-based line), how) -> training document position.
GSM_PLANTS = {4: "verbatim", 250: "case_spacing", 777: "embedded", 1318: "embedded"}
ARC_PLANTS = {0: "verbatim", 333: "case_spacing", 900: "embedded", 1171: "case_spacing"}
SHARD_ROWS = (3000, 2500)   # shard 0: Parquet rows 0..2999, shard 1: JSONL, shard 2: JSONL.gz with the rest


def _paragraphs(shared_data: Path) -> list[str]:
    text = (shared_data / "corpora" / "tinyshakespeare.txt").read_text(encoding="utf-8")
    return [p for p in text.split("\n\n") if p.strip()]


def _respace(text: str) -> str:
    """UPPER CASE, and every space / line break replaced by a varying run of whitespace."""
    pieces = text.split()
    seps = ["  ", "\n", " \t ", "   ", "\n\n "]
    return "".join(w + seps[i % len(seps)] for i, w in enumerate(pieces)).upper().strip()


def _plant(how: str, item: str, before: str, after: str) -> str:
    if how == "verbatim":
        return item
    if how == "case_spacing":
        return _respace(item)
    return f"{before}\n{item}\n{after}"          # embedded mid-document


@pytest.fixture(scope="module")
def planted(shared_data, tmp_path_factory):
    root = tmp_path_factory.mktemp("contamination")
    bench_dir = shared_data / "benchmarks"
    gsm = load_benchmark("gsm8k", str(bench_dir / "gsm8k_test.jsonl"))
    arc = load_benchmark("arc_challenge", str(bench_dir / "arc_challenge_test.jsonl"))
    docs = _paragraphs(shared_data)
    assert len(docs) == 7222
    expected = {}                                  # (benchmark, item id) -> (shard file name, key)
    slots = iter(range(37, len(docs), 811))        # where planted documents go (spread over all shards)
    for bench, plants in (("gsm8k", GSM_PLANTS), ("arc_challenge", ARC_PLANTS)):
        b = gsm if bench == "gsm8k" else arc
        for i, how in plants.items():
            pos = next(slots)
            docs[pos] = _plant(how, b.texts[i], docs[pos - 1], docs[pos + 1])
            expected[(bench, b.ids[i])] = pos
    files = {}
    a, b2 = SHARD_ROWS
    pq.write_table(pa.table({"text": docs[:a]}), root / "train-0.parquet")
    (root / "train-1.jsonl").write_text("".join(json.dumps({"text": d}) + "\n" for d in docs[a:a + b2]))
    with gzip.open(root / "train-2.jsonl.gz", "wt", encoding="utf-8") as f:
        f.write("".join(json.dumps({"id": n, "text": d}) + "\n" for n, d in enumerate(docs[a + b2:])))
    for pos in expected.values():
        if pos < a:
            files[pos] = ("train-0.parquet", str(pos))
        elif pos < a + b2:
            files[pos] = ("train-1.jsonl", str(pos - a))
        else:
            files[pos] = ("train-2.jsonl.gz", str(pos - a - b2))
    expected = {k: files[pos] for k, pos in expected.items()}
    out = root / "out"
    result = CliRunner().invoke(main, [
        "contamination", "--train", str(root / "train-0.parquet"), str(root / "train-1.jsonl"),
        str(root / "train-2.jsonl.gz"),
        "--benchmark", f"gsm8k={bench_dir / 'gsm8k_test.jsonl'}",
        "--benchmark", f"arc_challenge={bench_dir / 'arc_challenge_test.jsonl'}",
        "--out", str(out), "--decontaminate-train", "--engine", "local"])
    return {"root": root, "out": out, "result": result, "expected": expected, "gsm": gsm, "arc": arc,
            "bench_dir": bench_dir}


def _rel(path: str) -> str:
    return Path(path).name


def test_exactly_the_planted_items_are_contaminated(planted):
    result, out = planted["result"], planted["out"]
    assert result.exit_code == 1, result.output            # contamination found -> exit 1
    found = set()
    for bench in ("gsm8k", "arc_challenge"):
        t = pq.read_table(out / bench / "items.parquet")
        found |= {(bench, r["id"]) for r in t.filter(t["contaminated"]).select(["id"]).to_pylist()}
    assert found == set(planted["expected"])


def test_each_planted_item_points_at_its_training_record(planted):
    out = planted["out"]
    for bench in ("gsm8k", "arc_challenge"):
        t = pq.read_table(out / bench / "items.parquet")
        for r in t.filter(t["contaminated"]).to_pylist():
            shard, key = planted["expected"][(bench, r["id"])]
            assert [(_rel(m["shard"]), m["key"]) for m in r["matches"]] == [(shard, key)], r["id"]
            m = r["matches"][0]
            # every method sees the whole item: all n-grams, an exact occurrence
            assert r["ngram_fraction"] == 1.0 and r["ngram_found"] == r["ngram_total"] > 0
            assert r["exact_records"] == 1 and r["exact_contaminated"] and r["ngram_contaminated"]
            assert m["exact"] and m["fraction"] == 1.0
            # the snippet marks the original (unnormalized) training text of the item
            marked = m["snippet"][m["match_start"]:m["match_end"]]
            assert " ".join(marked.lower().split()) == " ".join(r["text"].lower().split()), r["id"]


def test_methods_counted_separately_and_thresholds_recorded(planted):
    report = json.loads((planted["out"] / "contamination.json").read_text())
    g, a = report["benchmarks"]["gsm8k"], report["benchmarks"]["arc_challenge"]
    assert (g["items"], g["contaminated"], g["clean"]) == (1319, 4, 1315)
    assert (a["items"], a["contaminated"], a["clean"]) == (1172, 4, 1168)
    assert g["rate"] == round(4 / 1319, 6)
    assert g["methods"]["ngram"] == 4 and g["methods"]["exact"] == 4
    # MinHash (near-copies): only the planted documents that are the item alone, not the embedded ones
    assert g["methods"]["minhash"] == 2 and a["methods"]["minhash"] == 3
    assert report["methods"]["ngram"]["n"] == 13 and report["methods"]["ngram"]["threshold"] == 0.5
    assert report["methods"]["minhash"]["threshold"] == 0.8
    assert g["parameters"]["methods"]["ngram"] == {"enabled": True, "n": 13, "threshold": 0.5, "score": "fraction"}
    assert g["preset"] == "gsm8k" and g["fields"] == ["question"] and g["id_field"] is None
    assert a["preset"] == "arc" and a["fields"] == ["question.stem"]      # the stem, as lm-eval's query
    assert a["id_field"] == "id"
    assert report["totals"]["train_records"] == 7222 and report["totals"]["unreadable_shards"] == 0
    assert [s["records"] for s in report["train"]["shards"]] == [3000, 2500, 1722]


def test_clean_subset_is_the_other_items_original_lines(planted):
    out, bench_dir = planted["out"], planted["bench_dir"]
    for bench, fname, plants in (("gsm8k", "gsm8k_test.jsonl", GSM_PLANTS),
                                 ("arc_challenge", "arc_challenge_test.jsonl", ARC_PLANTS)):
        lines = (bench_dir / fname).read_bytes().splitlines(keepends=True)
        want = b"".join(ln for i, ln in enumerate(lines) if i not in plants)
        assert (out / bench / "clean.jsonl").read_bytes() == want


def test_decontaminate_list_is_the_planted_records(planted):
    t = pq.read_table(planted["out"] / "decontaminate.parquet").to_pylist()
    got = {(_rel(r["shard"]), r["key"]): r["items"] for r in t}
    want = {}
    for (bench, item_id), loc in planted["expected"].items():
        want.setdefault(loc, []).append(f"{bench}/{item_id}")
    assert got == want


def test_html_has_bars_and_side_by_side_matches(planted):
    html = (planted["out"] / "contamination.html").read_text()
    assert html.count('class="bar') == 2
    assert html.count("<mark>") == 8                    # the worst items (all 8 contaminated) with their match
    assert "<script" not in html.lower() and "built-in method" not in html
    assert "items<b>2491</b>" in html and "contaminated<b class=\"error\">8</b>" in html
    assert 'title="4 of 1319"' in html and "lsh bands=" in html


def test_engines_and_resume_agree(planted, tmp_path, ray_session):
    root = planted["root"]
    paths = [str(root / "train-0.parquet"), str(root / "train-1.jsonl"), str(root / "train-2.jsonl.gz")]
    benches = [planted["gsm"], planted["arc"]]
    config = load_contamination_config(None)
    local = run_contamination(paths, benches, config, tmp_path / "local",
                              options=EngineOptions("local"), decontaminate_train=True)
    ray = run_contamination(paths, benches, config, tmp_path / "ray",
                            options=EngineOptions("ray"), decontaminate_train=True)
    again = run_contamination(paths, benches, config, tmp_path / "local",
                              options=EngineOptions("local"), decontaminate_train=True)
    assert again["run"]["resumed_shards"] == 3
    for r in (ray, again):
        assert {k: v for k, v in r.items() if k != "run"} == {k: v for k, v in local.items() if k != "run"}
    for name in ("gsm8k/items.parquet", "arc_challenge/items.parquet", "decontaminate.parquet"):
        assert pq.read_table(tmp_path / "ray" / name).equals(pq.read_table(tmp_path / "local" / name))
    assert (tmp_path / "ray" / "gsm8k" / "clean.jsonl").read_bytes() == \
        (tmp_path / "local" / "gsm8k" / "clean.jsonl").read_bytes()


def test_no_contamination_exits_0(planted, shared_data, tmp_path):
    clean = tmp_path / "clean.jsonl"
    clean.write_text("".join(json.dumps({"text": p}) + "\n" for p in _paragraphs(shared_data)[:500]))
    result = CliRunner().invoke(main, ["contamination", "--train", str(clean), "--benchmark",
                                       f"gsm8k={planted['bench_dir'] / 'gsm8k_test.jsonl'}",
                                       "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "out" / "contamination.json").read_text())
    assert report["totals"]["contaminated"] == 0
    assert (tmp_path / "out" / "gsm8k" / "clean.jsonl").read_bytes() == \
        (planted["bench_dir"] / "gsm8k_test.jsonl").read_bytes()


@pytest.mark.parametrize("args, pattern", [
    (["--benchmark", "gsm8k={bench}:nope"], r"gsm8k_test\.jsonl: line 1: field 'nope' not found"),
    (["--benchmark", "gsm8k={bad}"],
     r"bad\.jsonl: row 1 \(line 3\): Expecting property name enclosed in double quotes at column 19"),
    (["--benchmark", "gsm8k={missing_field}"], r"missing\.jsonl: line 2: field 'question' not found"),
    (["--benchmark", "gsm8k={tmp}/nope.jsonl"], r"nope\.jsonl: file not found"),
    (["--benchmark", "gsm8k={tmp}/x.xml"], r"x\.xml: unsupported benchmark format"),
    (["--benchmark", "bad/name={bench}"], r"the name 'bad/name' must be"),
    (["--benchmark", "gsm8k={bench}", "--benchmark", "gsm8k={bench}"], r"the name 'gsm8k' is given twice"),
    (["--benchmark", "gsm8k"], r"expected NAME=PATH"),
])
def test_bad_input_is_one_line_exit_2(planted, tmp_path, args, pattern):
    (tmp_path / "bad.jsonl").write_text('{"question": "a"}\n\n{"question": "b", }\n')
    (tmp_path / "missing.jsonl").write_text('{"question": "a"}\n{"answer": "b"}\n')
    (tmp_path / "x.xml").write_text("hello\n")
    fmt = {"bench": planted["bench_dir"] / "gsm8k_test.jsonl", "bad": tmp_path / "bad.jsonl",
           "missing_field": tmp_path / "missing.jsonl", "tmp": tmp_path}
    result = CliRunner().invoke(main, ["contamination", "--train", str(planted["root"] / "train-1.jsonl"),
                                       *[a.format(**fmt) for a in args], "--out", str(tmp_path / "out")])
    assert result.exit_code == 2, result.output
    lines = [ln for ln in result.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.output
    assert re.search(pattern, lines[0]), lines[0]
