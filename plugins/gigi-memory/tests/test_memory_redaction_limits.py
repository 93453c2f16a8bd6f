"""Issue 28: redaction an admin or a member cannot turn against the bot or get around.

Server patterns compile only with RE2 and run off the event loop with a time budget; the
built-in patterns are linear; patterns with inline flags combine; a failure is loud and
keeps the message (without text); the text is normalised before it is masked.
"""

from __future__ import annotations

import asyncio
import time

import pytest
import sqlalchemy as sa
from gigi_memory import tables
from gigi_memory.ingest.text import RedactionRules, check_pattern, redact, words
from memory_helpers import call, count, dump_text, enable, message, publish


def _best_ms(fn, *args) -> float:
    best = float("inf")
    for _ in range(3):
        started = time.perf_counter()
        fn(*args)
        best = min(best, time.perf_counter() - started)
    return best * 1000


# -- item 1: no pattern can freeze the bot ---------------------------------------------------


@pytest.mark.parametrize(
    "pattern",
    [
        "(?x:(a|aa) +)$",  # verbose mode: the spaces hid the repeated group
        "(?x:(a{1,50}) {1,50})$",
        "(?x)(a|aa)#\n+$",  # the repeat after a comment
    ],
)
def test_the_reported_backtracking_patterns_are_refused(pattern: str) -> None:
    assert "RE2 cannot compile" in (check_pattern(pattern) or "")


@pytest.mark.parametrize("pattern", ["[a]+b", "a.*b", "(a|aa)+$", r"\w+\w+!"])
def test_accepted_patterns_cost_little_on_a_long_message(pattern: str) -> None:
    """Quadratic or worse on Python's re (tens of ms to forever on 4,000 "a"s); RE2: µs."""
    assert check_pattern(pattern) is None
    rules = RedactionRules(emails=False, phones=False, patterns=(pattern,))
    assert _best_ms(redact, "a" * 4000, rules) < 5


@pytest.mark.parametrize(
    "text",
    [
        "a" * 4000,  # e-mail local part without "@"
        "-" * 4000,
        "+1" * 2000,
        "a." * 2000,
        "eyJ" * 1333,  # JWT starts
        "ghp_" * 1000,
        " " + "1." * 1998 + "a1",  # phone look-ahead
        "a@" + "b." * 1998,
    ],
)
def test_builtin_masks_are_linear_on_crafted_messages(text: str) -> None:
    """Any member's message: 15-150 ms each on the old patterns, ~1 ms now."""
    assert _best_ms(redact, text) < 10


async def test_server_patterns_run_off_the_event_loop(kernel, monkeypatch) -> None:
    """Forty crafted messages under a quadratic pattern (~60 ms each on the loop before, so
    2.4 s in one go): the loop keeps its turns (a database hiccup may still cost ~0.2 s)."""
    monkeypatch.setenv("GIGI_MEMORY_REDACT_BUDGET_MS", "10000")
    await enable(kernel)
    await call(kernel, "policy", redact_add="a.*b|a")
    gaps: list[float] = []
    stop = asyncio.Event()

    async def heartbeat() -> None:
        last = time.perf_counter()
        while not stop.is_set():
            await asyncio.sleep(0.002)
            now = time.perf_counter()
            gaps.append(now - last)
            last = now

    beat = asyncio.create_task(heartbeat())
    await publish(kernel, *(message("a" * 4000) for _ in range(40)))
    stop.set()
    await beat
    assert await count(kernel, author="u1") == 40
    assert max(gaps) < 0.6, f"the loop stood still for {max(gaps):.3f} s"


async def test_a_message_over_the_budget_is_kept_without_text(kernel, monkeypatch) -> None:
    monkeypatch.setenv("GIGI_MEMORY_REDACT_BUDGET_MS", "0.000001")
    await enable(kernel)
    await call(kernel, "policy", redact_add=r"PRJ-\d{4}")
    await publish(kernel, message("the canary ticket PRJ-1234"))
    assert "canary" not in await dump_text(kernel)
    assert await count(kernel, author="u1") == 1  # the message is there: author, time, channel
    status = (await call(kernel, "status"))["redaction"]
    assert status["withheld"] == status["over_budget"] == 1
    assert "budget" in status["last_problem"] and "canary" not in str(status)


