"""Each HTML page says which output files to open next, and the summary's "wrote" line is never wrapped inside a
path."""
from __future__ import annotations

import json

from click.testing import CliRunner

from dataaudit.cli import main


def _corpus(tmp_path):
    p = tmp_path / "a" / "very" / "long" / "folder" / "name" / "so" / "that" / "paths" / "pass" / "eighty" / "c.jsonl"
    p.parent.mkdir(parents=True)
    text = "the same document about cats and dogs and the weather in spring and summer"
    p.write_text("".join(json.dumps({"text": t}) + "\n" for t in (text, text, "something else entirely, alone")))
    return p


def test_audit_page_names_flags_parquet(tmp_path):
    out = tmp_path / "out-with-a-long-name-too"
    res = CliRunner().invoke(main, ["audit", str(_corpus(tmp_path)), "--out", str(out), "--engine", "local"])
    assert res.exit_code == 0, res.output
    html = (out / "report.html").read_text()
    assert "<code>flags.parquet</code> (next to this page)" in html and "<code>report.json</code>" in html


def test_dedup_page_names_keep_and_clusters_and_the_wrote_line_is_one_line(tmp_path):
    out = tmp_path / "out-with-a-long-name-too"
    res = CliRunner().invoke(main, ["dedup", str(_corpus(tmp_path)), "--out", str(out), "--engine", "local"])
    assert res.exit_code == 0, res.output
    html = (out / "dedup.html").read_text()
    for name in ("keep.parquet", "clusters.parquet", "dedup.json"):
        assert f"<code>{name}</code>" in html
    assert "overlap.parquet" not in html
    # the cluster-size headers sit over their counts (both right-aligned)
    assert '<th class="num">2</th>' in html and "th.num" in html
    [wrote] = [line for line in res.output.splitlines() if line.startswith("wrote ")]
    assert wrote == "wrote " + ", ".join(str(out / f) for f in ("dedup.json", "clusters.parquet", "keep.parquet",
                                                                 "dedup.html"))


def test_audit_summary_says_one_shard_and_writes_one_line(tmp_path):
    out = tmp_path / "out-with-a-long-name-too"
    res = CliRunner().invoke(main, ["audit", str(_corpus(tmp_path)), "--out", str(out), "--engine", "local"])
    assert res.exit_code == 0, res.output
    assert "dataaudit audit: 3 samples in 1 shard " in " ".join(res.output.split())   # the title wraps with the table
    [wrote] = [line for line in res.output.splitlines() if line.startswith("wrote ")]
    assert wrote == f"wrote {out / 'report.json'}, {out / 'flags.parquet'}, {out / 'report.html'}"


def test_an_unreadable_shard_is_shown_with_its_error_in_the_notes_and_the_page(tmp_path):
    good = _corpus(tmp_path)
    bad = tmp_path / "bad.tar"
    bad.write_bytes(b"this is not a tar archive at all" * 20)
    out = tmp_path / "out"
    res = CliRunner().invoke(main, ["audit", str(good), str(bad), "--out", str(out), "--engine", "local"])
    assert res.exit_code == 1, res.output
    report = json.loads((out / "report.json").read_text())
    [shard] = [s for s in report["shards"] if s["status"] != "ok"]
    note = f"unreadable shard {bad}: {shard['error']} (the records read before the break are counted)"
    assert note in report["notes"] and shard["error"].startswith("tar: ")
    html = (out / "report.html").read_text()
    assert f"<li>unreadable shard {bad}: {shard['error']}" in html and "shards[].error" not in html
