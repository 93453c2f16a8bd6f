"""Resolution: which owner pays, in which order, and never a silent switch between owners."""

from __future__ import annotations

import pytest

from gigi_core.llm import ProviderError
from gigi_core.llm.records import CredentialUnusable, LlmConfigError, NothingToResolve, Owner
from gigi_core.policy.actor import Actor
from gigi_core.testing.fake_providers import FakeOpenAI
from tests.llm.service_helpers import GUILD_KEY, TENANT_KEY, USER_KEY, closed_port, llm_kernel

HI = [{"role": "user", "content": "hi"}]


def sqlite(tmp_path) -> str:
    return f"sqlite+aiosqlite:///{tmp_path / 'r.db'}"


async def _setup(llm, owner: str, key: str, url: str, model: str, **kw) -> None:
    await llm.add_credential(owner, "openai-compatible", "k", key, base_url=url)
    await llm.set_profile(owner, "chat", "k", model, **kw)


async def test_resolution_order_and_switches(database_url, tmp_path, monkeypatch) -> None:
    url = "http://127.0.0.1:9/v1"  # never called here
    async with llm_kernel(tmp_path, database_url) as kernel:
        llm = kernel.llm
        await _setup(llm, "tenant", TENANT_KEY, url, "tenant-model")
        await _setup(llm, "user:u1", USER_KEY, url, "user-model")

        # Nothing for the guild, tenant fallback off, personal keys off: nothing resolves.
        with pytest.raises(NothingToResolve):
            await llm.resolve("g1", "chat", "u1")

        # Tenant fallback on through the guild policy flag...
        await llm.set_policy("g1", tenant_fallback=True)
        assert (await llm.resolve("g1", "chat", "u1")).owner == Owner.tenant()
        with pytest.raises(NothingToResolve):  # ...for that guild only
            await llm.resolve("g2", "chat", "u1")
        # ...or for every guild through the environment.
        monkeypatch.setenv("GIGI_TENANT_FALLBACK", "1")
        assert (await llm.resolve("g2", "chat", "u1")).model == "tenant-model"
        monkeypatch.delenv("GIGI_TENANT_FALLBACK")

        # Personal keys: dm-only applies in DMs only; guild-allowed everywhere in the guild.
        await llm.set_policy("g1", personal_keys="dm-only")
        assert (await llm.resolve("g1", "chat", "u1")).owner == Owner.tenant()
        assert (await llm.resolve("g1", "chat", Actor("u1"), dm=True)).owner == Owner.user("u1")
        assert (await llm.resolve("g1", "chat", "u2", dm=True)).owner == Owner.tenant()
        await llm.set_policy("g1", personal_keys="guild-allowed")
        assert (await llm.resolve("g1", "chat", "u1")).owner == Owner.user("u1")
        assert (await llm.resolve("g1", "chat", "u1", billing="server")).owner == Owner.tenant()

        # The guild's own profile comes first once it exists.
        await _setup(llm, "guild:g1", GUILD_KEY, url, "guild-model")
        chosen = await llm.resolve("g1", "chat", "u1")
        assert (chosen.owner, chosen.model, chosen.credential_label) == (
            Owner.guild("g1"),
            "guild-model",
            "k",
        )
        assert (await llm.resolve("g1", "chat", "u1", billing="me")).owner == Owner.user("u1")

        await llm.set_policy("g1", personal_keys="off")
        with pytest.raises(LlmConfigError, match="personal keys are not allowed in guild g1"):
            await llm.resolve("g1", "chat", "u1", billing="me")
        assert (await llm.policy("g1")).as_dict() == {
            "guild_id": "g1",
            "personal_keys": "off",
            "tenant_fallback": True,
        }
        assert (await llm.policy("g9")).personal_keys == "off"  # default without a row


async def test_nothing_to_resolve_tells_an_admin_what_to_run(tmp_path) -> None:
    async with llm_kernel(tmp_path, sqlite(tmp_path)) as kernel:
        with pytest.raises(NothingToResolve) as info:
            await kernel.llm.chat(HI, guild_id="g7", actor="u1", purpose="reasoning")
        text = str(info.value)
        # reasoning falls back to respond, then chat: the hint names the purpose every call needs
        assert "no chat model is configured for guild g7" in text
        assert "asked for reasoning, then respond" in text
        assert "gigi llm credential add --owner guild:g7" in text
        assert "gigi llm profile set --owner guild:g7 --purpose chat" in text
        assert "tenant fallback: off" in text and "personal keys: off" in text
        assert await kernel.llm.usage_log.events() == []  # no call, no usage row


async def test_failed_guild_key_never_uses_the_tenant_key(database_url, tmp_path) -> None:
    async with (
        llm_kernel(tmp_path, database_url) as kernel,
        FakeOpenAI(api_key="sk-valid-elsewhere") as guild_srv,
        FakeOpenAI(api_key=TENANT_KEY) as tenant_srv,
    ):
        llm = kernel.llm
        await _setup(llm, "guild:g1", GUILD_KEY, guild_srv.base_url, "g-model", fallback_model="g2")
        await _setup(llm, "tenant", TENANT_KEY, tenant_srv.base_url, "t-model")
        await llm.set_policy("g1", tenant_fallback=True)
        for _ in range(2):  # also once the guild key is marked failing
            with pytest.raises(ProviderError) as info:
                await llm.chat(HI, guild_id="g1", actor="u1", channel_id="c1")
            assert info.value.error_class == "auth"
        assert tenant_srv.requests == []
        assert len(guild_srv.requests) == 2  # no fallback model on an auth error either
        [cred] = await llm.list_credentials("guild:g1")
        assert cred.status == "failing"
        events = await llm.usage_log.events()
        assert {(e["billing_owner_type"], e["status"], e["error_class"]) for e in events} == {
            ("guild", "error", "auth")
        }


