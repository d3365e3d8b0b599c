"""report.html leads with what matters: the verdict, flags per check, a shard x check matrix and the worst records come
first; the reference tables (fields, all checks with their settings, skipped checks) follow, collapsed; data stays
escaped."""
from __future__ import annotations

import json
import os
import re
from html import unescape
from html.parser import HTMLParser

import pytest
from click.testing import CliRunner

from dataaudit.cli import main
from dataaudit.report.overview import shards_line, worst_records
from dataaudit.report.pages import write_report_html
from dataaudit.stats.lengths import LengthStats

SHARD_A = [{"id": "a0", "text": "A perfectly normal sentence about the weather today."},
           {"id": "a1", "text": ""},
           {"id": "a2", "text": "Bad control \x07 char <script>alert(1)</script> cafÃ© here."},
           {"id": "a3", "text": ""},
           {"id": "a0", "text": "Another perfectly normal sentence about cooking pasta."}]
SHARD_B = [{"id": "b0", "text": "Mojibake Ã©tÃ© cafÃ© text is here for you."},
           {"id": "b1", "text": ""},
           {"id": "b2", "text": "Fine line of text that says nothing much at all."}]


def _jsonl(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return str(path)


@pytest.fixture(scope="module")
def audited(tmp_path_factory):
    """Two shards with known flags: a.jsonl empty_text x2, control_chars (error here), mojibake, duplicate_id;
    b.jsonl empty_text, mojibake."""
    root = tmp_path_factory.mktemp("overview")
    _jsonl(root / "a.jsonl", SHARD_A), _jsonl(root / "b.jsonl", SHARD_B)
    (root / "audit.toml").write_text('[checks.control_chars]\nseverity = "error"\n', encoding="utf-8")
    out = root / "out"
    cwd = os.getcwd()
    os.chdir(root)      # shards named as given: a.jsonl, b.jsonl
    try:
        res = CliRunner().invoke(main, ["audit", "a.jsonl", "b.jsonl", "--config", "audit.toml", "--out", "out",
                                        "--engine", "local"])
    finally:
        os.chdir(cwd)
    assert res.exit_code == 1, res.output
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    return root, report, (out / "report.html").read_text(encoding="utf-8")


class _Tables(HTMLParser):
    """Each <table>'s class and its rows, each row the text of its cells."""

    def __init__(self):
        super().__init__()
        self.tables: list[tuple[str, list[list[str]]]] = []
        self._cell: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self.tables.append((dict(attrs).get("class") or "", []))
        elif tag == "tr" and self.tables:
            self.tables[-1][1].append([])
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self.tables[-1][1][-1].append(" ".join("".join(self._cell).split()))
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def _table(html: str, cls: str) -> list[list[str]]:
    parser = _Tables()
    parser.feed(html)
    (rows,) = [rows for c, rows in parser.tables if c == cls]
    return rows


def test_the_overview_comes_before_the_examples_and_the_reference_tables(audited):
    _, _, html = audited
    marks = ['class="cards"', 'class="verdict error"', 'id="flags-per-check"', 'id="shard-matrix"',
             'id="worst-records"', 'id="examples"', 'id="check-empty_text"', 'id="lengths"', 'id="reference"',
             "<summary>Fields of each shard</summary>", "<summary>All checks, with their settings",
             "<summary>Skipped checks"]
    positions = [html.index(m) for m in marks]
    assert positions == sorted(positions)
    assert html.index('</section>') < html.index('id="examples"')      # the overview section ends first


def test_the_verdict_names_what_sets_the_exit_code(audited):
    _, _, html = audited
    verdict = re.search(r'<p class="verdict error">(.*?)</p>', html, re.S).group(1)
    assert " ".join(verdict.split()) == "<b>exit 1:</b> 1 flagged record at error severity (control_chars)"


def test_the_bar_chart_lists_exactly_the_flagged_checks_with_their_counts(audited):
    _, report, html = audited
    bars = re.findall(r'<g class="bar" data-check="([^"]+)" data-count="(\d+)">', html)
    assert bars == [("empty_text", "3"), ("mojibake", "2"), ("control_chars", "1"), ("duplicate_id", "1")]
    assert {n: c["flagged"] for n, c in report["checks"].items() if c["flagged"]} == \
        {n: int(k) for n, k in bars}
    svg = re.search(r'<svg[^>]*class="bars"[^>]*>', html).group()
    assert 'width="100%"' in svg and 'viewBox="0 0 900 96"' in svg
    assert '<rect x="200" y="51" width="210.0" height="16" fill="#b00020"/>' in html   # control_chars: error red
    # a bar opens the check's examples; duplicate_id has none on the page, so its bar links nowhere
    assert '<a href="#check-empty_text"><g class="bar" data-check="empty_text"' in html
    assert '<a href="#check-duplicate_id">' not in html


def test_the_matrix_counts_flagged_records_per_shard_and_check(audited):
    _, _, html = audited
    assert '<th class="vert error" title="control_chars"><span>control_chars</span></th>' in html   # written upwards
    assert _table(html, "matrix") == [
        ["shard", "empty_text", "mojibake", "control_chars", "duplicate_id"],
        ["a.jsonl", "2", "1", "1", "1"],
        ["b.jsonl", "1", "1", "0", "0"],
    ]
    assert '<td class="num cell" style="background: #a15c00ff; color: #fff"><a href="#check-empty_text">2</a></td>' \
        in html                                                  # the largest cell, darkest
    assert '<td class="num cell" style="background: #b0002093"><a href="#check-control_chars">1</a></td>' in html
    assert '<td class="num cell muted">0</td>' in html


def test_the_worst_records_come_from_the_examples(audited):
    _, _, html = audited
    assert _table(html, "worst") == [
        ["shard", "row", "key", "checks", "first detail"],
        ["a.jsonl", "2", "2", "control_chars, mojibake", "1 control chars (max 0): U+0007"],
        ["a.jsonl", "1", "1", "empty_text", "empty string"],
        ["a.jsonl", "3", "3", "empty_text", "empty string"],
        ["b.jsonl", "0", "0", "mojibake", "3 mojibake sequences: 'Ã©'→'é' x3"],
        ["b.jsonl", "1", "1", "empty_text", "empty string"],
    ]
    assert '<h2 id="worst-records">Worst records, from the examples shown</h2>' in html


def test_the_reference_tables_are_collapsed(audited):
    _, report, html = audited
    reference = html[html.index('<section id="reference-tables">'):]
    blocks = re.findall(r"<details class=\"(\w+)\"><summary>(.*?)</summary>(.*?)</details>", reference, re.S)
    assert [(cls, summary) for cls, summary, _ in blocks] == [
        ("fields", "Fields of each shard"),
        ("checks", f"All checks, with their settings ({len(report['checks'])})"),
        ("skipped", f"Skipped checks ({sum(not c['ran'] for c in report['checks'].values())})")]
    fields, checks, skipped = (body for _, _, body in blocks)
    assert "<td>a.jsonl</td><td>text</td><td>text</td>" in fields
    assert "<th>settings</th>" in checks and '<td>ran</td><td><code>{&#34;count_ff_vt&#34;: false, &#34;max_count&#34;: 0}</code></td>' in checks
    assert "<tr><td>nonfinite</td><td>no numeric field in any shard</td></tr>" in skipped
    # the reference tables, one per check with examples, the histograms and the shards
    assert html.count("<details") == html.count("</details>") == 3 + len(report["examples"]) + 2 == 8
    assert "<h2>Fields</h2>" not in html and "<h2>Checks</h2>" not in html


def test_data_stays_escaped(audited):
    _, _, html = audited
    assert "<script" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_a_hostile_shard_name_and_key_are_escaped_in_the_overview_and_an_empty_field_says_no_values(audited):
    root, report, _ = audited
    hostile = "<script>alert(1)</script>.jsonl"
    report = json.loads(json.dumps(report).replace('"a.jsonl"', json.dumps(hostile)))
    report["examples"]["empty_text"][0]["key"] = "<b>key</b>"
    report["lengths"]["empty_field"] = LengthStats("chars").to_json()
    path = root / "hostile" / "report.html"       # the page's template is named by its file name
    path.parent.mkdir()
    write_report_html(path, report)
    html = path.read_text(encoding="utf-8")
    assert "<script" not in html and "<b>key</b>" not in html
    matrix = _table(html, "matrix")
    assert [row[0] for row in matrix[1:]] == [hostile, "b.jsonl"]     # the parser unescapes: the text is shown
    assert _table(html, "worst")[2][:3] == [hostile, "1", "<b>key</b>"]
    cell = re.search(r'<h3>empty_field <span class="muted">\(chars\)</span></h3>\s*(.*?)\s*</div>', html, re.S)
    assert cell.group(1) == '<p class="muted">no values: the field is empty in every record</p>'
    assert _table(html, "lengths")[1:] == [
        ["text (chars)", "8", "0", "31.5", "42", "54", "54", "56", "-"],
        ["empty_field (chars)", "no values: the field is empty in every record"]]
    assert "None" not in html.replace("yielded None", "").replace("of None/0", "")   # only in check descriptions


def test_worst_records_rank_by_checks_then_severity_and_keep_ten():
    checks = {"e": {"severity": "error"}, "w": {"severity": "warning"}, "i": {"severity": "info"}}
    ex = lambda row, detail="d": {"shard": "s", "row": row, "key": str(row), "detail": detail}  # noqa: E731
    report = {"checks": checks, "examples": {
        "i": [ex(r) for r in range(12)],
        "w": [ex(5, "w5"), ex(20)],
        "e": [ex(30), ex(5, "e5")],
    }}
    worst = worst_records(report)
    assert len(worst) == 10
    assert [(w["row"], w["checks"], w["severity"], w["detail"]) for w in worst[:4]] == [
        (5, ["i", "w", "e"], "error", "d"), (30, ["e"], "error", "d"), (20, ["w"], "warning", "d"),
        (0, ["i"], "info", "d")]


def _summaries(html: str) -> list[tuple[str, str]]:
    return [(id_, " ".join(unescape(re.sub(r"<[^>]+>", "", summary)).split()))
            for id_, summary in re.findall(r'<details class="check" id="([^"]+)"><summary>(.*?)</summary>', html, re.S)]


def test_each_checks_examples_are_one_collapsed_line_named_by_the_links(audited):
    _, _, html = audited
    assert _summaries(html) == [
        ("check-empty_text", "empty_text warning · 3 flagged · empty string"),
        ("check-control_chars", "control_chars error · 1 flagged · 1 control chars (max 0): U+0007"),
        ("check-mojibake", "mojibake warning · 2 flagged · 1 mojibake sequences: 'Ã©'→'é'")]
    assert "<details class=\"check\" id=\"check-empty_text\" open" not in html     # collapsed
    assert html.count('<span class="muted">(empty)</span>') == 3          # an empty text is said, not a blank box
    # every link of the overview names one of them
    targets = set(re.findall(r'href="#(check-[^"]+)"', html[:html.index('id="examples"')]))
    assert targets == {"check-empty_text", "check-control_chars", "check-mojibake"}


def test_the_place_a_check_found_is_marked_and_escaped(audited):
    _, report, html = audited
    assert [e.get("span") for e in report["examples"]["control_chars"]] == [[12, 13]]
    assert [e.get("span") for e in report["examples"]["mojibake"]] == [[48, 50], [9, 11]]
    assert all("span" not in e and "snippet_start" not in e for e in report["examples"]["empty_text"])
    assert "<pre>Bad control <mark>\\x07</mark> char &lt;script&gt;alert(1)&lt;/script&gt; cafÃ© here.</pre>" in html
    assert "<pre>Bad control \\x07 char &lt;script&gt;alert(1)&lt;/script&gt; caf<mark>Ã©</mark> here.</pre>" in html
    assert "<pre>Mojibake <mark>Ã©</mark>tÃ© cafÃ© text is here for you.</pre>" in html


def test_a_marked_span_is_escaped_whatever_it_holds(audited):
    root, report, _ = audited
    report = json.loads(json.dumps(report))
    report["examples"]["mojibake"][1].update(snippet="<b>x</b><i>y</i>\u200b", span=[8, 16], snippet_start=500)
    path = root / "span" / "report.html"
    path.parent.mkdir()
    write_report_html(path, report)
    html = path.read_text(encoding="utf-8")
    assert ('<pre><span class="muted">…</span>&lt;b&gt;x&lt;/b&gt;<mark>&lt;i&gt;y&lt;/i&gt;</mark>\\u200b</pre>'
            in html)


def test_the_shards_table_is_collapsed_under_a_one_line_summary(audited):
    _, _, html = audited
    assert '<h2 id="shards">Shards</h2>\n<details class="shards"><summary>2 shards: 2 ok</summary>' in html
    assert shards_line({"shards": [{"status": "ok"}] * 15 + [{"status": "unreadable"}] * 2}) == \
        "17 shards: 15 ok, 2 unreadable"
    assert shards_line({"shards": [{"status": "ok"}]}) == "1 shard: 1 ok"
    assert shards_line({"shards": []}) == "0 shards"


THUMB = "data:image/png;base64,iVBORw0KGgo="


def test_image_examples_are_a_grid_of_thumbnails(audited):
    """Captioned with key, shard, row, field, detail, and the record's text when it has one."""
    root, report, _ = audited
    report = json.loads(json.dumps(report))
    report["checks"]["image_too_small"] = {**report["checks"]["mojibake"], "severity": "warning", "flagged": 2}
    report["examples"]["image_too_small"] = [
        {"shard": "img.tar", "key": "<k0>", "row": 0, "line": None, "field": "jpg", "value": 4.0,
         "detail": "4x4 < 8 px", "snippet": "a <caption>", "thumbnail": THUMB},
        {"shard": "img.tar", "key": "k1", "row": 1, "line": None, "field": "jpg", "value": 0.0,
         "detail": "no header", "snippet": None, "thumbnail": None}]
    path = root / "thumbs" / "report.html"
    path.parent.mkdir()
    write_report_html(path, report)
    html = path.read_text(encoding="utf-8")
    block = re.search(r'<details class="check" id="check-image_too_small">(.*?)</details>', html, re.S).group(1)
    assert "<table" not in block
    figures = re.findall(r"<figure>(.*?)</figure>", block, re.S)
    assert [" ".join(f.split()) for f in figures] == [
        f'<img class="thumb" src="{THUMB}" alt="the flagged image, at most 64 px"> <figcaption><b>&lt;k0&gt;</b> '
        '<span class="muted">img.tar row 0 · jpg</span><br>4x4 &lt; 8 px<pre>a &lt;caption&gt;</pre></figcaption>',
        '<span class="muted">no image</span> <figcaption><b>k1</b> <span class="muted">img.tar row 1 · jpg</span>'
        '<br>no header</figcaption>']
