"""``check_member_url``: a member's base URL may not point at this machine or its network
(by address or by name), whatever surface passes ``from_member``. Pure logic: literal
addresses and local names only, nothing is resolved over the network."""

from __future__ import annotations

import pytest

from gigi_core.llm.personal import LOCAL_URLS_ENV, check_member_url
from gigi_core.llm.records import LlmConfigError


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.2/v1",
        "https://192.168.1.10/v1",
        "http://172.16.0.1",
        "http://[fe80::1%25eth0]/",
        "http://[::ffff:127.0.0.1]/v1",
        "http://0.0.0.0:80",
        "http://printer.local/",
        "http://LOCALHOST./v1",
        "http://2130706433/v1",  # 127.0.0.1 written as one number (resolved, no network)
        "http://0x7f.1/",
    ],
)
async def test_inside_urls_are_refused(url, monkeypatch) -> None:
    monkeypatch.delenv(LOCAL_URLS_ENV, raising=False)
    with pytest.raises(LlmConfigError, match="points inside") as caught:
        await check_member_url(url)
    assert LOCAL_URLS_ENV in str(caught.value.hint)


async def test_public_addresses_and_the_operators_switch_pass(monkeypatch) -> None:
    monkeypatch.delenv(LOCAL_URLS_ENV, raising=False)
    await check_member_url("https://8.8.8.8/v1")
    await check_member_url(None)
    monkeypatch.setenv(LOCAL_URLS_ENV, "1")
    await check_member_url("http://127.0.0.1:11434/v1")
