"""LLM usage over time in a server: calls or tokens per day by model, purpose or provider,
plotted from the daily rollups (never the raw events), with the figures as a table. The
members who spent the most are a page of their own (``usage_members``)."""

from __future__ import annotations

from collections import defaultdict
from datetime import UTC, datetime, timedelta

from starlette.requests import Request
from starlette.responses import Response

from gigi_core import usage_by_day
from gigi_web.access import Refused
from gigi_web.pages.common import member_for, show
from gigi_web.params import query_int
from gigi_web.svg import stacked_bars

SPLITS = ("model", "purpose", "provider")
MEASURES = {"calls": "Calls", "input_tokens": "Input tokens", "output_tokens": "Output tokens"}
RANGES = (7, 30, 90)


def days_of(request: Request) -> int:
    """The ``days`` query parameter: one of RANGES (30 when absent), else a 400."""
    days = query_int(request.query_params.get("days"), "days", min(RANGES), max(RANGES), 30)
    if days not in RANGES:
        raise Refused(400, f"The days parameter takes {', '.join(map(str, RANGES))}.")
    return days


async def usage_page(request: Request) -> Response:
    web, member = await member_for(request, "usage")
    q = request.query_params
    split = q.get("by") if q.get("by") in SPLITS else "model"
    measure = q.get("measure") if q.get("measure") in MEASURES else "calls"
    days = days_of(request)
    points = await usage_by_day(web.kernel.db, member.guild.id, days=days, split_by=split)  # type: ignore[arg-type]
    first = datetime.now(UTC).date() - timedelta(days=days - 1)
    values = [(p.day, p.key, int(getattr(p, measure))) for p in points]
    title = f"{MEASURES[measure]} per day by {split}, last {days} days"
    chart, legend = stacked_bars(values, first, days, title)
    totals: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    for p in points:
        row = totals[p.key]
        row[0] += p.calls
        row[1] += p.input_tokens
        row[2] += p.output_tokens
    return await show(
        request, web, member, "usage.html", chart=chart, legend=legend, title=title,
        totals=sorted(totals.items()), split=split, measure=measure, days=days,
        splits=SPLITS, measures=MEASURES, ranges=RANGES,
    )  # fmt: skip
