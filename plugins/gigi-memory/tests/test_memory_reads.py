"""Counts, search and recent: exact SQL answers on both backends, literal queries, scopes
and channel visibility, and the bad input of the issue."""

from __future__ import annotations

import pytest
from memory_helpers import MEMBER, call, count, embed_all, enable, message, publish

from gigi_core import InvalidArguments, PolicyDenied, ToolExecutionError
from gigi_core.surfaces import Request

CORPUS = [
    ("u1", "We should move to Postgres soon", ("42",)),
    ("u1", "postgres, postgres and more POSTGRES", ()),
    ("u2", "I prefer sqlite for small things", ("42",)),
    ("u2", "the release is decided: ship friday", ()),
    ("u1", 'quotes "NEAR" and -dash : colon * star', ()),
    ("u3", "数据库很重要 postgres नमस्ते दुनिया Ελληνικά", ()),
]


@pytest.fixture
async def corpus(kernel):
    await enable(kernel)
    await enable(kernel, channel="c2")
    await publish(
        kernel,
        *[message(text, author_id=a, mentioned_user_ids=m) for a, text, m in CORPUS],
        message("postgres in another channel", channel_id="c2", author_id="u1"),
    )
    await embed_all(kernel)
    return kernel


async def test_exact_counts(corpus) -> None:
    k = corpus
    assert await count(k, text="postgres") == 3  # messages, not occurrences
    assert await count(k, text="POSTGRES") == 3
    assert await count(k, text="postgres", author="u1") == 2
    assert await count(k, author="u2") == 2
    assert await count(k, mentioned="42") == 2
    assert await count(k, mentioned="42", author="u2") == 1
    assert await count(k, text="move to postgres") == 1  # a phrase, in order
    assert await count(k, text="postgres to move") == 0
    assert await count(k, text="postgres", channel="c2") == 1
    result = await call(k, "count", text="postgres")
    assert result["counted"] == "messages containing the text"
    assert result["scope"]["channel_ids"] == ["c1"] and result["scope"]["kind"] == "this-channel"
    assert "postgres" not in str(result)  # the result never echoes the text


async def test_time_windows(kernel) -> None:
    await enable(kernel)
    await publish(kernel, message("now then"))
    assert await count(kernel, text="now", since="1h") == 1
    assert await count(kernel, text="now", until="1h") == 0
    assert await count(kernel, text="now", since="2000-01-01", until="2999-01-01T00:00:00Z") == 1
    with pytest.raises(ToolExecutionError, match="since: cannot read"):
        await count(kernel, text="now", since="last tuesday")
    with pytest.raises(ToolExecutionError, match="before until"):
        await count(kernel, text="now", since="2030-01-01", until="2020-01-01")


SYNTAX = [
    '"',
    "*",
    "NEAR",
    "-",
    ":",
    'NEAR("a" b)',
    "postgres*",
    "-postgres",
    "col:postgres",
    "a OR b",
    "AND",
    "'",
    "(",
    "&|!<->",
    "^",
    "{c1 c2}: x",
    "a + b",
]


async def test_fts_syntax_is_literal(corpus) -> None:
    for text in SYNTAX:
        try:
            n = await count(corpus, text=text)
        except ToolExecutionError as exc:
            assert "no words" in str(exc), text  # punctuation alone is no word: a clear answer
            continue
        assert n >= 0, text
        assert isinstance((await call(corpus, "search", query=text))["hits"], list), text


async def test_syntax_words_count_as_words(corpus) -> None:
    assert await count(corpus, text="NEAR") == 1
    assert await count(corpus, text='"near"') == 1
    assert await count(corpus, text="-dash") == 1
    assert await count(corpus, text="colon * star") == 1
    assert await count(corpus, text="postgres*") == 3  # no prefix search: the word itself


async def test_mixed_scripts(corpus) -> None:
    assert await count(corpus, text="数据库") == 1
    assert await count(corpus, text="नमस्ते") == 1
    assert await count(corpus, text="ελληνικά") == 1
    assert await count(corpus, text="дом") == 0


async def test_empty_and_huge_count_text_are_refused(corpus) -> None:
    with pytest.raises(InvalidArguments):
        await count(corpus, text="")
    with pytest.raises(InvalidArguments):
        await count(corpus, text="x" * 5000)
    with pytest.raises(ToolExecutionError, match="no words"):
        await count(corpus, text="🎉")
    with pytest.raises(ToolExecutionError, match="say what to count"):
        await call(corpus, "count")


async def test_zero_width_and_long_messages(kernel) -> None:
    await enable(kernel)
    long = ("word " * 799) + "needle"
    assert len(long) == 4001
    await publish(kernel, message("pass\u200bword here"), message(long))
    assert await count(kernel, text="password") == 1
    assert await count(kernel, text="pass\u200bword") == 1
    assert await count(kernel, text="needle") == 1
    (hit,) = (await call(kernel, "search", query="needle"))["hits"]
    assert len(hit["snippet"]) == 300


