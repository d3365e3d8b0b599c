"""Options that take several values (`dedup --against`, `contamination --train`) read every value up to the next
option; given none, the error names them."""
from __future__ import annotations

import json

from click.testing import CliRunner

from dataaudit.cli import main


def test_contamination_usage_has_no_positional_shards_and_train_takes_several(tmp_path):
    res = CliRunner().invoke(main, ["contamination", "--help"])
    assert res.output.splitlines()[0] == "Usage: main contamination [OPTIONS]"
    bench = tmp_path / "b.jsonl"
    bench.write_text(json.dumps({"text": "what is the capital of a country far away from here"}) + "\n")
    a, b = tmp_path / "a.jsonl", tmp_path / "c.jsonl"
    for p in (a, b):
        p.write_text(json.dumps({"text": "nothing in common"}) + "\n")
    res = CliRunner().invoke(main, ["contamination", "--train", str(a), str(b), "--benchmark", f"b={bench}",
                                    "--out", str(tmp_path / "out")])
    assert res.exit_code == 0, res.output
    report = json.loads((tmp_path / "out" / "contamination.json").read_text())
    assert [s["path"] for s in report["train"]["shards"]] == [str(a), str(b)]
    res = CliRunner().invoke(main, ["contamination", "--train", "--benchmark", f"b={bench}", "--out", "x"])
    assert res.exit_code == 2
    assert res.output.splitlines()[-1] == "Error: --train needs at least one value (files, folders or quoted globs)"


def test_dedup_against_without_a_value_names_against(tmp_path):
    shard = tmp_path / "a.jsonl"
    shard.write_text(json.dumps({"text": "hello"}) + "\n")
    res = CliRunner().invoke(main, ["dedup", str(shard), "--against", "--out", str(tmp_path / "out")])
    assert res.exit_code == 2 and not (tmp_path / "out").exists()
    assert res.output.splitlines()[-1] == "Error: --against needs at least one value (files, folders or quoted globs)"


def test_a_folder_walk_leaves_out_the_files_of_dataaudit_jobs(tmp_path):
    from dataaudit.cli.paths import expand_shards

    def touch(rel: str, text: str = '{"text": "x"}\n') -> str:
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
        return str(p)

    data = touch("out/shard-0.jsonl")                     # a cleaned shard written by `clean`
    touch("out/.dataaudit/clean.json", "{}")          # clean's own files, in its hidden folder
    touch("out/.dataaudit/dropped.parquet")
    touch("out/.dataaudit/parts/clean/00000-abc.jsonl")
    touch("audit/report.json", "{}")
    touch("audit/flags.parquet")
    touch("contam/contamination.json", "{}")
    touch("contam/gsm8k/items.parquet")
    bench_clean = touch("contam/gsm8k/clean.jsonl")        # the clean benchmark subset is data
    other = touch("plain/flags.parquet")                    # no job record beside it: data
    assert expand_shards([str(tmp_path)]) == sorted([bench_clean, data, other])


def test_a_quoted_glob_of_unsupported_files_is_one_line_and_exit_2_in_every_command(tmp_path):
    """A glob matching files of no format (.xml) is refused as naming such a file is (issue 36): one line, exit 2,
    no traceback."""
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for name in ("a.xml", "b.xml"):
        (corpus / name).write_text("<doc>first line</doc>\n")
    bench = tmp_path / "b.jsonl"
    bench.write_text(json.dumps({"text": "what is the capital of a country far away from here"}) + "\n")
    pattern, out = str(corpus / "*.xml"), str(tmp_path / "out")
    for args in (["audit", pattern, "--out", out], ["dedup", pattern, "--out", out],
                 ["contamination", "--train", pattern, "--benchmark", f"b={bench}", "--out", out],
                 ["clean", pattern, "--audit", str(tmp_path / "audit"), "--out", out]):
        res = CliRunner().invoke(main, args)
        assert res.exit_code == 2, (args, res.output)
        assert res.exception is None or isinstance(res.exception, SystemExit), (args, res.exception)
        [line] = res.output.splitlines()
        assert line.startswith(f"Error: {corpus / 'a.xml'}: unsupported shard format (expected "), (args, line)
        assert line.endswith(", .txt/.txt.gz/.text or .arrow)"), (args, line)


