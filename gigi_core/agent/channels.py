"""Which channels a tool call reads, and whether its asker and its answer's audience may read
them: one rule for a run's calls, a run continued after a confirmation, and a follow-up's
stored tool results."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gigi_core.agent.contracts import Request

ChannelCheck = Callable[[str], Awaitable[bool]]


def of_call(spec: Any, args: Any, own: str | None) -> tuple[list[str], list[str]]:
    """(named, implied): the channels a call's ``x-gigi-channel`` (or ``x-gigi-type:
    channel``) arguments name, and the run's own channel when one of them is left out (the
    tools' default, read just as surely)."""
    props = (spec.args.get("properties") or {}) if spec is not None else {}
    marked = [
        k
        for k, p in props.items()
        if isinstance(p, dict) and (p.get("x-gigi-channel") or p.get("x-gigi-type") == "channel")
    ]
    given = args if isinstance(args, dict) else {}
    named = [str(given[k]) for k in marked if k in given]
    implied = [own] if own is not None and any(k not in given for k in marked) else []
    return named, implied


def read_by(spec: Any, args: Any, own: str | None) -> list[str]:
    """Every channel a call's result may hold text of: its named and implied channels, or
    the run's own channel when it names none (what a follow-up checks again)."""
    named, implied = of_call(spec, args, own)
    found = list(dict.fromkeys([*named, *implied]))
    return found or ([own] if own is not None else [])


async def allowed(
    request: Request,
    named: list[str],
    implied: list[str],
    vouched: frozenset[str] | None = None,
) -> tuple[bool | None, bool | None]:
    """(actor may, audience may) for these channels; None where nothing was asked.

    Seeing a channel is not reading its history (Discord's Read Message History), so the
    implied channel passes the actor's check too. A surface with no check keeps to the
    channel asked in. An answer shown publicly lists only what its whole audience may read
    (the surface narrows ``visible_channels`` to that audience). With no lister, a fresh
    request's surface shows the answer to its actor alone (the console); a restored run
    (``vouched`` set) has lost its surface's lister, so only the channels vouched for stay
    in the audience: its own and those its pending call passed when it was proposed.
    """
    if not named and not implied:
        return None, None
    own = request.channel_id
    check = request.channel_visible
    if check is None:
        return all(c == own for c in named), None
    for channel in dict.fromkeys([*named, *implied]):
        if not await check(channel):
            return False, None
    if not named:
        return True, None  # the channel asked in is always in its answer's audience
    listed = await request.visible_channels() if request.visible_channels else None
    if listed is None:
        return True, vouched is None or all(c in vouched for c in named)
    return True, all(c in listed for c in named)


async def readable(request: Request, wanted: Iterable[str]) -> frozenset[str]:
    """The channels of ``wanted`` that ``allowed`` would pass for ``request`` now, each as
    read by a call that named it (its own channel as the implied one); the surface's list
    is asked once."""
    own = request.channel_id
    check = request.channel_visible
    wanted = list(dict.fromkeys(wanted))
    if check is None:
        return frozenset(c for c in wanted if c == own)
    seen = [c for c in wanted if await check(c)]
    others = [c for c in seen if c != own]
    listed = await request.visible_channels() if request.visible_channels and others else None
    return frozenset(c for c in seen if c == own or listed is None or c in listed)


def within(channels: Iterable[str], check: ChannelCheck) -> ChannelCheck:
    """A check passing only ``channels``, and of those only what ``check`` passes too."""
    kept = frozenset(channels)

    async def visible(channel_id: str) -> bool:
        return channel_id in kept and await check(channel_id)

    return visible
