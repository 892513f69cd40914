"""`tritonhook report`: one self-contained HTML page that tells the story of a capture store.

`model.collect` gathers the data (plain dataclasses), `plots` draws the figures as inline SVG, and the Jinja2
template `templates/report.html.j2` lays them out with inline styles and a few lines of script (the filter box):
the page loads nothing from the network. `write_report` is the library entry point (`tritonhook report`,
through `cli/report.py`); `demo.run_demo` is `tritonhook demo`'s.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path
from typing import Callable, Sequence

from ..errors import TritonhookError
from ..files import read_input, write_file
from ..store import Capture, Store
from .model import SASS_DIFF_KERNELS, SASS_DIFF_LINES, ReportData, collect

DEFAULT_REPORT = "tritonhook-report.html"
SECTIONS = (("captures", "Captures"), ("cutlass", "cutlass name"), ("ptxas-matrix", "ptxas matrix"),
            ("sweep", "Sweep / A/B"), ("check", "Check"), ("upgrade", "Upgrade / bisect"), ("memory", "Memory"),
            ("kernels", "Kernels"))
"""The page's sections, in order: (element id, navigation title). The browser test checks each one."""
CHUNK_ROWS = 50
"""A long table is cut into tables of this many rows, each laid out only once scrolled to: laying out all the
rows of a large store at once takes most of the page's opening time (docs/report.md#how-it-scales)."""


def render_html(data: ReportData) -> str:
    """The page for `data`, as one HTML string."""
    from .._version import __version__
    from . import plots

    env = _environment()
    env.filters["rel"] = relative_paths(data.store)
    template = env.get_template("report.html.j2")
    return template.render(
        data=data, store=env.filters["rel"](data.store), sections=SECTIONS, version=__version__,
        overview=overview(data.captures), generated=time.strftime("%Y-%m-%d %H:%M", time.localtime(data.generated)),
        effect_chart=plots.effect_chart(data.effects), effect_bars=plots.EFFECT_BARS,
        forest_plot=plots.forest_plot(data.forest), timeline=plots.memwatch_timeline, sass_lines=SASS_DIFF_LINES,
        sass_kernels=SASS_DIFF_KERNELS, chunk_rows=CHUNK_ROWS)


def relative_paths(store: str | os.PathLike) -> Callable[[object], str]:
    """A filter for the page's text: absolute paths under the store's parent folder or the working directory made
    relative to it (the deeper one where both hold), and the home directory written `~`, so that the page does
    not spell out the folders of the machine that made it. Other paths stay as they are."""
    folders = {Path(store).absolute().parent: "", Path(store).resolve().parent: "", Path.cwd(): "",
               Path.home(): "~"}
    folders = {str(f): short for f, short in folders.items() if f.parent != f}  # "/" would turn every path relative
    pattern = re.compile(r"(?<![\w.~/-])(" + "|".join(map(re.escape, sorted(folders, key=len, reverse=True)))
                         + r")(/|(?![\w.~/-]))")

    def shorten(match: re.Match) -> str:
        short = folders[match.group(1)]
        if match.group(2):  # a path under the folder
            return f"{short}/" if short else ""
        return short or "."

    return lambda text: pattern.sub(shorten, str(text))


def _environment():
    try:
        import jinja2
    except ImportError:
        raise TritonhookError("tritonhook report renders with Jinja2: pip install jinja2") from None
    from ..preflight import table_row
    from ..format import human_bytes

    env = jinja2.Environment(loader=jinja2.FileSystemLoader(Path(__file__).parent / "templates"),
                             autoescape=True, trim_blocks=False, undefined=jinja2.StrictUndefined)
    env.globals.update(size=_size, where=_where, change=_change, pair_text=_pair_text, ratio_text=_ratio_text,
                       matrix_ratio=_matrix_ratio, bytes=human_bytes, preflight_row=table_row)
    return env


def overview(captures: Sequence[Capture]) -> dict:
    """The headline figures of the captures table."""
    return {"kernels": len({c.original_entry for c in captures}), "archs": sorted({c.arch for c in captures}),
            "frontends": sorted({c.frontend_label for c in captures}),
            "ptxas": sorted({c.ptxas_version for c in captures if c.ptxas_version}),
            "compiles": sum(c.event == "compile" for c in captures),
            "cache_hits": sum(c.event == "cache_hit" for c in captures),
            "compile_s": sum(sum(c.times.values()) for c in captures if c.event == "compile"),
            "cubin_bytes": sum(c.artifacts["cubin"].size for c in captures
                               if "cubin" in c.artifacts and c.event == "compile")}


