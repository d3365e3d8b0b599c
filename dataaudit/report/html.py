"""report.html: a self-contained page a person would rather read than the JSON.

Jinja2 autoescaping escapes every string that comes from data (text snippets, keys, file names, errors); only
our own SVG charts are marked safe.
"""
from __future__ import annotations

import re
from pathlib import Path

from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup

from dataaudit.report.atomic import write_text
from dataaudit.report.charts import histogram_svg

_env = Environment(loader=PackageLoader("dataaudit.report", "templates"),
                   autoescape=select_autoescape(default=True, default_for_string=True))

_INVISIBLE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u200b-\u200f\u2028\u2029\ufeff]")


def visible(text) -> str:
    """Control and invisible characters shown as \\xNN / \\uNNNN so a person sees what the check saw."""
    if text is None:
        return ""
    return _INVISIBLE.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100
                          else f"\\u{ord(m.group()):04x}", str(text))


_env.filters["visible"] = visible


def render_report(report: dict) -> str:
    charts = {key: Markup(histogram_svg(stat["histogram"], stat["unit"], stat["context_length"]))
              for key, stat in report["lengths"].items()}
    return _env.get_template("report.html").render(report=report, charts=charts)


def write_report_html(path: Path, report: dict) -> None:
    write_text(path, render_report(report))
