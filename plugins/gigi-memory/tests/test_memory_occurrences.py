"""``memory.count``'s ``occurrences``: how often a word or phrase occurs in the counted
messages, computed in SQL, the same on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime

from memory_helpers import call, enable, message, publish

from gigi_core.events import MessageEdited

TEXTS = [
    ("u1", "Postgres, postgres and more POSTGRES"),  # 3
    ("u1", "we moved to postgres"),  # 1
    ("u2", "postgresql is not postgres-the-word? it is: postgres"),  # postgres x2, postgresql no
    ("u2", "sqlite only"),
    ("u1", "a a a a a"),
    ("u2", "ship it ship it ship it"),
]


async def _counted(kernel, **args):
    result = await call(kernel, "count", **args)
    return result["count"], result["occurrences"]


async def test_occurrences_beside_counts(kernel) -> None:
    await enable(kernel)
    await publish(kernel, *[message(text, author_id=a) for a, text in TEXTS])
    assert await _counted(kernel, text="postgres") == (3, 6)
    assert await _counted(kernel, text="postgres", author="u1") == (2, 4)
    assert await _counted(kernel, text="POSTGRESQL") == (1, 1)  # whole words only
    assert await _counted(kernel, text="sqlite") == (1, 1)
    assert await _counted(kernel, text="a") == (1, 5)  # back-to-back occurrences all count
    assert await _counted(kernel, text="a a") == (1, 2)  # a phrase: non-overlapping
    assert await _counted(kernel, text="ship it") == (1, 3)
    assert await _counted(kernel, text="it ship") == (1, 2)
    assert await _counted(kernel, text="nothing here") == (0, 0)


async def test_occurrences_follow_the_filters_and_edits(kernel) -> None:
    await enable(kernel)
    await enable(kernel, channel="c2")
    first = message("release release", author_id="u1")
    await publish(
        kernel,
        first,
        message("release", author_id="u2"),
        message("release release release", channel_id="c2"),
    )
    assert await _counted(kernel, text="release") == (2, 3)
    assert await _counted(kernel, text="release", channel="c2") == (1, 3)
    edit = MessageEdited(
        guild_id="g1",
        message_id=first.message_id,
        channel_id="c1",
        edited_at=datetime.now(UTC),
        text="release notes",
    )
    await publish(kernel, edit)
    assert await _counted(kernel, text="release") == (2, 2)


async def test_no_occurrences_without_a_text(kernel) -> None:
    await enable(kernel)
    await publish(kernel, message("hello there", author_id="u1"))
    assert await _counted(kernel, author="u1") == (1, None)
