"""Outputs of `dataaudit tokenizer-drift`: tokenizer_drift.json and tokenizer_drift.html, written atomically.

The page is rendered by dataaudit.report.render, like the other pages (autoescaped; control or invisible
characters shown as \\xNN / \\uNNNN, as in the audit report); HTML_NAME is also its template's name.
"""
from __future__ import annotations

from pathlib import Path

from dataaudit.report.atomic import write_json
from dataaudit.report.render import write_page

JSON_NAME = "tokenizer_drift.json"
HTML_NAME = "tokenizer_drift.html"


def write_outputs(result: dict, out_dir: Path) -> tuple[Path, Path]:
    out_dir = Path(out_dir)
    json_path, html_path = out_dir / JSON_NAME, out_dir / HTML_NAME
    write_json(json_path, result)
    write_page(html_path, HTML_NAME, r=result)
    return json_path, html_path
