"""The base-URL guard for keys added by members and guild admins from a surface: a host
not proven public is refused (every form that wraps an IPv4 address unwrapped, a name that
does not resolve too); such a key is checked again, and pinned to the checked address, at
every call, so a later change of what the name resolves to reaches nothing; a failed test
of it shows the provider's error class and status, never the body; the operator's own
keys stay free to use local URLs. Both backends; a fake OpenAI on loopback."""

from __future__ import annotations

import httpx
import pytest

from gigi_core import Actor
from gigi_core.llm import ProviderError, url_guard
from gigi_core.llm.client import shared_http_client
from gigi_core.llm.personal import check_member_url
from gigi_core.llm.records import LlmConfigError
from gigi_core.testing.fake_providers import FakeOpenAI
from tests.llm.service_helpers import GUILD_KEY, USER_KEY, llm_kernel

BODY = "internal-admin-panel: db password rotated, 3 users"
HI = [{"role": "user", "content": "hi"}]


@pytest.fixture(autouse=True)
def _no_switch(monkeypatch) -> None:
    for name in (url_guard.LOCAL_URLS_ENV, url_guard.OLD_LOCAL_URLS_ENV):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize(
    "url",
    [
        "http://[64:ff9b::7f00:1]/v1",  # NAT64 form of 127.0.0.1
        "http://[64:ff9b::a00:1]/v1",  # NAT64 form of 10.0.0.1
        "http://[64:ff9b:1::a00:1]/v1",  # a local-use NAT64 prefix
        "http://[2002:7f00:1::]/v1",  # 6to4 form of 127.0.0.1
        "http://[2002:c0a8:101::1]/v1",  # 6to4 form of 192.168.1.1
        "http://[::127.0.0.1]/v1",  # IPv4-compatible
        "http://[::ffff:a9fe:a9fe]/v1",  # IPv4-mapped 169.254.169.254 (cloud metadata)
        "http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/v1",  # Teredo
        "http://[::ffff:0:7f00:1]/v1",  # IPv4-translated (SIIT) 127.0.0.1
        "http://[::ffff:0:a9fe:a9fe]/v1",  # IPv4-translated 169.254.169.254
        "http://0x7f.1/v1",  # hex and short IPv4 forms of 127.0.0.1
        "http://2130706433/v1",  # decimal
        "http://0.0.0.0/v1",
        "http://[::]/v1",
    ],
)
async def test_wrapped_inside_addresses_are_refused(url: str) -> None:
    with pytest.raises(LlmConfigError, match="points inside") as caught:
        await check_member_url(url)
    assert "base_url" in str(caught.value) and "base_url" in str(caught.value.hint)


async def test_a_host_that_does_not_resolve_is_refused_naming_base_url() -> None:
    with pytest.raises(LlmConfigError, match="could not look up") as caught:
        await check_member_url("http://gigi-guard-test.invalid/v1")
    assert "base_url" in str(caught.value)


async def test_public_forms_pass_and_both_switch_names_allow_local(monkeypatch) -> None:
    for url in ("https://8.8.8.8/v1", "https://[64:ff9b::808:808]/v1", "https://[2002:808:808::]/"):
        await check_member_url(url)
    for name in (url_guard.LOCAL_URLS_ENV, url_guard.OLD_LOCAL_URLS_ENV):
        monkeypatch.setenv(name, "1")
        await check_member_url("http://127.0.0.1:11434/v1")
        await check_member_url("http://gigi-guard-test.invalid/v1")
        monkeypatch.delenv(name)


def test_a_pinned_request_keeps_the_name_for_host_and_tls() -> None:
    pin = url_guard.pinned(httpx.URL("https://api.example.com:8443/v1/chat"), "93.184.216.34")
    assert str(pin.url) == "https://93.184.216.34:8443/v1/chat"
    assert (pin.host_header, pin.sni) == ("api.example.com:8443", "api.example.com")
    six = url_guard.pinned(httpx.URL("http://api.example.com/v1"), "2606:4700::1111")
    assert (str(six.url), six.host_header, six.sni) == (
        "http://[2606:4700::1111]/v1",
        "api.example.com",
        None,
    )


async def test_a_pinned_request_reaches_the_address_under_its_name() -> None:
    async with FakeOpenAI() as fake:
        named = httpx.URL(fake.base_url.replace("127.0.0.1", "localhost") + "/models")
        pin = url_guard.pinned(named, "127.0.0.1")
        client = shared_http_client()
        reply = await client.send(
            client.build_request("GET", pin.url, headers={"host": pin.host_header})
        )
        assert reply.status_code < 500
        assert fake.requests[-1].headers["host"] == named.netloc.decode()


