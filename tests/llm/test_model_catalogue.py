"""Model discovery (issue 30): ``kernel.llm.list_models`` asks the credential's provider
through its models endpoint (wire-level fakes), caches per key, forgets on rotation and
revocation; a profile naming an unlisted model is warned about, never refused."""

from __future__ import annotations

import pytest

from gigi_core.llm import ChatRequest, ChatResponse, Provider, ProviderError
from gigi_core.llm.records import LlmConfigError, Owner
from gigi_core.testing.fake_providers import FakeOpenAI
from tests.llm.service_helpers import llm_kernel

OWNER = "guild:g1"
KEY = "sk-models-0123456789"
NEW_KEY = "sk-models-NEW-987654321"


class NoListing(Provider):
    """A provider plugin that implements only chat: the port's default answers listings."""

    name = "no-listing"

    async def chat(
        self, request: ChatRequest, *, api_key: str, base_url: str | None = None
    ) -> ChatResponse:
        raise AssertionError("not called")


async def test_the_port_default_says_listing_is_unsupported() -> None:
    with pytest.raises(ProviderError) as caught:
        await NoListing().list_models(api_key="k")
    assert (caught.value.error_class, caught.value.provider) == ("unsupported", "no-listing")
    assert "model listing" in str(caught.value)


async def test_listing_is_cached_per_key_and_refreshed_on_rotation(database_url, tmp_path) -> None:
    async with llm_kernel(tmp_path, database_url) as kernel, FakeOpenAI(api_key=KEY) as fake:
        llm = kernel.llm
        await llm.add_credential(OWNER, "openai-compatible", "main", KEY, base_url=fake.base_url)
        fake.models = ["m-b", "m-a"]
        first = await llm.list_models(OWNER, "main")
        assert [m.id for m in first.models] == ["m-a", "m-b"] and not first.cached
        again = await llm.list_models(OWNER, "openai-compatible")  # by provider name
        assert again.cached and again.label == "main"
        assert len(fake.requests_to("models")) == 1
        fake.models = ["m-a", "m-b", "m-c"]
        fresh = await llm.list_models(OWNER, "main", refresh=True)
        assert [m.id for m in fresh.models] == ["m-a", "m-b", "m-c"]
        fake.api_key = NEW_KEY
        await llm.rotate_credential(OWNER, "main", NEW_KEY)
        rotated = await llm.list_models(OWNER, "main")
        assert not rotated.cached
        assert fake.requests_to("models")[-1].headers["authorization"] == f"Bearer {NEW_KEY}"
        await llm.revoke_credential(OWNER, "main")
        with pytest.raises(LlmConfigError, match="no active credential labelled 'main'"):
            await llm.list_models(OWNER, "main")


async def test_a_key_revoked_elsewhere_is_refused_with_a_listing_cached(
    database_url, tmp_path
) -> None:
    async with llm_kernel(tmp_path, database_url) as kernel, FakeOpenAI(api_key=KEY) as fake:
        llm = kernel.llm
        await llm.add_credential(OWNER, "openai-compatible", "main", KEY, base_url=fake.base_url)
        await llm.list_models(OWNER, "main")
        # another process revokes it: this one's listing is still in memory
        await llm.credentials.revoke_returning_id(Owner.parse(OWNER), "main")
        llm.cache.clear()  # what the change feed (or the cache TTL) does here
        with pytest.raises(LlmConfigError, match="no active credential labelled 'main'"):
            await llm.list_models(OWNER, "main")
        assert len(fake.requests_to("models")) == 1


async def test_naming_what_to_list_wrongly_says_what_exists(database_url, tmp_path) -> None:
    async with llm_kernel(tmp_path, database_url) as kernel, FakeOpenAI(api_key=KEY) as fake:
        llm = kernel.llm
        for label in ("one", "two"):
            await llm.add_credential(OWNER, "openai-compatible", label, KEY, base_url=fake.base_url)
        with pytest.raises(LlmConfigError) as caught:
            await llm.list_models(OWNER, "openai-compatible")
        assert "2 credentials for openai-compatible" in str(caught.value)
        assert "one, two" in (caught.value.hint or "")
        with pytest.raises(LlmConfigError, match=r"its credentials: one, two"):
            await llm.list_models(OWNER, "nope")


async def test_a_profile_with_an_unlisted_model_is_warned_not_refused(
    database_url, tmp_path
) -> None:
    async with llm_kernel(tmp_path, database_url) as kernel, FakeOpenAI(api_key=KEY) as fake:
        llm = kernel.llm
        await llm.add_credential(OWNER, "openai-compatible", "main", KEY, base_url=fake.base_url)
        fake.models = ["gpt-4o"]
        # nothing listed yet: no warning, and no call to the provider to find out
        assert await llm.model_warning(OWNER, "main", "gpt-5-preview") is None
        assert fake.requests == []
        await llm.list_models(OWNER, "main")
        await llm.set_profile(OWNER, "chat", "main", "gpt-5-preview")
        warning = await llm.model_warning(OWNER, "main", "gpt-5-preview")
        assert warning is not None
        assert "'gpt-5-preview' is not among the 1 models credential 'main'" in warning
        assert "gigi llm models --owner guild:g1 --credential main" in warning
        assert await llm.model_warning(OWNER, "main", "gpt-4o") is None
        assert await llm.model_warning(OWNER, "nope", "gpt-4o") is None


async def test_another_process_reads_the_stored_listing(database_url, tmp_path) -> None:
    async with llm_kernel(tmp_path, database_url) as kernel, FakeOpenAI(api_key=KEY) as fake:
        llm = kernel.llm
        await llm.add_credential(OWNER, "openai-compatible", "main", KEY, base_url=fake.base_url)
        fake.models = ["m-a"]
        await llm.list_models(OWNER, "main")
        llm.catalogue.forget()  # as a fresh process (the CLI) starts: nothing in memory
        shared = await llm.list_models(OWNER, "main")
        assert shared.cached and [m.id for m in shared.models] == ["m-a"]
        assert len(fake.requests_to("models")) == 1
        llm.catalogue.forget()
        llm.catalogue.ttl = 0.0  # expired everywhere: fetched again
        assert not (await llm.list_models(OWNER, "main")).cached
        assert len(fake.requests_to("models")) == 2
