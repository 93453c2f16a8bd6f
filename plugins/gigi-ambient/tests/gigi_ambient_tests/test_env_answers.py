"""ENV-01..05, ENV-07..11, ENV-19, ENV-20: the envelope's answer, silence, staff notes, direct
messages, short paths, history, links, channels and the system prompt, end to end through
the real OpenAI provider against the wire-level fake server."""

from __future__ import annotations

import json

from gigi_ambient.envelope import FIELDS
from gigi_ambient.history import Entry, History
from gigi_ambient.prompt import CONTEXT_HEADING

from gigi_ambient_tests.ambient_helpers import GUILD, HERE, envelope
from gigi_core import Actor, hookimpl


async def test_env_01_model_answer_reaches_the_user(world) -> None:
    world.fake.reply_text(envelope(answer="Hi Bob!", answer_needed=True))
    mid = await world.say("hello everyone")
    [post] = world.poster.posts
    assert (post.channel_id, post.text, post.reply_to) == (HERE, "Hi Bob!", mid)
    [body] = world.chat_bodies()
    assert json.loads(body["messages"][-1]["content"])["message"] == "hello everyone"


async def test_env_02_suppressed_answer_stays_silent(world) -> None:
    world.fake.reply_text(envelope(answer="I could say something", answer_needed=False))
    await world.say("just chatting among ourselves")
    assert world.poster.posts == []
    assert (await world.svc.today(GUILD))["silences"] == 1


async def test_env_03_staff_note_forces_delivery(world) -> None:
    await world.kernel.configure_plugin(GUILD, "ambient", {"staff_channel": "900"})
    world.fake.reply_text(envelope(answer="Please be kind.", answer_needed=False, staff="insults"))
    await world.say("you are all idiots")
    here, staff = world.poster.posts
    assert (here.channel_id, here.text) == (HERE, "Please be kind.")
    assert staff.channel_id == "900" and "insults" in staff.text and "<@42>" in staff.text


async def test_staff_note_with_answer_needed_false_and_no_answer_still_reaches_staff(world) -> None:
    await world.kernel.configure_plugin(GUILD, "ambient", {"staff_channel": "900"})
    world.fake.reply_text(envelope(answer=None, answer_needed=False, staff="spam link posted"))
    await world.say("buy cheap coins at example.com")
    [staff] = world.poster.posts
    assert staff.channel_id == "900" and "spam link posted" in staff.text


async def test_a_staff_note_is_never_shown_in_the_public_channel(world) -> None:
    tracked: list[tuple[str, dict]] = []

    class Tracker:
        @hookimpl
        def track_event(self, name, properties, kernel):
            tracked.append((name, properties))

    world.kernel.pm.register(Tracker(), name="tracker")
    world.fake.reply_text(envelope(answer="Please be kind.", answer_needed=True, staff="insults"))
    await world.say("you are all idiots")  # no staff_channel configured
    assert [p.text for p in world.poster.posts] == ["Please be kind."]
    world.poster.forbidden = {"900"}
    await world.kernel.configure_plugin(GUILD, "ambient", {"staff_channel": "900"})
    world.fake.reply_text(envelope(answer=None, answer_needed=False, staff="spam"))
    await world.say("buy now")  # the staff channel refuses the bot
    assert len(world.poster.posts) == 1
    undelivered = [p for n, p in tracked if n == "ambient.staff_undelivered"]
    assert [p["staff_channel"] for p in undelivered] == [None, "900"]
    assert all("insults" not in str(p) and "spam" not in str(p) for p in undelivered)


async def test_env_04_direct_messages_are_always_answered(world) -> None:
    world.fake.reply_text(envelope(answer="Hi!", answer_needed=True))
    await world.say("hello")
    answer_id = world.svc.answered(HERE)[-1]
    world.fake.reply_text(envelope(answer="Yes, you asked me.", answer_needed=False))
    await world.say("did you mean me?", reply_to_id=answer_id)
    assert world.answers() == ["Hi!", "Yes, you asked me."]
    direct = json.loads(world.chat_bodies()[-1]["messages"][-1]["content"])
    assert direct["direct"] is True
    # naming the persona (config ``name``) is direct too
    await world.kernel.configure_plugin(GUILD, "ambient", {"name": "Luma"})
    world.fake.reply_text(envelope(answer="Here!", answer_needed=False))
    await world.say("luma, are you there?")
    assert world.answers()[-1] == "Here!"


