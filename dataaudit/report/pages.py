"""The pages of the audit, dedup, contamination and tokenizer-drift jobs: which template each renders and the context
it gets. All rendering goes through render.py. Only the audit page draws charts (plain SVG), so only it loads the
chart code.
"""
from __future__ import annotations

from pathlib import Path

from markupsafe import Markup

from dataaudit.report.diff import examples_with_segments
from dataaudit.report.render import write_page


def write_report_html(path: Path, report: dict) -> None:
    """The page of `dataaudit audit`: the overview first (verdict, flags per check, shard x check matrix, worst
    records), then the examples, a length histogram per length statistic, and the reference tables collapsed."""
    from dataaudit.report.charts import bars_svg, length_charts   # only the audit page draws charts
    from dataaudit.report.overview import overview

    view = overview(report)
    write_page(path, report=report, charts=length_charts(report), overview=view,
               bars=Markup(bars_svg(view["checks"], view["colours"])) if view["checks"] else None)


def write_dedup_html(path: Path, report: dict) -> None:
    """The page of `dataaudit dedup`; adds the word-diff `segments` to the report's examples."""
    write_page(path, report=report, examples=examples_with_segments(report))


def write_contamination_html(path: Path, report: dict) -> None:
    """The page of `dataaudit contamination`."""
    write_page(path, report=report)


def write_tokenizer_drift_html(path: Path, result: dict) -> None:
    """The page of `dataaudit tokenizer-drift`."""
    write_page(path, r=result)


def write_clean_html(path: Path, report: dict) -> None:
    """The page of `dataaudit clean`: the overview first (records in = kept + dropped, the shards left out or not
    cleaned), then the drops per reason, per shard, and the first dropped records."""
    most = max(report["totals"]["dropped_by"].values(), default=0)
    write_page(path, report=report, most=most)