async def test_search_ranks_and_cites(corpus) -> None:
    result = await call(corpus, "search", query="postgres release", limit=3)
    hits = result["hits"]
    assert len(hits) == 3 and result["paths"] == ["fulltext", "vector"]
    for hit in hits:
        assert set(hit) >= {
            "message_id",
            "channel_id",
            "author_id",
            "created_at",
            "url",
            "snippet",
            "score",
            "paths",
        }
        assert hit["channel_id"] == "c1" and "fulltext" in hit["paths"]
    assert all(hits[i]["score"] >= hits[i + 1]["score"] for i in range(len(hits) - 1))
    # u1 never wrote "sqlite": no word match; by meaning their postgres messages are near.
    near = (await call(corpus, "search", query="sqlite", author="u1"))["hits"]
    assert all(h["author_id"] == "u1" and h["paths"] == ["vector"] for h in near)
    (hit,) = (await call(corpus, "search", query="friday"))["hits"]
    assert hit["snippet"] == "the release is decided: ship friday"
    assert hit["paths"] == ["fulltext", "vector"]


async def test_search_drops_words_too_common_to_rank(corpus, monkeypatch) -> None:
    from gigi_memory.search import reads

    monkeypatch.setattr(reads, "COMMON_MATCHES", 3)  # "postgres" is in 4 messages here
    async with corpus.db.engine.connect() as conn:
        kept = await reads.selective_words(conn, corpus.db.dialect, ["postgres", "sqlite"])
        alone = await reads.selective_words(conn, corpus.db.dialect, ["postgres"])
    assert kept == ["sqlite"] and alone == ["postgres"]  # a lone word is always kept
    await call(corpus, "policy", embeddings="off")  # the full-text path alone
    hits = (await call(corpus, "search", query="postgres sqlite"))["hits"]
    assert [h["snippet"] for h in hits] == ["I prefer sqlite for small things"]
    assert await count(corpus, text="postgres") == 3  # counts never drop a word


async def test_recent(corpus) -> None:
    result = await call(corpus, "recent", limit=2)
    assert [m["snippet"] for m in result["messages"]] == [CORPUS[-1][1], CORPUS[-2][1]]
    other = await call(corpus, "recent", channel="c2")
    assert [m["channel_id"] for m in other["messages"]] == ["c2"]


async def test_visible_guild_never_reaches_other_channels(corpus) -> None:
    result = await call(corpus, "count", text="postgres", scope="visible-guild")
    assert result["count"] == 3  # c1 (and its threads) only: the c2 message is not counted
    assert result["scope"]["channel_ids"] == ["c1"] and "note" in result["scope"]
    hits = (await call(corpus, "search", query="postgres", scope="visible-guild"))["hits"]
    assert {h["channel_id"] for h in hits} == {"c1"}


async def test_a_member_cannot_read_a_channel_they_cannot_see(corpus) -> None:
    await corpus.add_grant("g1", "memory.read.guild", "user", "member")
    # The surface says the member cannot see c2: nothing from it, not even a count.
    for action, args in (
        ("count", {"text": "postgres"}),
        ("search", {"query": "postgres"}),
        ("recent", {}),
    ):
        with pytest.raises(PolicyDenied, match="cannot view"):
            await corpus.call_tool(
                f"memory.{action}",
                args | {"channel": "c2"},
                actor=MEMBER,
                guild_id="g1",
                channel_id="c1",
                channel_visible=False,
            )

    async def sees(channel: str) -> bool:
        return channel == "c1"

    request = Request(
        actor=MEMBER, guild_id="g1", channel_id="c1", kind="slash", text="", channel_visible=sees
    )
    with pytest.raises(PolicyDenied, match="cannot view"):
        await corpus.agent.direct(request, "memory.count", {"text": "postgres", "channel": "c2"})
    reply = await corpus.agent.direct(request, "memory.count", {"text": "postgres"})
    assert reply.citations[0].result["count"] == 3


async def test_past_retention_is_gone_for_reads(kernel) -> None:
    await enable(kernel, days=1)
    await call(kernel, "policy", retention_days=1)
    # A message older than the retention is refused at the gate; a stored one that expires is hidden.
    await publish(kernel, message("fresh"))
    from gigi_memory.service import service_of

    async with service_of(kernel).engine.begin() as conn:
        import sqlalchemy as sa

        await conn.execute(sa.text("UPDATE memory_messages SET retention_until_ms = 1"))
    assert await count(kernel, text="fresh") == 0
    assert (await call(kernel, "recent"))["messages"] == []


async def test_reads_need_a_channel(corpus) -> None:
    with pytest.raises(ToolExecutionError, match="no channel"):
        await call(corpus, "count", channel_id=None, text="postgres")
    assert await count(corpus, channel_id=None, channel="c1", text="postgres") == 3


async def test_the_agent_answers_a_count_from_the_tool(corpus) -> None:
    from gigi_core.testing import AgentRuntime, ScriptedModel, wire_name
    from gigi_core.testing.scripted import call as model_call
    from gigi_core.testing.scripted import say

    await corpus.add_grant("g1", "memory.read.guild", "user", "member")
    model = ScriptedModel(
        [
            model_call((wire_name("memory.count"), {"text": "postgres", "author": "u1"})),
            say("u1 mentioned postgres in 2 messages here."),
        ]
    )
    runtime = AgentRuntime(corpus, model=model)
    request = Request(
        actor=MEMBER, guild_id="g1", channel_id="c1", kind="mention", text="how often?"
    )
    reply = await runtime.handle(request)
    offered = set(model.offered(0))
    assert {wire_name(f"memory.{a}") for a in ("count", "search", "recent")} <= offered
    assert not {wire_name(f"memory.{a}") for a in ("enable", "purge", "policy")} & offered
    assert reply.citations[0].result["count"] == 2
