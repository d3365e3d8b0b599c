"""report.html's charts: as wide as their grid cell (viewBox, width 100%), on a linear x axis unless the data is
skewed or spans decades (then log), the axis named in the label."""
from __future__ import annotations

import re

import numpy as np
import pytest

from dataaudit.report.charts import histogram_svg, length_charts, log_axis
from dataaudit.stats.lengths import LengthStats


def _stat(values, unit="chars") -> dict:
    s = LengthStats(unit)
    if values:
        s.add(np.array(values))
    return s.to_json()


def _x_labels(svg: str) -> list[str]:
    return re.findall(r'text-anchor="middle">([^<]*)</text>', svg)


@pytest.mark.parametrize("values, log, labels", [
    ([40, 50, 60, 70], False, ["0", "20", "40", "60", "length (chars, linear scale)"]),
    ([0, 20, 30, 40], False, ["0", "10", "20", "30", "40", "length (chars, linear scale)"]),   # 0 is no decade
    ([10, 100, 1000, 5000], True, ["0", "1", "10", "100", "1k", "length (chars, log scale)"]),  # > 2 decades
    ([100, 100, 100, 20000], True, ["0", "1", "10", "100", "1k", "10k", "length (chars, log scale)"]),  # skewed
    ([1, 2, 3, 500], True, ["0", "1", "10", "100", "length (chars, log scale)"]),
])
def test_the_x_axis_is_linear_unless_the_data_is_skewed_or_spans_decades(values, log, labels):
    stat = _stat(values)
    assert log_axis(stat) is log
    svg = histogram_svg(stat["histogram"], stat["unit"], None, log=log)
    assert _x_labels(svg) == labels + ["samples"]


def test_no_values_is_a_linear_axis_and_the_page_says_it_in_words():
    assert log_axis(_stat([])) is False
    assert log_axis({"max": None, "min": None, "quantiles": {"p50": None}}) is False


def test_a_chart_is_as_wide_as_its_cell():
    charts = length_charts({"lengths": {"text": {**_stat([40, 50, 60]), "context_length": None}},
                            "images": {"jpg": {"width": _stat([8, 16], "px"), "height": _stat([8, 4096], "px"),
                                               "aspect": _stat([1, 2], "ratio")}}})
    assert list(charts) == ["text", "jpg width", "jpg height", "jpg aspect"]
    for svg in charts.values():
        assert svg.startswith('<svg xmlns="http://www.w3.org/2000/svg" width="100%" viewBox="0 0 460 190" ')
    assert [_x_labels(str(charts[k]))[-2] for k in charts] == [
        "length (chars, linear scale)", "px, linear scale", "px, log scale", "ratio, linear scale"]


def test_a_context_line_on_a_linear_axis():
    stat = _stat([40, 50, 60])
    svg = histogram_svg(stat["histogram"], "tokens", 64, log=False)
    assert '<text x="' in svg and "context 64</text>" in svg
    # the line is at 64 of 67.2 (the axis runs 5% past the context) of the 394 px plot, from x = 54
    assert '<path d="M429.2,12V150" stroke="#e45756"' in svg
