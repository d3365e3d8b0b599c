"""Outputs of `dataaudit tokenizer-drift`: tokenizer_drift.json and tokenizer_drift.html, written atomically.

The page is rendered with Jinja2 autoescaping (every string from a tokenizer or a text is escaped) and control or
invisible characters shown as \\xNN / \\uNNNN, as in the audit report.
"""
from __future__ import annotations

import json
from pathlib import Path

from jinja2 import Environment, PackageLoader, select_autoescape

from dataaudit.report.atomic import write_json, write_text

JSON_NAME = "tokenizer_drift.json"
HTML_NAME = "tokenizer_drift.html"

_env = None


def _environment() -> Environment:
    global _env
    if _env is None:
        from dataaudit.report.html import visible

        _env = Environment(loader=PackageLoader("dataaudit.report", "templates"),
                           autoescape=select_autoescape(default=True, default_for_string=True))
        _env.filters["visible"] = visible
        _env.filters["dumps"] = lambda v: json.dumps(v, ensure_ascii=False, sort_keys=True)
    return _env


def render_html(result: dict) -> str:
    return _environment().get_template(HTML_NAME).render(r=result)


def write_outputs(result: dict, out_dir: Path) -> tuple[Path, Path]:
    out_dir = Path(out_dir)
    json_path, html_path = out_dir / JSON_NAME, out_dir / HTML_NAME
    write_json(json_path, result)
    write_text(html_path, render_html(result))
    return json_path, html_path