# -- item 2: inline flags, and failures that are loud --------------------------------------


async def test_inline_flags_combine_and_nothing_is_dropped(kernel) -> None:
    await enable(kernel)
    await call(kernel, "policy", redact_add=r"(?i)prj-\d{4}")
    await call(kernel, "policy", redact_add=r"ticket-\d+")
    await publish(
        kernel,
        message("deploy PRJ-1234 now"),
        message("deploy prj-5678 and ticket-42"),
        message("TICKET-43 stays"),  # the (?i) does not leak into the next pattern
        message("hello world"),
    )
    assert await count(kernel, author="u1") == 4
    stored = await dump_text(kernel)
    assert "1234" not in stored and "5678" not in stored and "ticket-42" not in stored
    assert "43" in stored
    assert (await call(kernel, "status"))["redaction"]["withheld"] == 0


async def test_a_stored_pattern_re2_refuses_is_loud_and_keeps_messages(kernel) -> None:
    """A pattern accepted by an older release (Python re) that RE2 cannot compile: messages
    are kept without text, the status names the pattern, removing it restores the text."""
    await enable(kernel)
    await call(kernel, "policy", redact_add=r"x-\d+")  # the server's policy row exists
    async with kernel.db.engine.begin() as conn:
        await conn.execute(
            sa.update(tables.policies)
            .where(tables.policies.c.guild_id == "g1")
            .values(redaction='{"emails": true, "phones": true, "patterns": ["(?<=id:)\\\\d+"]}')
        )
    assert await kernel.gigi_memory.cache.load(kernel.db.engine)
    await publish(kernel, message("my id:424242 canary"))
    assert await count(kernel, author="u1") == 1
    assert "424242" not in await dump_text(kernel)
    status = await call(kernel, "status")
    assert "(?<=id:)" in status["redaction"]["rules_problem"]
    assert status["redaction"]["failed"] == 1
    assert status["policy"]["redaction"]["patterns"] == ["(?<=id:)\\d+"]  # never dropped
    with pytest.raises(Exception, match=r"\(\?<=id:\)"):  # adding names the stored one
        await call(kernel, "policy", redact_add="secret-\\d+")
    await call(kernel, "policy", redact_remove="(?<=id:)\\d+")
    await publish(kernel, message("the bird sings"))
    assert await count(kernel, text="bird") == 1


# -- item 3: normalise first, mask second ---------------------------------------------------


@pytest.mark.parametrize(
    ("text", "canary"),
    [
        ("write to alice\uff20example.org", "alice"),
        ("pass\u200bword=hunter2canary", "hunter2canary"),
        ("pass\u00adword: hunter2canary", "hunter2canary"),
        ("\uff53\uff4b\uff0d" + "\uff41\uff42\uff43\uff44" * 5, "abcd"),  # fullwidth sk-…
        ("key AKIA\u2060IOSFODNN7EXAMPLE", "IOSFODNN7"),
    ],
)
def test_disguised_secrets_are_masked(text: str, canary: str) -> None:
    masked, found = redact(text)
    assert found >= 1 and canary not in masked and canary.lower() not in words(masked)


def test_emoji_sequences_survive_normalisation() -> None:
    family = "\U0001f468\u200d\U0001f469\u200d\U0001f467 \u2764\ufe0f"
    assert redact(family)[0] == family


async def test_disguised_secrets_are_stored_nowhere(kernel) -> None:
    await enable(kernel)
    await publish(
        kernel,
        message("reach me at bob\uff20example.org"),
        message("pass\u200bword=hunter2canary"),
    )
    stored = await dump_text(kernel)
    assert "bob" not in stored and "hunter2canary" not in stored
    assert await count(kernel, author="u1") == 2
