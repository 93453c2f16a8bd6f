"""`/llm key ...` (a member's own key, no capability needed, in a server or a DM), `/llm
policy personal-keys` (admins), `/ask billing:` remembered per member and server, and the
disclosure button before a member's key first carries the server's context (issue 30).
The real LLM path against the wire-level fake provider; SimCord drives discord.py."""

from __future__ import annotations

import pytest
from discord_test_helpers import leaks
from discord_world import world

from gigi_core.testing.fake_providers import FakeOpenAI

KEY = "sk-member-CANARY-5c7e9a1b3d"


@pytest.fixture(autouse=True)
def _local_fake(monkeypatch) -> None:
    """The wire-level fake listens on loopback, which members may use only when allowed."""
    monkeypatch.setenv("GIGI_PERSONAL_KEY_LOCAL_URLS", "1")


def _text(result) -> str:
    return result.followups[-1].content if result.followups else result.response.content


def _buttons(message) -> list[dict]:
    return [c for row in message.components for c in row.to_dict()["components"]]


async def _add_key(who, where, fake, model: str | None = "m-1"):
    """``/llm key add`` in ``where`` (a channel, or None for the member's DM with Gigi)."""
    options = {"provider": "openai-compatible", "label": "mine", "base_url": fake.base_url}
    if model:
        options["model"] = model
    if where is None:
        shown = await who.user.slash("llm key add", **options)
    else:
        shown = await who.slash(where, "llm key add", **options)
    assert shown.modal is not None and KEY not in repr(shown.modal)
    [field] = [c for row in shown.modal["components"] for c in row["components"]]
    assert not field.get("value")  # never pre-filled
    submit = who.user.submit_modal if where is None else who.submit_modal
    return await submit(shown, {"gigi:llm:key": KEY})


async def test_a_member_manages_their_own_key_without_any_capability(tmp_path) -> None:
    async with world(tmp_path, plugins=["openai"]) as w, FakeOpenAI(api_key=KEY) as fake:
        llm = w.kernel.llm
        done = await _add_key(w.member, w.channel, fake, model=None)
        [cred] = await llm.list_credentials(f"user:{w.member.id}")
        assert done.ephemeral and done.response.content == (
            f"Saved your key **mine** for openai-compatible (fingerprint …"
            f"{cred.fingerprint_suffix}). Next, choose its model with `/llm key prefer label:mine`."
        )
        assert await llm.list_credentials(f"guild:{w.gid}") == []  # not the server's
        again = await w.member.slash(w.channel, "llm key add", provider="openai", label="mine")
        assert again.modal is None and "already have a key labelled **mine**" in _text(again)

        prefer = await w.member.slash(w.channel, "llm key prefer", label="mine", model="m-1")
        assert "Your key **mine** now answers for you with m-1" in _text(prefer)
        fake.reply_text("OK")
        tested = await w.member.slash(w.channel, "llm key test", label="mine")
        assert "**mine** works with m-1" in _text(tested)
        assert fake.requests[-1].headers["authorization"] == f"Bearer {KEY}"
        listed = await w.member.slash(w.channel, "llm key list")
        assert listed.ephemeral
        assert f"**mine** — openai-compatible, fingerprint …{cred.fingerprint_suffix}" in (
            _text(listed)
        )
        assert "answers for you" in _text(listed)
        # the label autocomplete lists only the member's own keys
        await llm.add_credential(
            f"guild:{w.gid}", "openai-compatible", "server-key", "sk-server-123456",
            base_url=fake.base_url,
        )  # fmt: skip
        offered = await w.member.autocomplete(w.channel, "llm key remove", "label", "")
        assert [c["value"] for c in offered] == ["mine"]

        # Holding a key grants nothing: the server's own keys stay out of reach.
        refused = await w.member.slash(w.channel, "llm credential list")
        assert refused.ephemeral and "Not allowed" in _text(refused)

        gone = await w.member.slash(w.channel, "llm key remove", label="mine")
        assert "Removed your key **mine**; the sealed key is destroyed." in _text(gone)
        assert await llm.list_credentials(f"user:{w.member.id}") == []
        assert "You have no keys yet" in _text(await w.member.slash(w.channel, "llm key list"))
        assert await leaks(w.kernel, KEY) == []
        assert all(KEY not in repr(r.json) for r in w.env.http_requests)


