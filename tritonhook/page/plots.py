"""The report's figures, drawn with matplotlib and inlined as SVG text.

Why matplotlib: it is already what `tritonhook memwatch --plot` draws with (one plotting library), and a static SVG
needs no script and no network at view time, stays sharp at any zoom, and keeps its text searchable; an
interactive library (Plotly, Bokeh, Vega) would inline megabytes of JavaScript into every page.
"""

from __future__ import annotations

import io
from typing import Sequence

from ..errors import TritonhookError
from .model import CutlassEffect, ForestRow, chart_labels

EFFECT_METRICS = (("cubin", "#4c78a8", lambda e: e.cubin_sizes),
                  (".nv.capmerc", "#f58518", lambda e: e.metric(".nv.capmerc")),
                  (".text", "#54a24b", lambda e: e.metric(".text")),
                  ("registers", "#b279a2", lambda e: e.metric("registers")))
"""What the bar chart shows per kernel (name, colour, (plain, renamed)): the renamed build's change in percent."""
EFFECT_BARS = 25
"""Kernels in the bar chart (largest effects first); the table below it lists them all."""
VERDICT_COLOURS = {"faster": "#1a9850", "slower": "#d73027", "no difference": "#7f7f7f"}


def _pyplot():
    try:
        import matplotlib

        matplotlib.use("Agg")
        matplotlib.rcParams["svg.fonttype"] = "none"  # text stays text: smaller, searchable
        matplotlib.rcParams["svg.hashsalt"] = "tritonhook"  # stable ids: the same store gives the same page
        import matplotlib.pyplot as plt
    except ImportError:
        raise TritonhookError("tritonhook report draws its figures with matplotlib: pip install matplotlib") from None
    return plt


def svg_text(figure) -> str:
    """The figure as an inline <svg> element (no XML prolog), and the figure closed."""
    plt = _pyplot()
    buffer = io.StringIO()
    try:
        figure.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None})
    finally:
        plt.close(figure)
    return _inline(buffer.getvalue())


def _inline(svg: str) -> str:
    return svg[svg.index("<svg"):]


def percent_change(pair: tuple) -> float | None:
    plain, renamed = pair
    if plain is None or renamed is None or not plain:
        return None
    return 100.0 * (renamed - plain) / plain


def effect_chart(effects: Sequence[CutlassEffect]) -> str | None:
    """Grouped horizontal bars: per kernel, the renamed build's change of each EFFECT_METRICS figure; kernels are
    numbered as in the table under the chart."""
    shown = list(effects[:EFFECT_BARS])
    if not shown:
        return None
    plt = _pyplot()
    height = 0.8 / len(EFFECT_METRICS)
    figure, axes = plt.subplots(figsize=(9, 1.2 + 0.42 * len(shown)))
    for index, (name, colour, value) in enumerate(EFFECT_METRICS):
        changes = [percent_change(value(effect)) for effect in shown]
        positions = [row + (index - (len(EFFECT_METRICS) - 1) / 2) * height for row in range(len(shown))]
        axes.barh(positions, [c or 0.0 for c in changes], height=height, label=name, color=colour)
    axes.set_yticks(range(len(shown)), [f"{n}. {label}" for n, label in enumerate(chart_labels(shown), 1)],
                    fontsize=8)
    axes.invert_yaxis()
    axes.axvline(0, color="black", linewidth=0.6)
    axes.set_xlabel("renamed (cutlass_) vs plain build, % change")
    axes.legend(fontsize=8, loc="lower right")
    axes.grid(axis="x", alpha=0.3)
    return svg_text(figure)


def forest_plot(rows: Sequence[ForestRow]) -> str | None:
    """The forest plot (`forest_figure`) as inline SVG; None without rows."""
    return svg_text(forest_figure(rows)) if rows else None


def forest_figure(rows: Sequence[ForestRow]):
    """Time ratio and 95% interval per benchmark and variant, coloured by verdict, marker area by GPU-time share.
    Half a row of space above the first row and below the last, and the legend above the axes, so that no marker
    sits on an edge or under the legend."""
    plt = _pyplot()
    figure, axes = plt.subplots(figsize=(9, 1.2 + 0.4 * len(rows)))
    for index, row in enumerate(rows):
        colour = VERDICT_COLOURS.get(row.verdict, "#333333")
        axes.plot([row.low, row.high], [index, index], color=colour, linewidth=2)
        axes.scatter([row.ratio], [index], s=30 + 400 * row.share, color=colour, zorder=3)
    axes.set_yticks(range(len(rows)), [f"{r.benchmark}: {r.variant} vs {r.baseline} ({r.kind} {r.ab_id})" for r in rows],
                    fontsize=8)
    axes.set_ylim(len(rows) - 0.5, -0.5)  # the first row on top
    axes.margins(x=0.06)
    axes.axvline(1.0, color="black", linewidth=0.6, linestyle="--")
    axes.set_xlabel("time ratio (variant / baseline), 95% interval; < 1 is faster")
    for verdict, colour in VERDICT_COLOURS.items():
        axes.scatter([], [], color=colour, label=verdict)
    axes.legend(fontsize=8, loc="lower left", bbox_to_anchor=(0.0, 1.02), ncol=len(VERDICT_COLOURS), frameon=False,
                borderaxespad=0.0)
    axes.grid(axis="x", alpha=0.3)
    return figure


def memwatch_timeline(result) -> str:
    """The memwatch timeline, drawn by `MemwatchResult.figure` itself (one drawing of it), as inline SVG."""
    _pyplot()  # the same SVG settings as the other figures
    return svg_text(result.figure())
