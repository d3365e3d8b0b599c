"""Length histograms drawn as inline SVG with matplotlib (no JavaScript, no network: the report is one file)."""
from __future__ import annotations

import io
import re

import matplotlib
from markupsafe import Markup

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

# Glyphs as paths: the SVG carries no text from data, and renders the same everywhere.
plt.rcParams["svg.fonttype"] = "path"
plt.rcParams["svg.hashsalt"] = "dataaudit"   # stable ids: same report bytes for the same input


def histogram_svg(histogram: dict, unit: str, context_length: int | None, counted: str = "samples") -> str:
    edges, counts = histogram["edges"], histogram["counts"]
    fig, ax = plt.subplots(figsize=(6.4, 2.6), dpi=72)
    if counts:
        widths = [hi - lo for lo, hi in zip(edges[:-1], edges[1:])]
        ax.bar(edges[:-1], counts, width=widths, align="edge", color="#4c78a8", edgecolor="white", linewidth=0.5)
        ax.set_xscale("symlog", linthresh=1)
    if context_length:
        ax.axvline(context_length, color="#e45756", linestyle="--", linewidth=1.2, label=f"context {context_length}")
        ax.legend(loc="upper right", fontsize=8, frameon=False)
    ax.set_xlabel(f"length ({unit}, log scale)" if counted == "samples" else f"{unit}, log scale")
    ax.set_ylabel(counted)
    ax.spines[["top", "right"]].set_visible(False)
    fig.tight_layout()
    buf = io.StringIO()
    fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
    plt.close(fig)
    svg = buf.getvalue()
    svg = re.sub(r"<metadata>.*?</metadata>", "", svg, flags=re.S)
    return svg[svg.index("<svg"):]   # drop the XML prolog so it can be inlined


def length_charts(report: dict) -> dict[str, Markup]:
    """report.html's charts, marked safe (our SVG, no data text): one histogram per length statistic, and per
    image field its width, height and aspect ratio (keyed "<field> width", ...)."""
    charts = {key: Markup(histogram_svg(stat["histogram"], stat["unit"], stat["context_length"]))
              for key, stat in report["lengths"].items()}
    for name, stats in report.get("images", {}).items():
        for dim in ("width", "height", "aspect"):
            charts[f"{name} {dim}"] = Markup(histogram_svg(stats[dim]["histogram"], stats[dim]["unit"], None,
                                                           "images"))
    return charts
