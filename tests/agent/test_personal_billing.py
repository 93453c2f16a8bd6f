"""Runs billed to a member's own key (issue 30): the remembered billing choice reaches the
model call, guild context is left out until the member confirms the disclosure once per
guild (and the reply says so), and a DM answers with the member's key on a fresh install.
Both backends; wire-level fake providers on loopback."""

from __future__ import annotations

from contextlib import asynccontextmanager

from gigi_core import Actor
from gigi_core.agent import Request
from gigi_core.agent.runtime import AgentRuntime
from gigi_core.testing.fake_providers import FakeOpenAI
from tests.llm.service_helpers import GUILD_KEY, USER_KEY
from tests.retrieval.helpers import fake, retrieval_kernel

MEMBER = Actor("u1")
FACT = "postgres upgrade agreed"  # a guild memory hit, visible in c1


def ask(kind: str = "mention", guild: str = "g1", **kw) -> Request:
    return Request(actor=MEMBER, guild_id=guild, channel_id="c1", kind=kind, text="postgres?", **kw)


def sent(server: FakeOpenAI) -> str:
    return str(server.requests_to("chat")[-1].json["messages"])


@asynccontextmanager
async def _keyed(database_url, tmp_path, *, guild: bool = False, enable: bool = True):
    """A kernel where u1 has a personal key on one fake OpenAI and, with ``guild``, the
    server a key on another: the kernel and both fakes (the server's None without)."""
    async with (
        retrieval_kernel(
            tmp_path, database_url, fake("notes"), plugins=["openai"], enable=enable
        ) as kernel,
        FakeOpenAI(api_key=USER_KEY) as member_srv,
        FakeOpenAI(api_key=GUILD_KEY) as guild_srv,
    ):
        await kernel.llm.personal.add(
            "u1", "openai-compatible", "mine", USER_KEY, base_url=member_srv.base_url,
            model="u-model",
        )  # fmt: skip
        if guild:
            await kernel.llm.add_credential(
                "guild:g1", "openai-compatible", "k", GUILD_KEY, base_url=guild_srv.base_url
            )
            await kernel.llm.set_profile("guild:g1", "chat", "k", "g-model")
        yield kernel, member_srv, guild_srv if guild else None


async def test_guild_context_waits_for_the_disclosure(database_url, tmp_path) -> None:
    async with _keyed(database_url, tmp_path) as (kernel, member_srv, _):
        await kernel.llm.set_policy("g1", personal_keys="guild-allowed")
        rt = AgentRuntime(kernel)
        member_srv.reply_text("without context")
        reply = await rt.handle(ask())
        assert reply.status == "done" and reply.text == "without context"
        assert FACT not in sent(member_srv)
        assert reply.disclosure and "left out" in reply.disclosure
        assert "left out" in reply.full_text()
        [event] = [
            e for e in await kernel.llm.usage_log.events() if e["purpose"] != "query_analyse"
        ]
        assert (event["billing_owner_type"], event["billing_owner_id"]) == ("user", "u1")

        assert await kernel.llm.personal.acknowledge("g1", "u1")
        member_srv.reply_text("with context")
        again = await rt.handle(ask())
        assert again.text == "with context" and again.disclosure is None
        assert FACT in sent(member_srv)
        # another guild needs its own confirmation
        assert not await kernel.llm.personal.acknowledged("g2", "u1")


async def test_the_billing_choice_is_remembered_and_reaches_the_call(
    database_url, tmp_path
) -> None:
    async with _keyed(database_url, tmp_path, guild=True) as (kernel, member_srv, guild_srv):
        await kernel.llm.set_policy("g1", personal_keys="guild-allowed")
        rt = AgentRuntime(kernel)
        guild_srv.reply_text("server pays")
        assert (await rt.handle(ask())).text == "server pays"  # auto: the guild first
        assert FACT in sent(guild_srv)

        await kernel.llm.personal.remember_billing("g1", "u1", "me")
        member_srv.reply_text("member pays")
        mine = await rt.handle(ask())
        assert mine.text == "member pays" and mine.disclosure is not None
        guild_srv.reply_text("server pays again")
        once = await rt.handle(ask(billing="server"))  # this request only
        assert once.text == "server pays again" and once.disclosure is None
        assert await kernel.llm.personal.billing("g1", "u1") == "me"

        # The guild turns personal keys off: the remembered choice no longer applies.
        await kernel.llm.set_policy("g1", personal_keys="off")
        guild_srv.reply_text("policy wins")
        assert (await rt.handle(ask())).text == "policy wins"
        # An explicit request for the member's key is refused with the policy's words.
        refused = await rt.handle(ask(billing="me"))
        assert refused.status == "failed"
        assert len(member_srv.requests_to("chat")) == 1


async def test_a_dm_answers_with_the_members_key_on_a_fresh_install(database_url, tmp_path) -> None:
    async with _keyed(database_url, tmp_path) as (kernel, member_srv, _):
        member_srv.reply_text("hello in private")
        reply = await AgentRuntime(kernel).handle(ask(kind="dm", guild="dm:u1"))
        assert reply.status == "done" and reply.text == "hello in private"
        assert reply.disclosure is None  # no guild context in a private DM
        assert member_srv.requests_to("chat")[0].headers["authorization"] == f"Bearer {USER_KEY}"


