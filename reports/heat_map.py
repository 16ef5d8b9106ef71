"""The PNG heat maps: test cases per spec rule and configuration, one panel per chapter (rules across, configurations
down), so that 135 rules make a page-sized grid instead of one tall column; and the rules x clients matrix."""

from __future__ import annotations

import io
import math

import matplotlib
import numpy as np
from matplotlib.colors import to_rgb
from matplotlib.figure import Figure

from reports.render_clients import get_clients, get_judged_rules, get_label, index_matrix
from reports.results import EXERCISED, GAP, get_configurations, index_cells
from reports.spec_rules import Rule

PANEL_COLUMNS = 2
GAP_COLOUR = "#f4a3a3"


def get_chapters(spec_rules: list[Rule]) -> dict[str, list[str]]:
    """Chapter -> its rule ids, in spec order."""
    chapters: dict[str, list[str]] = {}
    for rule in spec_rules:
        chapters.setdefault(rule.chapter, []).append(rule.rule_id)
    return chapters


def draw_panel(axes, chapter: str, rules: list[str], configs: list[str], cells: dict, norm) -> object:
    """One chapter: a row per configuration, a column per rule; gaps red, failing cells marked ✗."""
    counts = np.array([[cells.get((r, c), {}).get("test_cases", 0) for r in rules] for c in configs])
    shown = np.ma.masked_where(counts == 0, np.log10(np.maximum(counts, 1)) + 1)
    cmap = matplotlib.colormaps["Greens"].with_extremes(bad=GAP_COLOUR)
    image = axes.imshow(shown, aspect="auto", cmap=cmap, norm=norm, interpolation="nearest")
    axes.set_title(chapter.removesuffix(".md"), fontsize=8, loc="left")
    axes.set_xticks(range(len(rules)), rules, fontsize=6, rotation=90)
    axes.set_yticks(range(len(configs)), configs, fontsize=6)
    axes.set_xticks(np.arange(len(rules) + 1) - 0.5, minor=True)
    axes.set_yticks(np.arange(len(configs) + 1) - 0.5, minor=True)
    axes.grid(which="minor", color="white", linewidth=0.8)
    axes.tick_params(which="minor", length=0)
    for (row, col), _ in np.ndenumerate(counts):
        found = cells.get((rules[col], configs[row]))
        if found and found["failures"]:
            axes.text(col, row, "✗", ha="center", va="center", color="black", fontsize=7)
    return image


def render_heat_map(spec_rules: list[Rule], coverage: list[dict]) -> bytes:
    """PNG of log-scaled test cases per rule and configuration, a panel per chapter. Needs only the rules and their
    coverage (Results.rules and .coverage), so that it can be drawn before the other results are in."""
    configs = get_configurations(coverage) or ["(no runs)"]
    cells = index_cells(coverage)
    chapters = get_chapters(spec_rules) or {"(no rules)": []}
    rows = math.ceil(len(chapters) / PANEL_COLUMNS)
    # Fixed sizes in inches (tight_layout would draw the figure once more to measure the labels): a cell row per
    # configuration, 0.8 between panels for the rule ids below one and the title above the next, configuration
    # labels left of each panel, the title on top and the colour bar at the bottom.
    axes_height, between, top, bottom = 0.25 + 0.16 * len(configs), 0.8, 0.6, 1.0
    width, height = 16.0, top + bottom + rows * axes_height + (rows - 1) * between
    # A Figure of its own, not pyplot's: no global state, no display, the Agg canvas that savefig uses.
    figure = Figure(figsize=(width, height))
    grid = figure.subplots(rows, PANEL_COLUMNS, squeeze=False)
    figure.subplots_adjust(left=2.3 / width, right=1 - 0.2 / width, top=1 - top / height, bottom=bottom / height)
    figure.subplots_adjust(wspace=2.4 / (width / PANEL_COLUMNS), hspace=between / axes_height)
    norm = matplotlib.colors.Normalize(vmin=0, vmax=max(6.0, *(math.log10(c["test_cases"] + 1) + 1 for c in coverage)))
    image = None
    for axes, (chapter, rules) in zip(grid.flat, chapters.items(), strict=False):
        image = draw_panel(axes, chapter, rules, configs, cells, norm)
    for axes in list(grid.flat)[len(chapters) :]:
        axes.set_visible(False)
    if image is not None:
        bar = figure.add_axes((0.3, 0.45 / height, 0.4, 0.12 / height))
        figure.colorbar(image, cax=bar, orientation="horizontal", label="log10(test cases) + 1; red: gap; ✗: failing")
    figure.suptitle("Spec rules exercised per configuration (a panel per chapter)", fontsize=10, y=1 - 0.2 / height)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=100)
    return buffer.getvalue()


COLOURS = {
    "conforms": "#7bc47f",
    "deviates": "#e05555",
    "not applicable": "#c8c8c8",
    "not judged": "#f4f4f4",
    EXERCISED: "#7bc47f",
    GAP: "#f4a3a3",
    "unavailable": "#ffffff",
}


def render_client_heat_map(matrix: list[dict]) -> bytes:
    """PNG: the rules some client was judged on (rows) x clients (columns), a colour and a mark per cell."""
    clients, cells = get_clients(matrix) or [("(no verdicts)", "")], index_matrix(matrix)
    rules = get_judged_rules(matrix) or ["(none)"]
    grid = [
        [to_rgb(COLOURS.get((cells.get((*c, r)) or {}).get("status", "unavailable"), "#ffffff")) for c in clients]
        for r in rules
    ]
    width, height = 2.5 + 1.6 * len(clients), 1.6 + 0.26 * len(rules)
    figure = Figure(figsize=(width, height))
    axes = figure.subplots()
    figure.subplots_adjust(left=0.9 / width, right=1 - 0.2 / width, bottom=0.2 / height, top=1 - 1.0 / height)
    axes.imshow(grid, aspect="auto")
    axes.set_xticks(range(len(clients)), [get_label(*c).replace(" (", "\n(") for c in clients], fontsize=7)
    axes.xaxis.tick_top()
    axes.set_yticks(range(len(rules)), rules, fontsize=7)
    marks = {"conforms": "✓", "deviates": "✗", "not applicable": "n/a", EXERCISED: "✓", GAP: "gap"}
    for row, rule in enumerate(rules):
        for col, client in enumerate(clients):
            status = (cells.get((*client, rule)) or {}).get("status", "unavailable")
            axes.text(col, row, marks.get(status, ""), ha="center", va="center", fontsize=7)
    axes.set_title("Spec rules x clients (✓ conforms / exercised, ✗ deviates, n/a, blank: not judged)", fontsize=9)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=110)
    return buffer.getvalue()
