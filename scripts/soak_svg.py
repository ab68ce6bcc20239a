"""A small SVG line plot (matplotlib is not installed): series over time, events marked."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

__all__ = ["Panel", "svg_plot"]

COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b")
WIDTH, PANEL_HEIGHT, LEFT, RIGHT, TOP, BOTTOM = 900, 260, 70, 170, 30, 40


@dataclass(frozen=True)
class Panel:
    """One chart: named series of (x, y) points sharing an x axis (seconds) and a y unit."""

    title: str
    unit: str
    series: dict[str, Sequence[tuple[float, float]]]


def _nice_top(value: float) -> float:
    """The smallest 1, 2 or 5 times 10^k at or above ``value`` (an axis that ends on a round number)."""
    if value <= 0:
        return 1.0
    magnitude = 10 ** len(str(int(value))) / 10 if value >= 1 else 1.0
    for step in (1, 2, 5, 10):
        if value <= step * magnitude:
            return step * magnitude
    return 10 * magnitude


def _panel(panel: Panel, top: float, x_max: float, events: Sequence[tuple[float, str]]) -> list[str]:
    plot_w, plot_h = WIDTH - LEFT - RIGHT, PANEL_HEIGHT - TOP - BOTTOM
    y_max = _nice_top(max((y for pts in panel.series.values() for _, y in pts), default=1.0))

    def xy(x: float, y: float) -> str:
        return f"{LEFT + plot_w * x / x_max:.1f},{top + TOP + plot_h * (1 - y / y_max):.1f}"

    out = [
        f'<text x="{LEFT}" y="{top + 18}" font-size="14" font-weight="bold">{escape(panel.title)}</text>',
        f'<rect x="{LEFT}" y="{top + TOP}" width="{plot_w}" height="{plot_h}" fill="none" stroke="#888"/>',
    ]
    for i in range(5):  # y grid: 0, ¼, ½, ¾, 1 of the axis
        y = y_max * i / 4
        yy = top + TOP + plot_h * (1 - i / 4)
        out.append(f'<line x1="{LEFT}" x2="{LEFT + plot_w}" y1="{yy:.1f}" y2="{yy:.1f}" stroke="#eee"/>')
        out.append(f'<text x="{LEFT - 6}" y="{yy + 4:.1f}" font-size="11" text-anchor="end">{y:,.4g}</text>')
    out.append(
        f'<text x="14" y="{top + TOP + plot_h / 2:.0f}" font-size="11" '
        f'transform="rotate(-90 14 {top + TOP + plot_h / 2:.0f})" text-anchor="middle">'
        f"{escape(panel.unit)}</text>"
    )
    for i in range(7):  # x ticks in minutes
        x = x_max * i / 6
        xx = LEFT + plot_w * i / 6
        out.append(
            f'<text x="{xx:.1f}" y="{top + TOP + plot_h + 16}" font-size="11" '
            f'text-anchor="middle">{x / 60:.1f}</text>'
        )
    for at, label in events:
        xx = LEFT + plot_w * at / x_max
        out.append(
            f'<line x1="{xx:.1f}" x2="{xx:.1f}" y1="{top + TOP}" y2="{top + TOP + plot_h}" '
            f'stroke="#999" stroke-dasharray="4 3"><title>{escape(label)}</title></line>'
        )
    for n, (name, points) in enumerate(panel.series.items()):
        colour = COLOURS[n % len(COLOURS)]
        if points:
            path = " ".join(xy(x, y) for x, y in points)
            out.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="1.5"/>')
        ly = top + TOP + 14 + 16 * n
        out.append(f'<rect x="{WIDTH - RIGHT + 10}" y="{ly - 9}" width="12" height="3" fill="{colour}"/>')
        out.append(f'<text x="{WIDTH - RIGHT + 27}" y="{ly - 4}" font-size="11">{escape(name)}</text>')
    return out


def svg_plot(panels: Sequence[Panel], events: Sequence[tuple[float, str]], caption: str) -> str:
    """Panels stacked, x in minutes, each event a dashed vertical line (its label as a tooltip and,
    numbered, under the plot)."""
    x_max = max((x for p in panels for pts in p.series.values() for x, _ in pts), default=1.0) or 1.0
    height = PANEL_HEIGHT * len(panels) + 40 + 14 * len(events)
    body = [f'<rect width="{WIDTH}" height="{height}" fill="white"/>']
    for i, panel in enumerate(panels):
        body += _panel(panel, i * PANEL_HEIGHT, x_max, events)
        body.append(
            f'<text x="{LEFT + (WIDTH - LEFT - RIGHT) / 2:.0f}" y="{i * PANEL_HEIGHT + PANEL_HEIGHT - 6}" '
            'font-size="11" text-anchor="middle">minutes</text>'
        )
    y = PANEL_HEIGHT * len(panels) + 12
    body.append(f'<text x="{LEFT}" y="{y}" font-size="11">{escape(caption)}</text>')
    for n, (at, label) in enumerate(events, start=1):
        body.append(
            f'<text x="{LEFT}" y="{y + 14 * n}" font-size="10">{at / 60:5.1f} min: {escape(label)}</text>'
        )
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
        f'font-family="sans-serif">\n' + "\n".join(body) + "\n</svg>\n"
    )
