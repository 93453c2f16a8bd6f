"""The engine against a real kernel: who is asked, bad retrievers, scope, odd queries."""

from __future__ import annotations

import json
import logging

import pytest

from gigi_core.policy.actor import Actor
from gigi_core.retrieval import Hit, retrieve
from gigi_core.retrieval.engine import RetrievalResult
from gigi_core.testing.retrieval import hit
from tests.retrieval.helpers import MEMBER, NOW, VISIBLE, days, fake, retrieval_kernel


async def run(kernel, query: str = "postgres", actor: Actor = MEMBER) -> RetrievalResult:
    return await retrieve(
        kernel,
        actor=actor,
        guild_id="g1",
        visible_channels=VISIBLE,
        query=query,
        use_model=False,
        now=NOW,
    )


async def test_merges_permitted_paths_and_drops_hits_outside_scope(
    tmp_path, database_url, caplog
) -> None:
    a = fake("alpha", respect_scope=False)  # buggy: returns a hidden channel's hit
    b = fake("beta", hits=fake("x").hits[:1], paths=("kw",))
    async with retrieval_kernel(tmp_path, database_url, a, b) as kernel:
        with caplog.at_level(logging.ERROR):
            result = await run(kernel)
    ids = [r.hit.source_id for r in result.ranked]
    assert ids == ["notes:n:1", "notes:n:2"]  # n:1 found by both paths comes first
    assert result.ranked[0].paths == ("alpha", "beta")
    assert result.reports["alpha"].out_of_scope == 1 and result.reports["alpha"].hits == 2
    assert "outside the scope" in caplog.text
    scope = a.calls[0][1]
    assert scope.channel_ids == VISIBLE and scope.guild_id == "g1"
    trace = json.dumps(result.trace())
    assert "secret channel" not in trace and "postgres" not in trace  # ids and counts only


async def test_disabled_plugin_and_missing_capability_are_not_asked(tmp_path, database_url) -> None:
    open_path = fake("open", capability="notes.read")
    admin_path = fake("admin", capability="notes.admin")
    caps = {"notes.read": "everyone", "notes.admin": "admins"}
    async with retrieval_kernel(
        tmp_path, database_url, open_path, admin_path, capabilities=caps, enable=False
    ) as kernel:
        result = await run(kernel)
        assert result.ranked == [] and open_path.calls == [] and admin_path.calls == []
        assert result.reports["open"].reason == "plugin_disabled"
        await kernel.enable_plugin("g1", "notes")
        result = await run(kernel)
        assert result.reports["admin"].status == "not_permitted" and admin_path.calls == []
        assert result.reports["open"].status == "ok" and len(open_path.calls) == 1
        await kernel.add_grant("g1", "notes.admin", "user", "u1")
        kernel.views.clear()
        result = await run(kernel)
        assert result.reports["admin"].status == "ok" and len(admin_path.calls) == 1
        boss = await run(kernel, actor=Actor("u2", is_admin=True))
        assert boss.reports["admin"].status == "ok"


async def test_raising_hanging_and_malformed_retrievers_are_skipped(
    tmp_path, database_url, monkeypatch
) -> None:
    monkeypatch.setenv("GIGI_RETRIEVAL_PATH_TIMEOUT_SECONDS", "0.2")
    good = fake("good")
    boom = fake("boom", raises=RuntimeError("db down"))
    slow = fake("slow", delay=5.0)
    junk = fake("junk", returns={"not": "a list"})
    mixed = fake(
        "mixed",
        returns=[
            {"source_id": "no namespace", "kind": "message", "text": "x", "channel_id": "c1"},
            Hit("notes:n:7", "message", "", "c1"),  # empty text
            Hit("notes:n:8", "message", "ok", "c1", confidence=7.0),
            "a string",
            {
                "source_id": "notes:n:9",
                "kind": "message",
                "text": "fine as a dict",
                "channel_id": "c1",
                "citation": {"label": "#c1"},
            },
        ],
    )
    async with retrieval_kernel(tmp_path, database_url, good, boom, slow, junk, mixed) as kernel:
        result = await run(kernel)
    r = result.reports
    assert (r["boom"].status, r["boom"].reason) == ("error", "RuntimeError")
    assert r["slow"].status == "timeout" and r["slow"].ms < 2000
    assert r["junk"].status == "malformed"
    assert (r["mixed"].status, r["mixed"].hits, r["mixed"].malformed) == ("ok", 1, 4)
    assert r["good"].status == "ok" and r["good"].hits == 2
    assert {h.hit.source_id for h in result.ranked} == {"notes:n:1", "notes:n:2", "notes:n:9"}


async def test_empty_and_very_long_queries(tmp_path, database_url) -> None:
    path = fake("alpha")
    async with retrieval_kernel(tmp_path, database_url, path) as kernel:
        empty = await run(kernel, "   \n ")
        assert empty.ranked == [] and empty.plan is None and path.calls == []
        long = await run(kernel, "postgres " + "x" * 10_000)
    assert long.query_truncated and long.query_chars == 10_009
    assert len(path.calls[0][0]) == 1000  # max_query_chars
    assert long.trace()["query_truncated"] is True


async def test_guild_settings_come_from_the_gigi_plugin_config(tmp_path, database_url) -> None:
    from gigi_core.errors import ConfigError

    a = fake("alpha", hits=fake("x").hits[:2])
    b = fake("beta", hits=list(reversed(fake("x").hits[:2])))
    async with retrieval_kernel(tmp_path, database_url, a, b) as kernel:
        tie = await run(kernel)
        assert [r.hit.source_id for r in tie.ranked] == ["notes:n:1", "notes:n:2"]
        config = {"retrieval": {"path_weights": {"beta": 3}, "per_path_limit": 1}}
        await kernel.configure_plugin("g1", "gigi", config)
        weighted = await run(kernel)
        assert [r.hit.source_id for r in weighted.ranked] == ["notes:n:2", "notes:n:1"]
        assert b.calls[-1][2] == 1  # per_path_limit
        assert "gigi" in await kernel.plugin_state.enabled_plugins("g1")  # still on
        with pytest.raises(ConfigError, match="retrieval"):
            await kernel.configure_plugin("g1", "gigi", {"retrieval": {"rrf": 1}})


async def test_recency_ranks_only_when_the_query_asks_for_time(tmp_path, database_url) -> None:
    old_first = fake(
        "alpha",
        hits=[
            hit("notes:n:1", "postgres upgrade agreed", "c1", when=days(400)),
            hit("notes:n:2", "postgres backups weekly", "c1", when=days(1)),
        ],
    )
    async with retrieval_kernel(tmp_path, database_url, old_first) as kernel:
        plain = await run(kernel, "postgres upgrade")
        timed = await run(kernel, "latest postgres upgrade")
    assert [r.hit.source_id for r in plain.ranked] == ["notes:n:1", "notes:n:2"]
    assert [r.hit.source_id for r in timed.ranked] == ["notes:n:2", "notes:n:1"]