async def test_env_05_short_path_rules_skip_the_model(world) -> None:
    await world.kernel.configure_plugin(GUILD, "ambient", {"short_path": [["^2\\d\\d$", "^7$"]]})
    await world.say("noisy bot-like status line", author="7")
    assert world.fake.requests == [] and world.poster.posts == []
    assert [e.text for e in world.svc.history(GUILD).entries] == ["noisy bot-like status line"]
    world.fake.reply_text(envelope(answer=None))
    await world.say("a normal message", author="8")
    assert len(world.fake.requests) == 1  # the rule matched author 7 only
    earlier = world.chat_bodies()[0]["messages"][1]
    assert json.loads(earlier["content"])["message"] == "noisy bot-like status line"


async def test_env_07_history_is_trimmed_to_the_limit(world) -> None:
    await world.kernel.configure_plugin(GUILD, "ambient", {"history_limit": 4})
    for n in range(5):
        world.fake.reply_text(envelope(answer=f"a{n}", answer_needed=True))
        await world.say(f"q{n}")
        assert len(world.svc.history(GUILD)) <= 4
    # before the call too: the last request carried at most limit earlier turns
    last = world.chat_bodies()[-1]["messages"]
    assert len(last) - 2 <= 4  # system + this message + earlier turns
    assert [e.text for e in world.svc.history(GUILD).entries][-2:] == ["q4", "a4"]


async def test_env_08_markdown_links_are_unwrapped(world) -> None:
    text = "See [the docs](https://x.example/docs) and ask @[Ada](https://discord.com/users/1)."
    world.fake.reply_text(envelope(answer=text, answer_needed=True))
    await world.say("where are the docs?")
    assert world.answers() == ["See https://x.example/docs and ask Ada."]


async def test_env_09_missing_channel_falls_back_to_the_message_channel(world) -> None:
    for channel in (None, "", "none", "null"):
        world.fake.reply_text(envelope(answer="here", answer_needed=True, channel=channel))
        await world.say("hi")
    assert {p.channel_id for p in world.poster.posts} == {HERE}


async def test_a_channel_the_author_cannot_see_is_never_answered_in(world) -> None:
    # What the author may read comes from the surface serving the guild (kernel.outbox.member).
    world.poster.members = {"42": (Actor(id="42"), frozenset({HERE, "300", "555"}))}
    world.poster.public = frozenset({HERE})  # everyone reading 300 may read this channel
    world.poster.forbidden = {"555"}
    for channel, expected in (("400", HERE), ("<#300>", "300"), ("555", HERE)):
        world.fake.reply_text(envelope(answer="moved", answer_needed=True, channel=channel))
        await world.say("hi")
        assert world.poster.posts[-1].channel_id == expected  # 400: hidden; 555: bot may not
    world.poster.members = {}  # no longer a member, or no surface can tell
    world.fake.reply_text(envelope(answer="moved", answer_needed=True, channel="300"))
    await world.say("hi")
    assert world.poster.posts[-1].channel_id == HERE  # nobody can tell: the message's channel


async def test_an_answer_never_moves_to_a_channel_whose_readers_cannot_read_its_source(
    world,
) -> None:
    """The answer is written from this channel's history: a private channel's answer stays
    there even when the author (a moderator) may read the channel the model names."""
    world.poster.members = {"42": (Actor(id="42"), frozenset({HERE, "general"}))}
    world.poster.public = frozenset({"general"})  # HERE is private to some members
    world.fake.reply_text(envelope(answer="summary", answer_needed=True, channel="general"))
    await world.say("sum up our talk for everyone")
    assert world.poster.posts[-1].channel_id == HERE


