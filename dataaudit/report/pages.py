"""The four HTML pages: which template each renders and the context it gets (all rendered by render.py).

The audit's charts are imported when report.html is written: they need matplotlib, which the other commands
never load.
"""
from __future__ import annotations

from pathlib import Path

from dataaudit.report.diff import examples_with_segments
from dataaudit.report.render import write_page


def write_report_html(path: Path, report: dict) -> None:
    """report.html of `dataaudit audit`, with a length histogram per length statistic."""
    from dataaudit.report.charts import length_charts

    write_page(path, "report.html", report=report, charts=length_charts(report))


def write_dedup_html(path: Path, report: dict) -> None:
    """dedup.html of `dataaudit dedup`; adds the word-diff `segments` to the report's examples."""
    write_page(path, "dedup.html", report=report, examples=examples_with_segments(report))


def write_contamination_html(path: Path, report: dict) -> None:
    """contamination.html of `dataaudit contamination`."""
    write_page(path, "contamination.html", report=report)


def write_tokenizer_drift_html(path: Path, result: dict) -> None:
    """tokenizer_drift.html of `dataaudit tokenizer-drift`."""
    write_page(path, "tokenizer_drift.html", r=result)
