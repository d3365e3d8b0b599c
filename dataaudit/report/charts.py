"""Length histograms drawn as small inline SVG (no JavaScript, no network, no plotting library: the report is one
file, and writing it loads nothing heavy). Same bytes for the same input. A chart is as wide as its grid cell
(viewBox, width 100%); its x axis is linear unless the data is skewed or spans decades (then log, said in its
label)."""
from __future__ import annotations

import math

from markupsafe import Markup, escape

W, H = 460, 190                          # the chart, in px
LEFT, RIGHT, TOP, BOTTOM = 54, 12, 12, 40  # plot margins
BAR, LINE, AXIS = "#4c78a8", "#e45756", "#444"
LOG_SKEW = 50       # a log x axis when max / p50 is above this,
LOG_DECADES = 2     # or when the values span more than this many decades (max / min, a min under 1 counted as 1)


def log_axis(stat: dict) -> bool:
    """Whether a length statistic's (or an image dimension's) chart needs a log x axis: its values are skewed
    (max / p50 > LOG_SKEW) or span more than LOG_DECADES decades; else linear."""
    top = stat.get("max") or 0
    if top <= 0:
        return False
    p50 = (stat.get("quantiles") or {}).get("p50")
    return bool(p50 and top / p50 > LOG_SKEW) or top / max(stat.get("min") or 0, 1) > 10 ** LOG_DECADES


def _symlog(x: float) -> float:
    """The x scale: linear up to 1, log10 above (lengths start at 0)."""
    return x if x <= 1 else 1 + math.log10(x)


def _label(x: float) -> str:
    for unit, div in (("M", 1e6), ("k", 1e3)):
        if x >= div:
            return f"{x / div:g}{unit}"
    return f"{x:g}"


def _nice_step(top: float) -> float:
    """A 1/2/5 x 10^k step giving 3 to 5 ticks from 0 to `top`."""
    raw = top / 4
    base = 10 ** math.floor(math.log10(raw))
    return next(m * base for m in (1, 2, 5, 10) if m * base >= raw)