async def test_a_member_key_is_checked_again_when_the_call_connects(
    database_url, tmp_path, monkeypatch
) -> None:
    async with llm_kernel(tmp_path, database_url) as kernel, FakeOpenAI() as fake:
        llm = kernel.llm
        monkeypatch.setenv(url_guard.OLD_LOCAL_URLS_ENV, "1")  # allowed when it was added
        await llm.personal.add(
            "u1",
            "openai-compatible",
            "mine",
            USER_KEY,
            base_url=fake.base_url,
            model="m-1",
            from_member=True,
        )
        [cred] = await llm.list_credentials("user:u1")
        assert cred.url_checked
        fake.reply_text("ok")
        await llm.chat(HI, guild_id=None, actor=Actor(id="u1"), dm=True)
        assert len(fake.requests) == 1
        monkeypatch.delenv(url_guard.OLD_LOCAL_URLS_ENV)  # what it reaches is inside now
        with pytest.raises(ProviderError) as caught:
            await llm.chat(HI, guild_id=None, actor=Actor(id="u1"), dm=True)
        assert url_guard.refused(caught.value)
        assert "base_url" in str(caught.value) and "points inside" in str(caught.value)
        assert len(fake.requests) == 1  # refused before connecting


async def test_guild_keys_from_a_surface_are_checked_the_operators_are_not(
    database_url, tmp_path, monkeypatch
) -> None:
    async with llm_kernel(tmp_path, database_url) as kernel, FakeOpenAI() as fake:
        llm = kernel.llm
        owner = "guild:g1"
        with pytest.raises(LlmConfigError, match="base_url"):
            await llm.add_credential(
                owner,
                "openai-compatible",
                "admin",
                GUILD_KEY,
                base_url=fake.base_url,
                checked_url=True,
            )
        assert await llm.list_credentials(owner) == []
        # the operator's CLI may use a local model server
        await llm.add_credential(
            owner, "openai-compatible", "ops", GUILD_KEY, base_url=fake.base_url
        )
        await llm.set_profile(owner, "chat", "ops", "m-1")
        fake.reply_text("ok")
        await llm.chat(HI, guild_id="g1", actor=Actor(id="u1"))
        # with the switch, a guild admin's key is stored flagged and checked at each call
        monkeypatch.setenv(url_guard.LOCAL_URLS_ENV, "1")
        cred = await llm.add_credential(
            owner,
            "openai-compatible",
            "admin",
            GUILD_KEY,
            base_url=fake.base_url,
            checked_url=True,
        )
        assert cred.url_checked
        await llm.set_profile(owner, "chat", "admin", "m-1")
        monkeypatch.delenv(url_guard.LOCAL_URLS_ENV)
        with pytest.raises(ProviderError, match="refused to connect"):
            await llm.chat(HI, guild_id="g1", actor=Actor(id="u1"))
        assert len(fake.requests) == 1


async def test_a_failed_test_of_a_checked_key_shows_no_body(
    database_url, tmp_path, monkeypatch
) -> None:
    monkeypatch.setenv(url_guard.LOCAL_URLS_ENV, "1")  # a shared local server is allowed
    async with llm_kernel(tmp_path, database_url) as kernel, FakeOpenAI() as fake:
        llm = kernel.llm
        for label, checked in (("admin", True), ("ops", False)):
            await llm.add_credential(
                "guild:g1",
                "openai-compatible",
                label,
                GUILD_KEY,
                base_url=fake.base_url,
                checked_url=checked,
            )
        fake.reply_error(404, BODY, times=2)
        checked = await llm.test_credential("guild:g1", "admin", model="m-1")
        assert not checked.ok and checked.error_class == "not_found"
        assert BODY not in (checked.message or "") and "HTTP 404" in (checked.message or "")
        own = await llm.test_credential("guild:g1", "ops", model="m-1")
        assert BODY in (own.message or "")  # the operator's own key: the provider's words


async def test_clearing_the_flag_in_the_table_breaks_the_key(
    database_url, tmp_path, monkeypatch
) -> None:
    """The flag is bound into the key's sealing: a row edited to skip the check no longer
    opens, so the key never reaches the URL unchecked."""
    from sqlalchemy import update

    from gigi_core.llm.records import CredentialUnusable
    from gigi_core.store.llm_tables import LlmCredential

    monkeypatch.setenv(url_guard.LOCAL_URLS_ENV, "1")
    async with llm_kernel(tmp_path, database_url) as kernel, FakeOpenAI() as fake:
        llm = kernel.llm
        await llm.add_credential(
            "guild:g1",
            "openai-compatible",
            "admin",
            GUILD_KEY,
            base_url=fake.base_url,
            checked_url=True,
        )
        await llm.set_profile("guild:g1", "chat", "admin", "m-1")
        async with kernel.db.session() as s:
            await s.execute(update(LlmCredential).values(url_checked=False))
        llm.cache.clear()
        with pytest.raises(CredentialUnusable, match="integrity check"):
            await llm.chat(HI, guild_id="g1", actor=Actor(id="u1"))
        assert fake.requests == []
