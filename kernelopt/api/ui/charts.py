"""Server-rendered inline SVG charts for the dashboard: no JavaScript, no build step, no CDN.

Each chart is an <svg role="img"> with a <title> naming what it shows, and its numbers also go in a
table the page renders beside it (screen readers and copy-paste get the data, not a picture of it).
Colours pass WCAG AA against white for text; series are told apart by the legend's text too.
"""
from __future__ import annotations

from html import escape

from markupsafe import Markup

# Outcome colours: distinct in hue and lightness (readable for the common colour-vision deficiencies).
SERIES_COLOURS = {
    "optimized": "#116329", "matched": "#0550ae", "fallback": "#9a6700", "failed": "#a40e26",
    "crashed": "#6e2b7f", "cancelled": "#57606a", "unfinished": "#8c959f",
}
BAR = "#0a5bd3"
W, H, LEFT, BOTTOM, TOP = 640, 220, 40, 40, 12


def _axis(max_value: int) -> tuple[list[str], int]:
    """Y gridlines at round counts; returns the SVG parts and the axis top value."""
    top = max(1, max_value)
    step = next(s for s in (1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1000, 2000, 5000, 10 ** 9) if top / s <= 5)
    top = -(-top // step) * step
    parts = []
    for v in range(0, top + 1, step):
        y = H - BOTTOM - (H - BOTTOM - TOP) * v / top
        parts.append(f'<line x1="{LEFT}" x2="{W - 4}" y1="{y:.1f}" y2="{y:.1f}" stroke="#d0d7de"/>'
                     f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end" font-size="11" fill="#57606a">{v}</text>')
    return parts, top


def _svg(title: str, chart_id: str, parts: list[str]) -> Markup:
    return Markup(f'<svg id="{escape(chart_id)}" class="chart" viewBox="0 0 {W} {H}" role="img" '
                  f'aria-labelledby="{escape(chart_id)}-t" preserveAspectRatio="xMidYMid meet">'
                  f'<title id="{escape(chart_id)}-t">{escape(title)}</title>{"".join(parts)}</svg>')


def _label_every(n: int) -> int:
    return max(1, -(-n // 12))  # at most ~12 x labels, so they never overlap


def stacked_bars(chart_id: str, title: str, buckets: list[tuple[str, dict[str, int]]], series: list[str]) -> Markup:
    """One bar per bucket (e.g. a day), stacked by series (e.g. outcome)."""
    if not buckets:
        return _svg(title, chart_id, [f'<text x="{W / 2}" y="{H / 2}" text-anchor="middle" fill="#57606a">no jobs</text>'])
    parts, top = _axis(max(sum(c.values()) for _, c in buckets))
    slot = (W - LEFT - 8) / len(buckets)
    width = max(2.0, slot * 0.75)
    every = _label_every(len(buckets))
    for i, (label, counts) in enumerate(buckets):
        x = LEFT + 4 + i * slot
        base = float(H - BOTTOM)
        for name in series:
            n = counts.get(name, 0)
            if not n:
                continue
            h = (H - BOTTOM - TOP) * n / top
            base -= h
            parts.append(f'<rect x="{x:.1f}" y="{base:.1f}" width="{width:.1f}" height="{h:.1f}" '
                         f'fill="{SERIES_COLOURS.get(name, BAR)}"><title>{escape(label)}: {n} {escape(name)}'
                         f'</title></rect>')
        if i % every == 0:
            parts.append(f'<text x="{x + width / 2:.1f}" y="{H - BOTTOM + 16}" text-anchor="middle" font-size="11" '
                         f'fill="#1b1f24">{escape(label)}</text>')
    return _svg(title, chart_id, parts)


def histogram(chart_id: str, title: str, bins: list[tuple[str, int]]) -> Markup:
    """Counts per labelled bin (e.g. speedup ranges), with each count written above its bar."""
    if not any(n for _, n in bins):
        return _svg(title, chart_id, [f'<text x="{W / 2}" y="{H / 2}" text-anchor="middle" fill="#57606a">'
                                      f'no measured jobs</text>'])
    parts, top = _axis(max(n for _, n in bins))
    slot = (W - LEFT - 8) / len(bins)
    for i, (label, n) in enumerate(bins):
        x = LEFT + 4 + i * slot
        h = (H - BOTTOM - TOP) * n / top
        parts.append(f'<rect x="{x + slot * 0.1:.1f}" y="{H - BOTTOM - h:.1f}" width="{slot * 0.8:.1f}" '
                     f'height="{h:.1f}" fill="{BAR}"><title>{escape(label)}: {n} jobs</title></rect>'
                     f'<text x="{x + slot / 2:.1f}" y="{H - BOTTOM - h - 4:.1f}" text-anchor="middle" '
                     f'font-size="11" fill="#1b1f24">{n}</text>'
                     f'<text x="{x + slot / 2:.1f}" y="{H - BOTTOM + 16}" text-anchor="middle" font-size="11" '
                     f'fill="#1b1f24">{escape(label)}</text>')
    return _svg(title, chart_id, parts)
