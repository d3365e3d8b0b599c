"""contamination.html: per-benchmark bars and the worst items side by side with their training match.

Rendered from the report dict with jinja2 autoescaping (every string from data is escaped; control characters
are shown as \\xNN by the shared `visible` filter)."""
from __future__ import annotations

from pathlib import Path

from jinja2 import Environment, PackageLoader, select_autoescape

from dataaudit.report.atomic import write_text
from dataaudit.report.html import visible

_env = Environment(loader=PackageLoader("dataaudit.report", "templates"),
                   autoescape=select_autoescape(default=True, default_for_string=True))
_env.filters["visible"] = visible


def render_contamination(report: dict) -> str:
    return _env.get_template("contamination.html").render(report=report)


def write_contamination_html(path: Path, report: dict) -> None:
    write_text(Path(path), render_contamination(report))