def _size(capture: Capture, stage: str) -> str:
    artifact = capture.artifacts.get(stage)
    return f"{artifact.size:,}" if artifact else "-"


def _where(capture: Capture) -> str:
    return f"{capture.src_file}:{capture.src_line}" if capture.src_file else "-"


def _change(pair: tuple) -> str:
    """'16,756 → 53,648 (+220%)' for (plain, renamed)."""
    plain, renamed = pair
    if plain is None or renamed is None:
        return "-"
    if plain == renamed:
        return f"{plain:,}"
    percent = f" ({100 * (renamed - plain) / plain:+.0f}%)" if plain else ""
    return f"{plain:,} → {renamed:,}{percent}"


def _pair_text(pair: tuple) -> str:
    plain, renamed = pair
    return "-" if plain is None else f"{plain}" if plain == renamed else f"{plain}→{renamed}"


def _ratio_text(value: float | None) -> str:
    return "" if value is None else f"{value:.2f}×"


def _matrix_ratio(matrix: dict, row: dict) -> dict | None:
    """The renamed/plain ratios that belong on a renamed row of a saved ptxas matrix."""
    if row["variant"] != "renamed":
        return None
    return next((r for r in matrix.get("ratios", []) if r["ptxas"] == row["ptxas"] and r["renamed"] == row["kernel"]),
                None)


def write_report(store: Store, out: str | os.PathLike, *, memwatch_files: Sequence[str | os.PathLike] = (),
                 sass: bool = True) -> tuple[Path, ReportData]:
    """Collect, render and write the page for `store`; returns its path and the data it shows. A memwatch file that
    does not exist (a mistyped path) or cannot be read as a file is an error, before anything else is read; one that
    is not a memwatch result becomes a problem the page lists."""
    for path in memwatch_files:
        if not os.path.lexists(path):
            raise TritonhookError(f"{path}: no such memwatch file (give the JSON that `tritonhook memwatch --json` "
                                  f"wrote)")
        from ..mem.result import JSON_WHAT

        read_input(path, JSON_WHAT)
    data = collect(store, memwatch_files, sass=sass)
    html = render_html(data)
    return write_file(out, html, "report"), data


def summary_lines(path: Path, data: ReportData) -> list[str]:
    """Five lines for the terminal: where the page is and what it found."""
    biggest = data.effects[0] if data.effects else None
    effect = "no plain/renamed pairs" if biggest is None else \
        f"{len(data.effects)} plain/renamed pairs; largest: {biggest.title} cubin {biggest.cubin_change:+.1%}"
    capmerc = [e for e in data.effects if (e.metric(".nv.capmerc")[0] or 0) > 0]
    capmerc_text = "" if not capmerc else \
        f"; .nv.capmerc up to {max(e.metric('.nv.capmerc')[1] / e.metric('.nv.capmerc')[0] for e in capmerc):.1f}x"
    winners = sum(r.verdict == "faster" for r in data.forest)
    sweep = f"{len(data.forest)} A/B comparisons, {winners} faster" if data.forest else "no A/B results (needs a GPU)"
    if data.sweeps:
        sweep += f"; {len(data.sweeps)} workload sweep(s)"
    if data.checks:
        sweep += f"; {len(data.checks)} check(s), {sum(bool(c.failures) for c in data.checks)} failed"
    if data.upgrades or data.bisects:
        sweep += f"; {len(data.upgrades)} upgrade(s), {len(data.bisects)} bisect(s)"
    memory = f"{len(data.warnings)} preflight warnings over {data.predicted_cubins} cubins; " \
             f"{len(data.memwatch)} memwatch timelines"
    problems = f"; {len(data.problems)} problems (see the page)" if data.problems else ""
    return [f"report: {path.resolve()}",
            f"captures: {len(data.captures)} in {data.store} ({', '.join(overview(data.captures)['archs']) or '-'})",
            f"cutlass name: {effect}{capmerc_text}",
            f"sweep: {sweep}; ptxas matrices: {len(data.matrices)}",
            f"memory: {memory}{problems}"]


# ----- the CLI ---------------------------------------------------------------------------------------------------
