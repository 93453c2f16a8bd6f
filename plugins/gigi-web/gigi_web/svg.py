"""Server-rendered SVG bar charts: no JavaScript, no chart library, every label escaped."""

from __future__ import annotations

from collections import defaultdict
from datetime import date, timedelta

from markupsafe import Markup, escape

PALETTE = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#9c755f")
WIDTH, HEIGHT, LEFT, BOTTOM, TOP = 720, 260, 56, 36, 12


def stacked_bars(
    points: list[tuple[date, str, int]], first: date, days: int, title: str
) -> tuple[Markup, list[tuple[str, str]]]:
    """(the SVG, the legend as (series, colour)); one bar per day stacked by series."""
    by_day: dict[date, dict[str, int]] = defaultdict(dict)
    totals: dict[str, int] = defaultdict(int)
    for day, key, value in points:
        by_day[day][key] = by_day[day].get(key, 0) + value
        totals[key] += value
    series = sorted(totals, key=lambda k: (-totals[k], k))
    colour = {k: PALETTE[i % len(PALETTE)] for i, k in enumerate(series)}
    top = max((sum(v.values()) for v in by_day.values()), default=0) or 1
    plot_w, plot_h = WIDTH - LEFT - 8, HEIGHT - BOTTOM - TOP
    step = plot_w / days
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" '
        f'role="img" aria-labelledby="chart-title" class="chart">',
        f'<title id="chart-title">{escape(title)}</title>',
        f'<line x1="{LEFT}" y1="{TOP + plot_h}" x2="{WIDTH - 8}" y2="{TOP + plot_h}" '
        'stroke="#888"/>',
        f'<text x="{LEFT - 6}" y="{TOP + 10}" text-anchor="end" font-size="11">{top:,}</text>',
        f'<text x="{LEFT - 6}" y="{TOP + plot_h}" text-anchor="end" font-size="11">0</text>',
    ]
    for i in range(days):
        day = first + timedelta(days=i)
        x = LEFT + i * step
        y = TOP + plot_h
        for key in series:
            value = by_day.get(day, {}).get(key, 0)
            if not value:
                continue
            h = plot_h * value / top
            y -= h
            parts.append(
                f'<rect x="{x + 1:.1f}" y="{y:.1f}" width="{max(step - 2, 1):.1f}" '
                f'height="{h:.1f}" fill="{colour[key]}"><title>{escape(day.isoformat())} '
                f"{escape(key)}: {value:,}</title></rect>"
            )
        if i % max(days // 6, 1) == 0:
            parts.append(
                f'<text x="{x + step / 2:.1f}" y="{HEIGHT - 14}" text-anchor="middle" '
                f'font-size="11">{escape(day.strftime("%b %d"))}</text>'
            )
    parts.append("</svg>")
    return Markup("".join(parts)), [(k, colour[k]) for k in series]
