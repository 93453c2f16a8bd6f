"""A run billed to a member's own key before they confirmed the disclosure: no guild
context reaches their provider by any path (the tools the model may call, which read the
guild; a model call of another purpose resolved later in the run). Both backends;
wire-level fake providers on loopback."""

from __future__ import annotations

from gigi_core import Actor
from gigi_core.agent import Request
from gigi_core.agent.runtime import AgentRuntime
from gigi_core.testing import open_test_kernel
from gigi_core.testing.fake_providers import FakeOpenAI
from gigi_core.testing.fake_providers.common import FakeToolCall
from tests.llm.service_helpers import GUILD_KEY, USER_KEY
from tests.toolbox import Toolbox

MEMBER = Actor("u1")


def ask(kind: str = "mention", **kw) -> Request:
    return Request(actor=MEMBER, guild_id="g1", channel_id="c1", kind=kind, text="hi", **kw)


async def test_no_guild_tools_before_the_disclosure(database_url, tmp_path) -> None:
    box = Toolbox(tmp_path)
    async with (
        open_test_kernel(
            tmp_path, plugins=["openai"], extra_plugins=[("box", box)], database_url=database_url
        ) as kernel,
        FakeOpenAI(api_key=USER_KEY) as member_srv,
    ):
        await kernel.enable_plugin("g1", "box")
        await kernel.llm.personal.add(
            "u1", "openai-compatible", "mine", USER_KEY, base_url=member_srv.base_url, model="m"
        )
        await kernel.llm.set_policy("g1", personal_keys="guild-allowed")
        rt = AgentRuntime(kernel)
        member_srv.reply_tool_calls(FakeToolCall("box__echo", {"text": "guild data"}))
        member_srv.reply_text("done")
        reply = await rt.handle(ask(context="none"))
        first = member_srv.requests_to("chat")[0].json
        assert not first.get("tools"), "guild tools were offered to the member's provider"
        assert box.ran == []
        assert reply.disclosure is not None  # the reply says what was left out

        await kernel.llm.personal.acknowledge("g1", "u1")
        member_srv.reply_text("with tools")
        await rt.handle(ask(context="none"))
        assert member_srv.requests_to("chat")[-1].json.get("tools")


async def test_a_run_the_server_pays_never_moves_to_the_members_key(database_url, tmp_path) -> None:
    """The guild answers ``respond`` only; planning (``reasoning``) and pictures (``vision``)
    would, under ``auto``, find the member's ``chat`` profile: the run stays the server's."""
    from gigi_core.agent.vision import AttachedImage
    from gigi_core.testing.fake_providers import png_bytes

    picture = AttachedImage("a1", "image/png", 70, 2, 2, png_bytes())
    async with (
        open_test_kernel(tmp_path, plugins=["openai"], database_url=database_url) as kernel,
        FakeOpenAI(api_key=USER_KEY) as member_srv,
        FakeOpenAI(api_key=GUILD_KEY) as guild_srv,
    ):
        await kernel.llm.personal.add(
            "u1", "openai-compatible", "mine", USER_KEY, base_url=member_srv.base_url, model="m"
        )
        await kernel.llm.set_profile("user:u1", "vision", "mine", "m", params={"images": True})
        await kernel.llm.add_credential(
            "guild:g1", "openai-compatible", "k", GUILD_KEY, base_url=guild_srv.base_url
        )
        await kernel.llm.set_profile("guild:g1", "respond", "k", "g-model")
        await kernel.llm.set_policy("g1", personal_keys="guild-allowed")
        member_srv.reply_text("member's provider")
        guild_srv.reply_text("server's provider")
        reply = await AgentRuntime(kernel).handle(ask(images=(picture,)))
        assert member_srv.requests == [], "the server's run reached the member's provider"
        assert reply.disclosure is None


async def test_a_personas_channel_history_waits_for_the_disclosure(database_url, tmp_path) -> None:
    """A persona's history (the ambient voice passes the channel's recent messages: other
    members' words) is guild context like any other. Ambient runs themselves are always
    billed to the server (test_personal_billing); a persona on a member's own request is
    held to the disclosure here."""
    from gigi_core.agent.contracts import Persona
    from gigi_core.llm import UserMessage

    said = UserMessage(content="another member: the launch code is TANGERINE")
    persona = Persona(system="You are the ambient voice.", history=(said,))
    async with (
        open_test_kernel(tmp_path, plugins=["openai"], database_url=database_url) as kernel,
        FakeOpenAI(api_key=USER_KEY) as member_srv,
    ):
        await kernel.llm.personal.add(
            "u1", "openai-compatible", "mine", USER_KEY, base_url=member_srv.base_url, model="m"
        )
        await kernel.llm.set_policy("g1", personal_keys="guild-allowed")
        rt = AgentRuntime(kernel)
        member_srv.reply_text("no idea")
        reply = await rt.handle(ask(kind="mention", context="none", persona=persona))
        assert "TANGERINE" not in str(member_srv.requests_to("chat")[-1].json["messages"])
        assert reply.disclosure is not None

        await kernel.llm.personal.acknowledge("g1", "u1")
        member_srv.reply_text("now I see it")
        await rt.handle(ask(kind="mention", context="none", persona=persona))
        assert "TANGERINE" in str(member_srv.requests_to("chat")[-1].json["messages"])


async def test_the_decision_reads_the_places_policy_like_the_call(database_url, tmp_path) -> None:
    """A channel policy makes ``respond`` use the guild's ``summarise`` profile there: the
    guild answers (and its context is gathered), as the model call itself would decide."""
    from gigi_core.llm.channel_policy import Place

    async with (
        open_test_kernel(tmp_path, plugins=["openai"], database_url=database_url) as kernel,
        FakeOpenAI(api_key=USER_KEY) as member_srv,
        FakeOpenAI(api_key=GUILD_KEY) as guild_srv,
    ):
        await kernel.llm.personal.add(
            "u1", "openai-compatible", "mine", USER_KEY, base_url=member_srv.base_url, model="m"
        )
        await kernel.llm.add_credential(
            "guild:g1", "openai-compatible", "k", GUILD_KEY, base_url=guild_srv.base_url
        )
        await kernel.llm.set_profile("guild:g1", "summarise", "k", "g-model")
        await kernel.llm.places.set_place(
            "g1", Place("channel", "c1"), purpose="respond", profile="summarise"
        )
        await kernel.llm.set_policy("g1", personal_keys="guild-allowed")
        guild_srv.reply_text("the server answers here", times=2)
        reply = await AgentRuntime(kernel).handle(ask(places=(Place("channel", "c1"),)))
        assert reply.text == "the server answers here" and reply.disclosure is None
        assert member_srv.requests == []
