"""Outputs of `dataaudit tokenizer-drift`: tokenizer_drift.json and its page, written atomically, and the exit rule."""
from __future__ import annotations

import os

from dataaudit.atomic import write_json
from dataaudit.io import join
from dataaudit.report.pages import write_tokenizer_drift_html
from dataaudit.tokenization import FILES


def write_outputs(result: dict, out_dir: str | os.PathLike) -> tuple[str, str]:
    """Write the record and the page into `out_dir`; returns their locations."""
    json_path, html_path = join(out_dir, FILES.record), join(out_dir, FILES.page)
    write_json(json_path, result)
    write_tokenizer_drift_html(html_path, result)
    return json_path, html_path


def has_errors(result: dict) -> bool:
    """Exit 1: the inference tokenizer breaks what training saw."""
    return result["verdict"] == "breaking"