async def test_a_dm_answers_with_the_members_key_on_a_fresh_install(tmp_path) -> None:
    async with world(tmp_path, plugins=["openai"]) as w, FakeOpenAI(api_key=KEY) as fake:
        done = await _add_key(w.member, None, fake)  # added from the DM itself
        assert "It answers for you with m-1" in done.response.content
        fake.reply_text("Hello from your own key.")
        await w.member.send_dm("hi there")
        dm = w.member.user.dm_channel
        [answer] = [m for m in dm.history() if m.author.id == w.bot.user.id]
        assert answer.content.startswith("Hello from your own key.")
        assert "left out" not in answer.content  # nothing of a server to disclose in a DM
        assert fake.requests_to("chat")[0].headers["authorization"] == f"Bearer {KEY}"
        [event] = await w.kernel.llm.usage_log.events()
        assert (event["billing_owner_type"], event["billing_owner_id"]) == (
            "user",
            str(w.member.id),
        )


async def test_only_admins_set_the_personal_keys_policy(tmp_path) -> None:
    async with world(tmp_path, plugins=["openai"]) as w:
        refused = await w.member.slash(w.channel, "llm policy personal-keys", value="guild-allowed")
        assert refused.ephemeral and "llm.provider.write" in _text(refused)
        assert (await w.kernel.llm.policy(w.gid)).personal_keys == "off"
        done = await w.admin.slash(w.channel, "llm policy personal-keys", value="guild-allowed")
        assert "Personal keys: **guild-allowed**" in _text(done)
        assert (await w.kernel.llm.policy(w.gid)).personal_keys == "guild-allowed"
        in_dm = await w.admin.user.slash("llm policy personal-keys", value="off")
        assert "only works in a server" in _text(in_dm)


async def test_ask_billing_me_is_remembered_and_refused_where_not_allowed(tmp_path) -> None:
    async with (
        world(tmp_path, plugins=["openai"]) as w,
        FakeOpenAI(api_key=KEY) as mine,
        FakeOpenAI(api_key="sk-server-123456") as servers,
    ):
        llm = w.kernel.llm
        await _add_key(w.member, w.channel, mine)
        await llm.add_credential(
            f"guild:{w.gid}", "openai-compatible", "k", "sk-server-123456",
            base_url=servers.base_url,
        )  # fmt: skip
        await llm.set_profile(f"guild:{w.gid}", "chat", "k", "s-1")

        off = await w.member.slash(w.channel, "ask", question="hi", billing="me")
        assert off.ephemeral and "personal keys: off" in _text(off)
        assert "/llm policy personal-keys value:guild-allowed" in _text(off)
        assert await llm.personal.billing(w.gid, str(w.member.id)) is None  # not remembered

        await llm.set_policy(w.gid, personal_keys="guild-allowed")
        mine.reply_text("paid by you")
        paid = await w.member.slash(w.channel, "ask", question="hi", billing="me")
        assert "paid by you" in _text(paid)
        assert await llm.personal.billing(w.gid, str(w.member.id)) == "me"
        # a mention later is billed the same way, without asking again
        mine.reply_text("still you")
        [said] = await w.mention(w.member, "and now?")
        assert said.content.startswith("still you")
        assert servers.requests_to("chat") == []
        servers.reply_text("the server pays")
        back = await w.member.slash(w.channel, "ask", question="hi", billing="server")
        assert "the server pays" in _text(back)
        assert await llm.personal.billing(w.gid, str(w.member.id)) == "server"


