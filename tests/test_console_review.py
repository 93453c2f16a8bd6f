"""The console's /review: an upgrade's held-back actions in the console guild, accepted by
its admin (the operator); a non-admin at the console cannot accept."""

from __future__ import annotations

import asyncio
import io

from gigi_core import Actor
from gigi_core.default_plugins.console import ConsoleSurface
from gigi_core.testing import open_test_kernel
from tests.toolbox import Toolbox


async def drive(kernel, lines: list[str], actor: Actor | None = None) -> str:
    out = io.StringIO()
    stdin = io.StringIO("".join(line + "\n" for line in lines))
    console = ConsoleSurface(kernel, stdin=stdin, stdout=out, actor=actor)
    await asyncio.wait_for(console.run(), 30)
    return out.getvalue()


async def test_review_lists_then_accepts_held_back_actions(database_url, tmp_path) -> None:
    async with open_test_kernel(
        tmp_path, plugins=[], extra_plugins=[("box", Toolbox(tmp_path))], database_url=database_url
    ) as kernel:
        await kernel.enable_plugin("console", "box", by="operator")
        assert "Nothing is held back here." in await drive(kernel, ["/review"])
        await kernel.reviews.record("box", "0.0.1", {"box.echo": "new read_only action"})

        out = await drive(kernel, ['/call box.echo {"text": "hi"}', "/review"])
        assert "/gigi plugins review" in out  # the refusal says where to accept
        assert "box 0.0.1:\n  box.echo: new read_only action" in out
        assert "Accept with: /review accept [PLUGIN]" in out
        # a change text holding terminal codes (a manifest cached before they were refused)
        await kernel.reviews.record("box", "0.0.1", {"box.sneak": "safe\x1b[8m hidden"})
        shown = await drive(kernel, ["/review"])
        assert "\x1b" not in shown and "safe\\u001b[8m hidden" in shown

        member = Actor(id="bob")
        refused = await drive(kernel, ["/review accept box"], actor=member)
        assert "Only this guild's admin can accept a plugin upgrade." in refused
        assert await kernel.reviews.pending("console")

        assert "Usage: /review" in await drive(kernel, ["/review yes please"])
        done = await drive(kernel, ["/review accept box", '/call box.echo {"text": "hi"}'])
        assert "Accepted here: box 0.0.1." in done
        assert "hi" in done.split("Accepted here")[1]
        assert await kernel.reviews.pending("console") == []