async def test_earlier_turns_wait_for_the_disclosure_too(database_url, tmp_path) -> None:
    async with _keyed(database_url, tmp_path, guild=True, enable=False) as (
        kernel,
        member_srv,
        guild_srv,
    ):
        await kernel.llm.set_policy("g1", personal_keys="guild-allowed")
        rt = AgentRuntime(kernel)
        guild_srv.reply_text("the launch code is TANGERINE")
        first = await rt.handle(ask())  # no retrieval here: mode none, the server pays
        assert first.disclosure is None
        member_srv.reply_text("no memory of that")
        follow = await rt.handle(ask(follows_run=first.run_id, billing="me"))
        assert follow.text == "no memory of that" and follow.disclosure is not None
        assert "TANGERINE" not in sent(member_srv)
        await kernel.llm.personal.acknowledge("g1", "u1")
        member_srv.reply_text("now I see it")
        again = await rt.handle(ask(follows_run=first.run_id, billing="me"))
        assert again.disclosure is None and "TANGERINE" in sent(member_srv)


async def test_a_picture_is_billed_as_the_run_is(database_url, tmp_path) -> None:
    from gigi_core.agent.vision import AttachedImage
    from gigi_core.testing.fake_providers import png_bytes

    picture = AttachedImage("a1", "image/png", 70, 2, 2, png_bytes())
    async with _keyed(database_url, tmp_path, guild=True) as (kernel, member_srv, guild_srv):
        for owner, label in (("user:u1", "mine"), ("guild:g1", "k")):
            await kernel.llm.set_profile(owner, "vision", label, "v-model", params={"images": True})
        await kernel.llm.set_policy("g1", personal_keys="guild-allowed")
        member_srv.reply_text("a grey square")
        reply = await AgentRuntime(kernel).handle(ask(billing="me", images=(picture,)))
        assert reply.text == "a grey square"
        assert guild_srv.requests == [] and len(member_srv.requests_to("chat")) == 1


async def test_an_ambient_run_is_billed_to_the_server_even_for_a_member_who_chose_me(
    database_url, tmp_path
) -> None:
    async with _keyed(database_url, tmp_path, guild=True) as (kernel, member_srv, guild_srv):
        await kernel.llm.set_policy("g1", personal_keys="guild-allowed")
        await kernel.llm.personal.remember_billing("g1", "u1", "me")
        await kernel.llm.personal.acknowledge("g1", "u1")
        guild_srv.reply_text("gigi speaks up")
        reply = await AgentRuntime(kernel).handle(ask(kind="ambient"))
        assert reply.text == "gigi speaks up"
        assert member_srv.requests_to("chat") == []  # unasked: never on the member's key
        owners = {
            (e["billing_owner_type"], e["billing_owner_id"])
            for e in await kernel.llm.usage_log.events()
        }
        assert owners == {("guild", "g1")}


async def test_channel_instructions_wait_for_the_disclosure_too(database_url, tmp_path) -> None:
    from gigi_core.llm.channel_policy import Place

    async with _keyed(database_url, tmp_path) as (kernel, member_srv, _):
        await kernel.llm.set_policy("g1", personal_keys="guild-allowed")
        await kernel.llm.places.set_place(
            "g1", Place("channel", "c1"), prompt="Launch is on May 3."
        )
        rt = AgentRuntime(kernel)
        member_srv.reply_text("without them")
        reply = await rt.handle(ask(context="none", places=(Place("channel", "c1"),)))
        assert reply.text == "without them" and reply.disclosure is not None
        assert "Launch is on May 3." not in sent(member_srv)  # the admins' words are guild context

        assert await kernel.llm.personal.acknowledge("g1", "u1")
        member_srv.reply_text("with them")
        again = await rt.handle(ask(context="none", places=(Place("channel", "c1"),)))
        assert again.text == "with them" and "Launch is on May 3." in sent(member_srv)


async def test_a_picture_follows_the_places_policy_and_a_slash_dm_is_a_dm(
    database_url, tmp_path
) -> None:
    from gigi_core.agent.vision import AttachedImage
    from gigi_core.llm.channel_policy import Place
    from gigi_core.testing.fake_providers import png_bytes

    picture = AttachedImage("a1", "image/png", 70, 2, 2, png_bytes())
    async with _keyed(database_url, tmp_path, guild=True) as (kernel, member_srv, guild_srv):
        for owner, label in (("user:u1", "mine"), ("guild:g1", "k")):
            await kernel.llm.set_profile(owner, "vision", label, "v-model", params={"images": True})
        channel = Place("channel", "c1")
        await kernel.llm.places.set_place("g1", channel, purpose="vision", model="v-channel")
        guild_srv.reply_text("seen in the thread")
        thread = (Place("thread", "t1"), channel)
        reply = await AgentRuntime(kernel).handle(
            ask(images=(picture,), places=thread, context="none")
        )
        assert reply.text == "seen in the thread"
        assert guild_srv.requests_to("chat")[-1].json["model"] == "v-channel"  # the channel's

        # `/ask image:` in a DM arrives as a slash command in the DM's guild: the member's key
        member_srv.reply_text("seen in the DM")
        dm = ask(kind="slash", guild="dm:u1", images=(picture,), context="none")
        assert (await AgentRuntime(kernel).handle(dm)).text == "seen in the DM"