async def test_server_context_waits_for_the_members_disclosure(tmp_path) -> None:
    async with world(tmp_path, plugins=["openai"]) as w, FakeOpenAI(api_key=KEY) as fake:
        llm = w.kernel.llm
        await llm.set_policy(w.gid, personal_keys="guild-allowed")
        await _add_key(w.member, w.channel, fake)
        await w.admin.send(w.channel, "the launch code is TANGERINE")
        fake.reply_text("answered without it")
        first = await w.member.slash(
            w.channel, "ask", question="what is the code?", context="channel", billing="me"
        )
        assert "TANGERINE" not in str(fake.requests_to("chat")[-1].json)
        assert "answered without it" in _text(first)
        message = w.bot_messages()[-1]
        assert "the server's context (memory, knowledge, channel history) was left out" in (
            message.content
        )
        [button] = _buttons(message)
        assert button["custom_id"] == f"gigi:d:{w.member.id}:{w.gid}"

        stranger = w.guild.add_member(w.env.create_user("eve"))
        nope = await stranger.click(message, label=button["label"])
        assert nope.ephemeral and "Only the member this is addressed to" in _text(nope)
        assert not await llm.personal.acknowledged(w.gid, str(w.member.id))

        shown = await w.member.slash(w.channel, "llm key disclose")
        assert shown.ephemeral and "your openai-compatible account" in _text(shown)
        assert "memory and knowledge entries" in _text(shown)
        ok = await w.member.click(message, label=button["label"])
        assert ok.ephemeral and _text(ok).startswith("Confirmed")
        assert await llm.personal.acknowledged(w.gid, str(w.member.id))
        twice = await w.member.click(message, label=button["label"])
        assert "already confirmed" in _text(twice)

        fake.reply_text("answered with it")
        second = await w.member.slash(
            w.channel, "ask", question="what is the code?", context="channel"
        )
        assert "TANGERINE" in str(fake.requests_to("chat")[-1].json)
        assert "answered with it" in _text(second)
        latest = w.bot_messages()[-1]
        assert "left out" not in latest.content and _buttons(latest) == []


async def test_a_mention_billed_to_the_member_offers_the_button(tmp_path) -> None:
    async with (
        world(tmp_path, plugins=["openai"]) as w,
        FakeOpenAI(api_key=KEY) as mine,
        FakeOpenAI(api_key="sk-server-123456") as servers,
    ):
        llm = w.kernel.llm
        await llm.set_policy(w.gid, personal_keys="guild-allowed")
        await _add_key(w.member, w.channel, mine)
        await llm.add_credential(
            f"guild:{w.gid}", "openai-compatible", "k", "sk-server-123456",
            base_url=servers.base_url,
        )  # fmt: skip
        await llm.set_profile(f"guild:{w.gid}", "chat", "k", "s-1")
        servers.reply_text("the launch code is TANGERINE")
        [answer] = await w.mention(w.admin, "what is the code?")
        await llm.personal.remember_billing(w.gid, str(w.member.id), "me")
        mine.reply_text("I cannot see that here")
        before = len(w.bot_messages())
        await w.member.send(w.channel, f"<@{w.bot.user.id}> what was it?", reply_to=answer)
        [reply] = w.bot_messages()[before:]
        assert reply.content.startswith("I cannot see that here") and "left out" in reply.content
        assert "TANGERINE" not in str(mine.requests_to("chat")[-1].json)
        [button] = _buttons(reply)
        assert button["custom_id"] == f"gigi:d:{w.member.id}:{w.gid}"
        pressed = await w.member.click(reply, label=button["label"])
        assert _text(pressed).startswith("Confirmed")
        mine.reply_text("it was TANGERINE")
        [later] = await w.mention(w.member, "and now?")
        assert later.content.startswith("it was TANGERINE") and _buttons(later) == []
