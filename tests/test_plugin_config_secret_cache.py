"""A plugin's sealed config secrets are kept unsealed in memory for a few seconds (the LLM
keys' mechanism): a tool call then reads no row, a change through the kernel applies at
once, a read the change overtook is read again, and a change elsewhere applies within the
policy cache's time."""

from __future__ import annotations

import asyncio
import time

import pytest
from sqlalchemy import event

from gigi_core.kernel import Kernel
from gigi_core.plugins import LoadOptions, load_plugins
from gigi_core.testing import open_test_kernel
from tests.toolbox import Toolbox


def _count_statements(kernel) -> list[str]:
    seen: list[str] = []
    event.listen(
        kernel.db.engine.sync_engine,
        "before_cursor_execute",
        lambda conn, cursor, statement, *a: seen.append(statement),
    )
    return seen


async def test_a_second_call_reads_no_row_and_a_change_applies_at_once(
    database_url, tmp_path
) -> None:
    async with open_test_kernel(
        tmp_path, plugins=[], extra_plugins=[("box", Toolbox(tmp_path))], database_url=database_url
    ) as kernel:
        await kernel.enable_plugin("g1", "box", config={"api_token": "sk-one"})
        assert (await kernel.plugin_config("g1", "box", plain={}))["api_token"] == "sk-one"
        seen = _count_statements(kernel)
        assert (await kernel.plugin_config("g1", "box", plain={}))["api_token"] == "sk-one"
        assert seen == []  # kept: no SELECT of the row or the sealed secrets
        await kernel.configure_plugin("g1", "box", {"api_token": "sk-two"})
        assert (await kernel.plugin_config("g1", "box", plain={}))["api_token"] == "sk-two"
        await kernel.configure_plugin("g1", "box", {})  # the secret itself is kept sealed
        assert (await kernel.plugin_config("g1", "box", plain={}))["api_token"] == "sk-two"
        assert (await kernel.plugin_config("g2", "box", plain={})) == {}  # per guild


async def test_a_read_overtaken_by_a_change_never_hands_out_the_old_secret(
    database_url, tmp_path
) -> None:
    async with open_test_kernel(
        tmp_path, plugins=[], extra_plugins=[("box", Toolbox(tmp_path))], database_url=database_url
    ) as kernel:
        await kernel.enable_plugin("g1", "box", config={"api_token": "sk-old"})
        read = kernel.plugin_state.unsealed_secrets
        reading, release = asyncio.Event(), asyncio.Event()
        reads: list[str] = []

        async def slow(guild_id: str, plugin: str) -> dict[str, str]:
            opened = await read(guild_id, plugin)
            reads.append(opened["api_token"])
            if len(reads) == 1:  # the first read finishes, then waits past the change
                reading.set()
                await release.wait()
            return opened

        kernel.plugin_state.unsealed_secrets = slow  # type: ignore[method-assign]
        call = asyncio.create_task(kernel.plugin_config("g1", "box", plain={}))
        await reading.wait()
        await kernel.configure_plugin("g1", "box", {"api_token": "sk-new"})  # returned
        release.set()
        assert (await call)["api_token"] == "sk-new"
        assert reads == ["sk-old", "sk-new"]
        assert (await kernel.plugin_config("g1", "box", plain={}))["api_token"] == "sk-new"
        assert reads == ["sk-old", "sk-new"]  # and that is the one kept


async def test_a_change_made_by_another_process_applies_within_the_policy_ttl(
    tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GIGI_POLICY_CACHE_SECONDS", "0.3")
    url = f"sqlite+aiosqlite:///{tmp_path / 'shared.db'}"

    def loaded():
        return load_plugins(LoadOptions(load=frozenset()), extra=[("box", Toolbox(tmp_path))])

    async with (
        await Kernel.open(url, tmp_path, plugins=loaded()) as a,
        await Kernel.open(url, tmp_path, plugins=loaded()) as b,
    ):
        await a.enable_plugin("g1", "box", config={"api_token": "sk-a"})
        assert (await a.plugin_config("g1", "box", plain={}))["api_token"] == "sk-a"
        await b.configure_plugin("g1", "box", {"api_token": "sk-b"})
        changed = time.monotonic()
        while (await a.plugin_config("g1", "box", plain={}))["api_token"] != "sk-b":
            assert time.monotonic() - changed < 0.3 + 0.5, "the kept secret outlived its TTL"
            await asyncio.sleep(0.02)