def test_tokenizer_option_takes_a_folder_as_the_config_does(tmp_path):
    """`--tokenizer DIR` (tokenizer.json + tokenizer_config.json) is accepted wherever `[data] tokenizer = DIR` is
    (issue 36): both audits count the same conversation tokens with the folder's chat template."""
    from tests.stats.conversation_helpers import tokenizer_folder

    tok = tokenizer_folder(tmp_path / "tok")
    shard = tmp_path / "chat.jsonl"
    shard.write_text(json.dumps({"messages": [{"role": "user", "content": "hello"},
                                              {"role": "assistant", "content": "hello there"}]}) + "\n")
    cfg = tmp_path / "audit.toml"
    cfg.write_text(f"[data]\ntokenizer = {json.dumps(str(tok))}\n")
    by_option = CliRunner().invoke(main, ["audit", str(shard), "--tokenizer", str(tok), "--out",
                                          str(tmp_path / "a"), "--engine", "local"])
    by_config = CliRunner().invoke(main, ["audit", str(shard), "--config", str(cfg), "--out", str(tmp_path / "b"),
                                          "--engine", "local"])
    assert by_option.exit_code == by_config.exit_code == 0, by_option.output
    a, b = (json.loads((tmp_path / o / "report.json").read_text()) for o in ("a", "b"))
    assert a["lengths"] and a["lengths"] == b["lengths"]
    empty = tmp_path / "empty"
    empty.mkdir()
    res = CliRunner().invoke(main, ["audit", str(shard), "--tokenizer", str(empty), "--out", str(tmp_path / "c")])
    assert res.exit_code == 2
    assert res.output.splitlines()[-1].endswith(f"[data] tokenizer folder has no tokenizer.json: {empty}")


def test_a_wrapped_json_file_is_read_as_its_records_by_every_command(tmp_path):
    """Issue 36: {"version": ..., "data": [...]} is the records of "data" for audit, dedup, contamination and clean
    alike (one rule, in the reader), and clean writes the wrapper back without the dropped records."""
    import pyarrow.parquet as pq

    fox = "the quick brown fox jumps over the lazy dog near the river bank today"
    recs = [{"text": f"record number {i} is about topic {i} and nothing else at all"} for i in range(8)]
    recs[5], recs[6], recs[7] = dict(recs[2]), {"text": ""}, {"text": fox}
    data = tmp_path / "data"
    data.mkdir()
    shard = data / "w.json"
    shard.write_text(json.dumps({"version": "1.0", "data": recs}, indent=2))
    bench = tmp_path / "bench.jsonl"
    bench.write_text(json.dumps({"text": fox}) + "\n")

    def run(*args):
        return CliRunner().invoke(main, [*map(str, args), "--engine", "local"])

    res = run("audit", shard, "--out", tmp_path / "a")
    assert res.exit_code == 0, res.output
    report = json.loads((tmp_path / "a" / "report.json").read_text())
    assert report["totals"]["samples"] == 8 and report["shards"][0]["fields"] == {"text": ["text"]}
    flags = pq.read_table(tmp_path / "a" / "flags.parquet").to_pylist()
    assert [(f["row"], f["line"], f["check"]) for f in flags] == [(6, 22, "empty_text")]
    assert run("dedup", shard, "--out", tmp_path / "d").exit_code == 0
    kept = pq.read_table(tmp_path / "d" / "keep.parquet").column("row").to_pylist()
    assert kept == [0, 1, 2, 3, 4, 6, 7]
    res = run("contamination", "--train", shard, "--benchmark", f"b={bench}", "--decontaminate-train",
              "--out", tmp_path / "c")
    assert res.exit_code == 1, res.output
    assert [(r["row"], r["line"]) for r in pq.read_table(tmp_path / "c" / "decontaminate.parquet").to_pylist()] \
        == [(7, 25)]
    res = run("clean", shard, "--audit", tmp_path / "a", "--dedup", tmp_path / "d", "--contamination",
              tmp_path / "c", "--check", "empty_text", "--out", tmp_path / "cl")
    assert res.exit_code == 0, res.output
    assert json.loads((tmp_path / "cl" / "w.json").read_text()) == {"version": "1.0", "data": recs[:5]}
