"""clean.html, the page of `dataaudit clean`: the overview first (records in = kept + dropped, the shards left out
or not cleaned, with their reasons), the drops per reason, per shard and the first dropped records; data shown as
text, never as markup."""
from __future__ import annotations

import json
import re

from dataaudit.report.pages import write_clean_html
from tests.builders import HOSTILE_HTML, make_tar
from tests.clean.helpers import cli, fake_audit

ESCAPED = HOSTILE_HTML.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&#34;") \
    .replace("'", "&#39;")


def _text(html: str) -> str:
    """The page's text, tags removed and spaces collapsed (entities kept)."""
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def _section(html: str, start: str, end: str = "<h2") -> str:
    return html[html.index(start):html.index(end, html.index(start) + 1)]


def test_the_page_of_a_clean_run(tmp_path):
    """A tar whose dropped sample's key is hostile HTML, a JSONL shard losing 2 of 5 records and a shard the audit
    could not read (left out): the page states every count exactly and shows the key as text."""
    data = tmp_path / "data"
    data.mkdir()
    jsonl = data / "a.jsonl"
    jsonl.write_text("".join(json.dumps({"text": f"record number {i}"}) + "\n" for i in range(5)))
    bad = data / "b.parquet"
    bad.write_bytes(b"PAR1 not really")
    tar = make_tar(data / "c.tar", [("ok-0.txt", b"first caption"), (f"{HOSTILE_HTML}.txt", b"second caption"),
                                    ("ok-2.txt", b"third caption")])
    audit = fake_audit(tmp_path / "audit", {str(jsonl): [0, 2], str(tar): [1]},
                       {str(jsonl): 5, str(bad): 0, str(tar): 3}, status={str(bad): "unreadable"})
    out = tmp_path / "out"
    code, text = cli("clean", data, "--audit", audit, "--out", out, "--skip-unreadable")
    assert code == 0, text
    assert text.rstrip().endswith(f"{out / '.dataaudit/clean.html'}")
    report = json.loads((out / ".dataaudit/clean.json").read_text())
    assert report["first_dropped"] == [
        {"shard": str(jsonl), "key": "0", "row": 0, "line": 1, "reasons": ["check:nonfinite"]},
        {"shard": str(jsonl), "key": "2", "row": 2, "line": 3, "reasons": ["check:nonfinite"]},
        {"shard": str(tar), "key": HOSTILE_HTML, "row": 1, "line": None, "reasons": ["check:nonfinite"]}]
    assert report["files"] == {"dropped": ".dataaudit/dropped.parquet", "page": ".dataaudit/clean.html"}
    html = (out / ".dataaudit/clean.html").read_text(encoding="utf-8")

    assert "<script" not in html and "<img" not in html      # the key is text
    assert html.count(ESCAPED) == 1                           # in the first dropped records
    assert "<title>dataaudit clean</title>" in html
    overview = _text(_section(html, '<section id="overview">', "</section>"))
    assert html.index('id="overview"') < html.index("<h2")    # the overview comes first
    assert "kept 5 of 8 records in 2 shards, dropped 3 (37.5%); 1 shard left out" in overview
    assert "records in 8 kept 5 dropped 3 shards cleaned 2 left out 1 not cleaned 0" in overview
    assert "Balanced: 8 in = 5 kept + 3 dropped, for every shard and in all" in overview
    assert f"{bad} the audit could not read it to the end (broken)" in overview
    assert "Every shard given was cleaned" not in overview
    reasons = _text(_section(html, 'id="dropped-by"'))
    assert "check:nonfinite 3" in reasons and 'style="width: 100.0%"' in _section(html, 'id="dropped-by"')
    shards = _text(_section(html, 'id="shards"'))
    assert f"{jsonl} 5 3 2 check:nonfinite 2 a.jsonl" in shards
    assert f"{tar} 3 2 1 check:nonfinite 1 c.tar" in shards
    assert "<details open>" in html                           # few shards: the table is open
    first = _text(_section(html, 'id="first-dropped"'))
    assert "All 3, in shard and row order" in first
    assert f"{jsonl} 0 (line 1) 0 check:nonfinite {jsonl} 2 (line 3) 2 check:nonfinite {tar} 1 {ESCAPED} " \
           "check:nonfinite" in first


def test_many_shards_collapsed_and_a_shard_not_cleaned(tmp_path):
    """Over ten shards the per-shard table is collapsed; a shard that could not be written is named with its error
    (escaped) in the overview; with nothing dropped there is no list of dropped records."""
    shards = [{"path": f"data/s{i:02d}.jsonl", "output": f"s{i:02d}.jsonl", "rows": 4, "kept": 4, "dropped": 0,
               "dropped_by": {}} for i in range(12)]
    report = {"schema_version": 1, "run": {"engine": "local", "seconds": 0.5}, "findings": {"audit": "a"},
              "selection": {"severity": None, "checks": ["empty_text"], "dedup": False, "contamination": False},
              "totals": {"shards": 12, "rows": 48, "kept": 48, "dropped": 0, "dropped_by": {}, "skipped_shards": 0,
                         "failed_shards": 1},
              "shards": shards, "skipped": [], "failed": [{"path": "data/z.jsonl", "error": "ValueError: <b>x"}],
              "first_dropped": [], "files": {"dropped": "dropped.parquet", "page": "clean.html"}}
    path = tmp_path / "clean.html"
    write_clean_html(path, report)
    html = path.read_text(encoding="utf-8")
    overview = _text(_section(html, '<section id="overview">', "</section>"))
    assert "kept 48 of 48 records in 12 shards, dropped 0 (0.0%); 1 shard not cleaned (exit 1)" in overview
    assert "data/z.jsonl ValueError: &lt;b&gt;x" in overview
    assert "no flag by severity, flags of empty_text" in _text(html)
    assert "<details>" in html and "<details open>" not in html
    assert "Nothing dropped" in html and 'id="first-dropped"' not in html
