"""Credentials on both backends: sealed, write-only, labelled, revocable, tested."""

from __future__ import annotations

import logging

import pytest
from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError

from gigi_core.errors import SecretsError
from gigi_core.llm import ProviderError
from gigi_core.llm.records import CredentialUnusable, LlmConfigError, Owner
from gigi_core.store.llm_tables import LlmCredential
from gigi_core.store.sealing import Sealer
from gigi_core.testing.fake_providers import FakeOpenAI
from tests.llm.service_helpers import GUILD_KEY, TENANT_KEY, leaks, llm_kernel

GUILD = Owner.guild("g1")


async def test_secret_only_in_sealed_column_and_never_logged(
    database_url, tmp_path, caplog
) -> None:
    """After adding, using, testing, failing and revoking keys, no table, log or listing shows one."""
    caplog.set_level(logging.DEBUG)
    async with llm_kernel(tmp_path, database_url) as kernel, FakeOpenAI(api_key=GUILD_KEY) as fake:
        llm = kernel.llm
        cred = await llm.add_credential(
            GUILD, "openai-compatible", "main", GUILD_KEY, base_url=fake.base_url, by="admin"
        )
        await llm.add_credential(
            "tenant", "openai-compatible", "ops", TENANT_KEY, base_url=fake.base_url
        )
        await llm.set_profile(GUILD, "chat", "main", "m-1", fallback_model="m-2")
        fake.reply_text("fine")
        await llm.chat([{"role": "user", "content": "hi"}], guild_id="g1", actor="u1")
        fake.reply_text("ok")
        assert (await llm.test_credential(GUILD, "main")).ok
        # The tenant key is wrong for this server: a 401, recorded, key still invisible.
        result = await llm.test_credential("tenant", "ops", model="m-1")
        assert not result.ok and result.error_class == "auth"

        assert fake.requests[0].headers["authorization"] == f"Bearer {GUILD_KEY}"
        async with kernel.db.session() as s:
            row = await s.get(LlmCredential, cred.id)
            assert row.ciphertext and row.nonce and row.key_id
        assert await leaks(kernel, GUILD_KEY, TENANT_KEY) == []

        listings = [c.as_dict() for c in await llm.list_credentials(include_revoked=True)]
        assert GUILD_KEY not in repr(listings) and TENANT_KEY not in repr(listings)
        assert {c["fingerprint_suffix"] for c in listings} and all(
            len(c["fingerprint_suffix"]) == 6 for c in listings
        )

        await llm.revoke_credential(GUILD, "main", by="admin")
        async with kernel.db.session() as s:
            row = await s.get(LlmCredential, cred.id)
            assert row.ciphertext is None and row.status == "revoked"
        assert await leaks(kernel, GUILD_KEY, TENANT_KEY) == []
    logged = caplog.text + "".join(repr(r.args) for r in caplog.records)
    assert GUILD_KEY not in logged and TENANT_KEY not in logged
    assert "llm call provider=openai-compatible" in caplog.text  # the metadata line is there


async def test_missing_secret_key_refuses_and_stores_nothing(database_url, tmp_path) -> None:
    async with llm_kernel(tmp_path, database_url) as kernel:
        kernel.sealer = Sealer(None)  # as if GIGI_SECRET_KEY were unset
        with pytest.raises(SecretsError) as info:
            await kernel.llm.add_credential(GUILD, "openai", "main", GUILD_KEY)
        assert "GIGI_SECRET_KEY" in str(info.value) and GUILD_KEY not in str(info.value)
        async with kernel.db.session() as s:
            assert await s.scalar(select(func.count()).select_from(LlmCredential)) == 0
        assert await leaks(kernel, GUILD_KEY) == []


async def test_labels_unique_among_active_and_reusable_after_revoke(database_url, tmp_path) -> None:
    async with llm_kernel(tmp_path, database_url) as kernel:
        llm = kernel.llm
        await llm.add_credential(GUILD, "openai", "main", "sk-one-111111")
        with pytest.raises(LlmConfigError, match="already has an active credential labelled"):
            await llm.add_credential(GUILD, "openrouter", "main", "sk-two-222222")
        await llm.add_credential("guild:g2", "openai", "main", "sk-three-3333")  # other owner
        await llm.add_credential("user:u1", "openai", "main", "sk-four-44444")
        await llm.revoke_credential(GUILD, "main")
        again = await llm.add_credential(GUILD, "openrouter", "main", "sk-five-55555")
        assert again.provider == "openrouter" and again.status == "active"
        mine = await llm.list_credentials(GUILD, include_revoked=True)
        assert sorted(c.status for c in mine) == ["active", "revoked"]
        assert [c.label for c in await llm.list_credentials(GUILD)] == ["main"]
        with pytest.raises(LlmConfigError, match="no active credential labelled 'gone'"):
            await llm.revoke_credential(GUILD, "gone")


async def test_database_enforces_active_label_uniqueness(database_url, tmp_path) -> None:
    """The partial unique index backs the code check (two writers racing, say)."""

    def row(ident: str, revoked: bool = False) -> LlmCredential:
        from gigi_core.store.tables import utcnow

        return LlmCredential(
            id=ident,
            owner_type="guild",
            owner_id="g1",
            provider="openai",
            label="main",
            fingerprint="f" * 16,
            status="revoked" if revoked else "active",
            revoked_at=utcnow() if revoked else None,
        )

    async with llm_kernel(tmp_path, database_url) as kernel:
        async with kernel.db.session() as s:
            s.add_all([row("a"), row("old1", revoked=True), row("old2", revoked=True)])
        with pytest.raises(IntegrityError):
            async with kernel.db.session() as s:
                s.add(row("b"))