async def test_failed_tenant_or_personal_key_never_uses_another_owner(
    database_url, tmp_path
) -> None:
    async with (
        llm_kernel(tmp_path, database_url) as kernel,
        FakeOpenAI(api_key="sk-nobody-has-this") as bad,
        FakeOpenAI(api_key=GUILD_KEY) as good,
    ):
        llm = kernel.llm
        await _setup(llm, "tenant", TENANT_KEY, bad.base_url, "t-model")
        await _setup(llm, "user:u1", USER_KEY, bad.base_url, "u-model")
        await _setup(llm, "guild:g2", GUILD_KEY, good.base_url, "other-guild")
        await llm.set_policy("g1", tenant_fallback=True, personal_keys="dm-only")
        with pytest.raises(ProviderError):  # g1 has no profile: the tenant's key, which fails
            await llm.chat(HI, guild_id="g1", actor="u2")
        with pytest.raises(ProviderError):  # the user's own key, which fails
            await llm.chat(HI, guild_id="g1", actor="u1", dm=True, billing="me")
        assert good.requests == []
        owners = [(e["billing_owner_type"], e["model"]) for e in await llm.usage_log.events()]
        assert sorted(owners) == [("tenant", "t-model"), ("user", "u-model")]


async def test_revoked_guild_credential_is_an_error_not_a_switch(tmp_path) -> None:
    async with llm_kernel(tmp_path, sqlite(tmp_path)) as kernel:
        llm = kernel.llm
        await _setup(llm, "guild:g1", GUILD_KEY, "http://127.0.0.1:9/v1", "g-model")
        await _setup(llm, "tenant", TENANT_KEY, "http://127.0.0.1:9/v1", "t-model")
        await llm.set_policy("g1", tenant_fallback=True)
        assert await llm.revoke_credential("guild:g1", "k") == ["chat"]
        with pytest.raises(CredentialUnusable, match="revoked"):
            await llm.resolve("g1", "chat", "u1")


async def test_profile_uses_only_the_same_owners_credential(tmp_path) -> None:
    async with llm_kernel(tmp_path, sqlite(tmp_path)) as kernel:
        llm = kernel.llm
        await llm.add_credential("tenant", "openai", "ops", TENANT_KEY)
        with pytest.raises(LlmConfigError, match="guild:g1 has no active credential"):
            await llm.set_profile("guild:g1", "chat", "ops", "gpt-x")
        with pytest.raises(LlmConfigError, match="unknown purpose"):
            await llm.set_profile("tenant", "dreaming", "ops", "gpt-x")
        with pytest.raises(LlmConfigError, match="invalid owner"):
            await llm.set_profile("guild", "chat", "ops", "gpt-x")


async def test_fallback_model_runs_on_the_same_credential(database_url, tmp_path) -> None:
    async with llm_kernel(tmp_path, database_url) as kernel, FakeOpenAI(api_key=GUILD_KEY) as fake:
        llm = kernel.llm
        await _setup(llm, "guild:g1", GUILD_KEY, fake.base_url, "new-model", fallback_model="old")
        fake.reply_error(404, "The model `new-model` does not exist.")
        fake.reply_text("from the fallback")
        reply = await llm.chat(HI, guild_id="g1", actor="u1", request_id="req-1")
        assert reply.text == "from the fallback"
        assert [r.json["model"] for r in fake.requests] == ["new-model", "old"]
        assert {r.headers["authorization"] for r in fake.requests} == {f"Bearer {GUILD_KEY}"}
        events = sorted(await llm.usage_log.events(), key=lambda e: e["id"])
        assert [(e["model"], e["status"], e["error_class"]) for e in events] == [
            ("new-model", "error", "not_found"),
            ("old", "ok", None),
        ]
        assert {e["request_id"] for e in events} == {"req-1"}


async def test_rejected_model_surfaces_the_providers_words(database_url, tmp_path) -> None:
    said = "The model `gpt-nope` does not exist or you do not have access to it."
    async with llm_kernel(tmp_path, database_url) as kernel, FakeOpenAI(api_key=GUILD_KEY) as fake:
        llm = kernel.llm
        await _setup(llm, "guild:g1", GUILD_KEY, fake.base_url, "gpt-nope")
        fake.reply_error(400, said, code="model_not_found")
        with pytest.raises(ProviderError) as info:
            await llm.chat(HI, guild_id="g1", actor="u1")
        assert info.value.provider_message == said and said in str(info.value)
        [cred] = await llm.list_credentials("guild:g1")
        assert cred.status == "active"  # a bad model is not a bad key


async def test_unreachable_host_is_a_network_error_with_a_usage_row(tmp_path) -> None:
    async with llm_kernel(tmp_path, sqlite(tmp_path)) as kernel:
        llm = kernel.llm
        url = f"http://127.0.0.1:{closed_port()}/v1"
        await _setup(llm, "guild:g1", GUILD_KEY, url, "m", fallback_model="m2")
        with pytest.raises(ProviderError) as info:
            await llm.chat(HI, guild_id="g1", actor="u1")
        assert info.value.error_class == "network"
        [event] = await llm.usage_log.events()
        assert (event["status"], event["error_class"], event["model"]) == ("error", "network", "m")
        assert event["latency_ms"] is not None