async def test_env_10_dynamic_context_reaches_the_system_prompt(world) -> None:
    world.fake.reply_text(envelope(answer=None))
    await world.say("what day is it?")
    system = world.chat_bodies()[0]["messages"][0]["content"]
    persona, _, context = system.partition(CONTEXT_HEADING)
    assert "Date: 2026-07-13" in context and "Time: 09:30 UTC" in context
    assert "{date}" not in system and "{time}" not in system and "{memory}" not in system
    assert "You are Luma" in persona and "2026" not in persona


async def test_env_20_persona_prefix_is_byte_stable(world) -> None:
    from datetime import UTC, datetime

    world.fake.reply_text(envelope(answer=None))
    await world.say("one")
    world.svc.clock = lambda: datetime(2026, 7, 13, 9, 31, tzinfo=UTC)  # a minute later
    world.fake.reply_text(envelope(answer=None))
    await world.say("two")
    first, second = (json.dumps(b["messages"][0]["content"]).encode() for b in world.chat_bodies())
    cut = first.index(CONTEXT_HEADING.encode())
    assert first[:cut] == second[:cut] and first != second  # same prefix, new time


def test_env_11_per_channel_history_shrink_prefers_busy_channels() -> None:
    history = History()
    for channel, n in (("a", 1), ("b", 1), ("b", 2), ("b", 3), ("b", 4), ("a", 2)):
        history.append(Entry(channel, "user", "u", f"{channel}{n}"))
    history.shrink_by_one(3)  # b has 4 > 3: b's oldest goes, not a1 (the oldest overall)
    assert [e.text for e in history.entries] == ["a1", "b2", "b3", "b4", "a2"]
    history.shrink_by_one(3)  # nobody above 3: the oldest overall
    assert [e.text for e in history.entries] == ["b2", "b3", "b4", "a2"]


async def test_env_19_the_envelope_schema_is_pinned(world) -> None:
    world.fake.reply_text(envelope(answer="hi", answer_needed=True))
    await world.say("hello")
    fmt = world.chat_bodies()[0]["response_format"]
    assert fmt["type"] == "json_schema"
    schema = fmt["json_schema"]
    assert schema["name"] == "envelope" and schema["strict"] is True
    body = schema["schema"]
    assert list(body["properties"]) == list(FIELDS) == [
        "answer", "answer_needed", "channel", "staff", "picture", "picture_count",
        "picture_edit", "hack",
    ]  # fmt: skip
    assert body["required"] == list(FIELDS) and body["additionalProperties"] is False
    nullable = {k for k, v in body["properties"].items() if "null" in v["type"]}
    assert nullable == {"answer", "channel", "staff", "picture", "picture_count"}


async def test_a_mention_is_left_to_the_surface_and_kept_as_history(world) -> None:
    await world.say("@Gigi what is the time?", mentions_bot=True)
    assert world.fake.requests == [] and world.poster.posts == []
    assert [e.text for e in world.svc.history(GUILD).entries] == ["@Gigi what is the time?"]


async def test_the_routing_precheck_saves_the_full_call(world) -> None:
    await world.kernel.configure_plugin(GUILD, "ambient", {"precheck": True, "name": "Luma"})
    await world.kernel.llm.set_profile(f"guild:{GUILD}", "routing", "main", "gpt-router")
    world.fake.reply_text(json.dumps({"answer_needed": False}))
    await world.say("lol")
    assert [b["model"] for b in world.chat_bodies()] == ["gpt-router"]
    assert world.chat_bodies()[0]["response_format"]["json_schema"]["name"] == "precheck"
    assert world.poster.posts == []
    world.fake.reply_text(envelope(answer="Hi!", answer_needed=True))
    await world.say("Luma, hello")  # direct: no pre-check, the full call
    assert [b["model"] for b in world.chat_bodies()] == ["gpt-router", "gpt-main"]
    assert world.answers() == ["Hi!"]