async def test_unknown_provider_lists_registered(database_url, tmp_path) -> None:
    async with llm_kernel(tmp_path, database_url) as kernel:
        with pytest.raises(LlmConfigError) as info:
            await kernel.llm.add_credential(GUILD, "acme", "main", "sk-x-123456")
        assert "registered: openai, openai-compatible, openrouter" in str(info.value)


@pytest.mark.parametrize(
    "url", ["ftp://example.com/v1", "not a url", "http://", "https://user:pw@example.com/v1"]
)
async def test_bad_base_url_is_refused(tmp_path, url) -> None:
    async with llm_kernel(tmp_path, f"sqlite+aiosqlite:///{tmp_path / 'x.db'}") as kernel:
        with pytest.raises(LlmConfigError, match="base URL"):
            await kernel.llm.add_credential(
                GUILD, "openai-compatible", "local", "sk-x-123456", base_url=url
            )
        assert await kernel.llm.list_credentials() == []


async def test_compatible_provider_needs_a_base_url(tmp_path) -> None:
    async with llm_kernel(tmp_path, f"sqlite+aiosqlite:///{tmp_path / 'x.db'}") as kernel:
        with pytest.raises(LlmConfigError, match="needs a base URL"):
            await kernel.llm.add_credential(GUILD, "openai-compatible", "local", "sk-x-123456")


async def test_wrong_key_is_surfaced_verbatim_and_marks_failing(database_url, tmp_path) -> None:
    async with llm_kernel(tmp_path, database_url) as kernel, FakeOpenAI(api_key="sk-right") as fake:
        llm = kernel.llm
        await llm.add_credential(
            GUILD, "openai-compatible", "main", "sk-wrong-000000", base_url=fake.base_url
        )
        await llm.set_profile(GUILD, "chat", "main", "m-1")
        result = await llm.test_credential(GUILD, "main")
        assert not result.ok and result.error_class == "auth"
        assert result.message == "Incorrect API key provided."
        [cred] = await llm.list_credentials(GUILD)
        assert (cred.status, cred.last_test_status, cred.last_error_class) == (
            "failing",
            "error",
            "auth",
        )
        assert cred.last_tested_at is not None

        with pytest.raises(ProviderError) as info:
            await llm.chat([{"role": "user", "content": "hi"}], guild_id="g1", actor="u1")
        assert info.value.status == 401 and "Incorrect API key provided." in str(info.value)

        fake.api_key = "sk-wrong-000000"  # the provider now accepts it: a success heals the status
        fake.reply_text("ok")
        assert (await llm.test_credential(GUILD, "main")).ok
        [cred] = await llm.list_credentials(GUILD)
        assert (cred.status, cred.last_test_status) == ("active", "ok")


async def test_test_needs_a_model_when_no_profile_uses_the_key(tmp_path) -> None:
    async with llm_kernel(tmp_path, f"sqlite+aiosqlite:///{tmp_path / 'x.db'}") as kernel:
        await kernel.llm.add_credential(GUILD, "openai", "main", "sk-x-123456")
        with pytest.raises(LlmConfigError, match="--model"):
            await kernel.llm.test_credential(GUILD, "main")


async def test_ciphertext_is_bound_to_its_row(database_url, tmp_path) -> None:
    """A sealed key copied onto another owner's row does not open there."""
    async with llm_kernel(tmp_path, database_url) as kernel:
        llm = kernel.llm
        a = await llm.add_credential(GUILD, "openai", "main", GUILD_KEY)
        b = await llm.add_credential("guild:g2", "openai", "main", "sk-other-99999")
        async with kernel.db.session() as s:
            src, dst = await s.get(LlmCredential, a.id), await s.get(LlmCredential, b.id)
            dst.key_id, dst.nonce, dst.ciphertext = src.key_id, src.nonce, src.ciphertext
        with pytest.raises(CredentialUnusable, match="integrity"):
            await llm.credentials.open_secret(b.id)
        assert await llm.credentials.open_secret(a.id) == GUILD_KEY


async def test_ciphertext_is_bound_to_its_endpoint(database_url, tmp_path) -> None:
    """Pointing a stored key at another server by editing base_url makes it unusable."""
    async with llm_kernel(tmp_path, database_url) as kernel:
        cred = await kernel.llm.add_credential(
            GUILD, "openai-compatible", "local", GUILD_KEY, base_url="http://127.0.0.1:11434/v1"
        )
        async with kernel.db.session() as s:
            row = await s.get(LlmCredential, cred.id)
            row.base_url = "http://127.0.0.1:9/steal"
        with pytest.raises(CredentialUnusable, match="integrity"):
            await kernel.llm.credentials.open_secret(cred.id)


async def test_a_key_echoed_by_the_provider_is_scrubbed(tmp_path, caplog) -> None:
    caplog.set_level(logging.DEBUG)
    async with (
        llm_kernel(tmp_path, f"sqlite+aiosqlite:///{tmp_path / 'x.db'}") as kernel,
        FakeOpenAI() as fake,
    ):
        llm = kernel.llm
        await llm.add_credential(
            GUILD, "openai-compatible", "main", GUILD_KEY, base_url=fake.base_url
        )
        await llm.set_profile(GUILD, "chat", "main", "m-1")
        fake.reply_error(401, f"Incorrect API key provided: {GUILD_KEY}.")
        with pytest.raises(ProviderError) as info:
            await llm.chat([{"role": "user", "content": "hi"}], guild_id="g1", actor="u1")
        assert "Incorrect API key provided: [redacted]." in str(info.value)
        assert GUILD_KEY not in str(info.value) and info.value.error_class == "auth"
        assert await leaks(kernel, GUILD_KEY) == []
    assert GUILD_KEY not in caplog.text
