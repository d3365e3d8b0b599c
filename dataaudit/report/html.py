"""report.html: a self-contained page a person would rather read than the JSON.

Jinja2 autoescaping escapes every string that comes from data (text snippets, keys, file names, errors); only
our own SVG charts are marked safe.
"""
from __future__ import annotations

from pathlib import Path

from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup

from dataaudit.report.atomic import write_text
from dataaudit.report.charts import histogram_svg

_env = Environment(loader=PackageLoader("dataaudit.report", "templates"),
                   autoescape=select_autoescape(default=True, default_for_string=True))


def render_report(report: dict) -> str:
    charts = {key: Markup(histogram_svg(stat["histogram"], stat["unit"], stat["context_length"]))
              for key, stat in report["lengths"].items()}
    return _env.get_template("report.html").render(report=report, charts=charts)


def write_report_html(path: Path, report: dict) -> None:
    write_text(path, render_report(report))
