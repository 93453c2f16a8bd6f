"""Keyless providers (``requires_key = False``) serve purposes no owner configured a profile for."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest

from gigi_core import hookimpl
from gigi_core.llm import (
    ChatRequest,
    ChatResponse,
    EmbeddingRequest,
    EmbeddingResponse,
    Provider,
    ProviderError,
    Supports,
    Usage,
)
from gigi_core.llm.records import NothingToResolve, Owner
from gigi_core.testing import open_test_kernel
from gigi_core.testing.fake_providers import FakeOpenAI
from tests.llm.service_helpers import GUILD_KEY, USER_KEY, leaks

TEXT_CANARY = "EMBED_TEXT_CANARY_5e1d"


class LocalEmbed(Provider):
    """An offline embedder: no key, a default embedding model, records what it was given."""

    name = "local-embed"
    supports = Supports(tools=False, embeddings=True)
    requires_key = False
    default_models: ClassVar[dict[str, str]] = {"embedding": "mini-8"}

    def __init__(self) -> None:
        super().__init__()
        self.keys: list[str] = []
        self.fail: ProviderError | None = None

    async def chat(
        self, request: ChatRequest, *, api_key: str, base_url: str | None = None
    ) -> ChatResponse:
        raise self.unsupported("chat")

    async def embed(
        self, request: EmbeddingRequest, *, api_key: str, base_url: str | None = None
    ) -> EmbeddingResponse:
        self.keys.append(api_key)
        if self.fail is not None:
            raise self.fail
        return EmbeddingResponse(
            provider=self.name,
            model=request.model,
            vectors=[[float(len(t))] * 3 for t in request.inputs],
            dimension=3,
            usage=Usage(input_tokens=len(request.inputs)),
        )


class OtherLocal(LocalEmbed):
    name = "zz-local"
    default_models: ClassVar[dict[str, str]] = {"embedding": "other", "routing": "r-1"}


class LocalPlugin:
    def __init__(self, *providers: Provider) -> None:
        self.providers = providers

    @hookimpl
    def register_providers(self, register: Any) -> None:
        for provider in self.providers:
            register(provider)


def _kernel(tmp_path, database_url, *providers: Provider):
    return open_test_kernel(
        tmp_path,
        plugins=["openai"],
        extra_plugins=[("local", LocalPlugin(*providers))],
        database_url=database_url,
    )


async def test_no_profile_uses_the_keyless_default_and_records_usage(
    database_url, tmp_path
) -> None:
    local = LocalEmbed()
    async with _kernel(tmp_path, database_url, local) as kernel:
        llm = kernel.llm
        result = await llm.embed(
            [f"a {TEXT_CANARY}", "bb"], guild_id="g1", actor=None, billing="server"
        )
        assert result.vectors[1] == [2.0, 2.0, 2.0]
        assert local.keys == [""]  # called with an empty key, no credential needed
        assert await llm.list_credentials() == []
        resolution = await llm.resolve("g1", "embedding", None, billing="server")
        assert (resolution.owner, resolution.provider, resolution.model) == (
            Owner.tenant(),
            "local-embed",
            "mini-8",
        )
        assert resolution.keyless and resolution.credential_id == ""

        [event] = await llm.usage_log.events("g1")
        assert (event["provider"], event["model"], event["purpose"]) == (
            "local-embed",
            "mini-8",
            "embedding",
        )
        assert (event["billing_owner_type"], event["status"], event["input_tokens"]) == (
            "tenant",
            "ok",
            2,
        )
        [row] = await llm.usage("g1")
        assert (row.provider, row.calls, row.input_tokens) == ("local-embed", 1, 2)
        assert await leaks(kernel, TEXT_CANARY) == []

        # A failure is still one usage row, and there is no credential outcome to update.
        local.fail = ProviderError("local-embed", "model file missing", error_class="config")
        with pytest.raises(ProviderError):
            await llm.embed(["x"], guild_id="g1", actor=None, billing="server")
        statuses = sorted(e["status"] for e in await llm.usage_log.events("g1"))
        assert statuses == ["error", "ok"]

        # Purposes the provider does not list still need a profile.
        with pytest.raises(NothingToResolve):
            await llm.resolve("g1", "chat", None, billing="server")


async def test_an_explicit_profile_wins_over_the_keyless_default(database_url, tmp_path) -> None:
    local = LocalEmbed()
    async with (
        _kernel(tmp_path, database_url, local) as kernel,
        FakeOpenAI(api_key=GUILD_KEY) as fake,
    ):
        llm = kernel.llm
        await llm.add_credential(
            "guild:g1", "openai-compatible", "main", GUILD_KEY, base_url=fake.base_url
        )
        await llm.set_profile("guild:g1", "embedding", "main", "embed-1")
        result = await llm.embed(["a"], guild_id="g1", actor=None, billing="server")
        assert result.provider != "local-embed" and local.keys == []
        assert fake.last_request.json["model"] == "embed-1"
        # Another guild without a profile still gets the keyless default.
        assert (await llm.resolve("g2", "embedding", None)).provider == "local-embed"


async def test_server_billing_never_picks_a_personal_credential(database_url, tmp_path) -> None:
    local = LocalEmbed()
    async with _kernel(tmp_path, database_url, local) as kernel:
        llm = kernel.llm
        await llm.add_credential(
            "user:u1", "openai-compatible", "mine", USER_KEY, base_url="http://127.0.0.1:9/v1"
        )
        await llm.set_profile("user:u1", "embedding", "mine", "user-embed")
        await llm.set_policy("g1", personal_keys="guild-allowed")
        # auto: the member's own profile is a permitted owner and wins over the default.
        assert (await llm.resolve("g1", "embedding", "u1")).owner == Owner.user("u1")
        # server: the personal profile is not a permitted owner; the keyless default serves.
        chosen = await llm.resolve("g1", "embedding", "u1", billing="server")
        assert (chosen.owner, chosen.provider) == (Owner.tenant(), "local-embed")
        await llm.embed(["a"], guild_id="g1", actor="u1", billing="server")
        assert local.keys == [""]
        [event] = await llm.usage_log.events("g1")
        assert (event["billing_owner_type"], event["provider"]) == ("tenant", "local-embed")
        # me: only the member's own key; never the keyless default instead.
        await llm.set_policy("g2", personal_keys="guild-allowed")
        assert (await llm.resolve("g2", "embedding", "u2", billing="auto")).keyless
        with pytest.raises(NothingToResolve):
            await llm.resolve("g2", "embedding", "u2", billing="me")


async def test_several_keyless_providers_lowest_name_wins(database_url, tmp_path) -> None:
    async with _kernel(tmp_path, database_url, OtherLocal(), LocalEmbed()) as kernel:
        llm = kernel.llm
        assert (await llm.resolve("g1", "embedding", None)).provider == "local-embed"
        routing = await llm.resolve("g1", "routing", None)  # only zz-local lists routing
        assert (routing.provider, routing.model) == ("zz-local", "r-1")
        # A slot with routing as its general purpose is served by the same default.
        slot = await llm.resolve("g1", "query_analyse", None)
        assert (slot.provider, slot.model, slot.purpose) == ("zz-local", "r-1", "routing")
        described = {p["name"]: p for p in llm.describe_providers()}
        assert described["local-embed"]["requires_key"] is False
        assert described["local-embed"]["default_models"] == {"embedding": "mini-8"}
        assert described["openai-compatible"]["requires_key"] is True
        assert described["openai-compatible"]["default_models"] == {}