def histogram_svg(histogram: dict, unit: str, context_length: int | None, counted: str = "samples",
                  log: bool = True) -> str:
    """One histogram; `log`: a log x axis (linear up to 1), else linear."""
    edges, counts = histogram["edges"], histogram["counts"]
    scale = _symlog if log else float
    top_x = max([edges[-1] if edges else 1.0, 1.0] + ([context_length * 1.05] if context_length else []))
    top_y = max(counts, default=0) or 1
    pw, ph = W - LEFT - RIGHT, H - TOP - BOTTOM
    sx = lambda x: LEFT + pw * scale(x) / scale(top_x)  # noqa: E731
    sy = lambda y: TOP + ph * (1 - y / top_y)  # noqa: E731
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="100%" viewBox="0 0 {W} {H}" '
           'font-family="sans-serif" font-size="10" class="chart">']
    for lo, hi, n in zip(edges[:-1], edges[1:], counts):
        if n:
            x0, x1 = sx(lo), sx(hi)
            out.append(f'<rect x="{x0:.1f}" y="{sy(n):.1f}" width="{max(x1 - x0 - 0.5, 0.5):.1f}" '
                       f'height="{TOP + ph - sy(n):.1f}" fill="{BAR}"/>')
    # axes, ticks: 0 and the powers of ten on a log x axis, a 1/2/5 step on a linear one and on y
    out.append(f'<path d="M{LEFT},{TOP}V{TOP + ph}H{LEFT + pw}" fill="none" stroke="{AXIS}"/>')
    if log:
        ticks = [0.0] + [10.0 ** k for k in range(0, int(math.log10(top_x)) + 1)]
    else:
        x_step = _nice_step(top_x)
        ticks = [round(i * x_step, 6) for i in range(int(top_x // x_step) + 1)]
    for x in ticks:
        out.append(f'<path d="M{sx(x):.1f},{TOP + ph}v4" stroke="{AXIS}"/><text x="{sx(x):.1f}" '
                   f'y="{TOP + ph + 14}" text-anchor="middle">{_label(x)}</text>')
    step = max(_nice_step(top_y), 1)   # counts are whole numbers
    for i in range(int(top_y // step) + 1):
        y = i * step
        out.append(f'<path d="M{LEFT},{sy(y):.1f}h-4" stroke="{AXIS}"/><text x="{LEFT - 6}" y="{sy(y) + 3:.1f}" '
                   f'text-anchor="end">{_label(y)}</text>')
    if context_length:
        x = sx(context_length)
        out.append(f'<path d="M{x:.1f},{TOP}V{TOP + ph}" stroke="{LINE}" stroke-width="1.2" stroke-dasharray="4 3"/>'
                   f'<text x="{x - 4:.1f}" y="{TOP + 10}" text-anchor="end" fill="{LINE}">context '
                   f'{context_length}</text>')
    axis = "log scale" if log else "linear scale"
    xlabel = f"length ({unit}, {axis})" if counted == "samples" else f"{unit}, {axis}"
    out.append(f'<text x="{LEFT + pw / 2:.1f}" y="{H - 6}" text-anchor="middle">{escape(xlabel)}</text>')
    out.append(f'<text transform="translate(12,{TOP + ph / 2:.1f}) rotate(-90)" text-anchor="middle">'
               f'{escape(counted)}</text></svg>')
    return "".join(out)


def bars_svg(checks: list[dict], colours: dict[str, str]) -> str:
    """Flags per check as horizontal bars, one per check in `checks` (name, flagged, severity; in that order), in
    the severity's colour; a bar links to the check's examples where the page has them (`linked`). Width 100% of the page, height by the rows."""
    bw, row, label = 900, 22, 200
    top = max((c["flagged"] for c in checks), default=0) or 1
    h = row * len(checks) + 8
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="100%" viewBox="0 0 {bw} {h}" font-family="sans-serif" '
           'font-size="12" class="bars" role="img" aria-label="flagged records per check">']
    for i, c in enumerate(checks):
        y = 4 + i * row
        name = escape(c["name"])
        length = max((bw - label - 70) * c["flagged"] / top, 1.0)
        colour = colours.get(c["severity"], AXIS)
        bar = (f'<g class="bar" data-check="{name}" data-count="{c["flagged"]}">'
               f'<text x="{label - 6}" y="{y + 15}" text-anchor="end">{name}</text>'
               f'<rect x="{label}" y="{y + 3}" width="{length:.1f}" height="{row - 6}" fill="{colour}"/>'
               f'<text x="{label + length + 5:.1f}" y="{y + 15}">{c["flagged"]}</text></g>')
        out.append(f'<a href="#check-{name}">{bar}</a>' if c.get("linked") else bar)
    out.append("</svg>")
    return "".join(out)


def length_charts(report: dict) -> dict[str, Markup]:
    """report.html's charts, marked safe (our SVG; its only words are our labels, escaped): one histogram per
    length statistic, and per image field its width, height and aspect ratio (keyed "<field> width", ...)."""
    charts = {key: Markup(histogram_svg(stat["histogram"], stat["unit"], stat["context_length"],
                                        log=log_axis(stat)))
              for key, stat in report["lengths"].items()}
    for name, stats in report.get("images", {}).items():
        for dim in ("width", "height", "aspect"):
            charts[f"{name} {dim}"] = Markup(histogram_svg(stats[dim]["histogram"], stats[dim]["unit"], None,
                                                           "images", log=log_axis(stats[dim])))
    for name, stats in report.get("media", {}).items():   # duration, frame rate, sample rate of each media field
        for dim in ("duration", "fps", "sample_rate"):
            if dim in stats:
                charts[f"{name} {dim}"] = Markup(histogram_svg(stats[dim]["histogram"], stats[dim]["unit"], None,
                                                               "files", log=log_axis(stats[dim])))
    return charts
