"""Start the kernel's event router from a test, before a bot under SimCord takes messages."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gigi_core.kernel import Kernel


async def start_event_router(kernel: Kernel) -> None:
    """Start the event router (and so the observers' workers) outside any bot handler.

    Without it, the first message a bot under SimCord publishes starts the router inside
    the bot's handler, and SimCord waits for that never-ending task: the run never settles.
    Call it after opening the kernel and before ``simcord.run(bot)``.
    """
    kernel.events.start()
