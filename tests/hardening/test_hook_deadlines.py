"""Every hook call has a deadline: a hang never blocks start-up, a call or its caller."""

from __future__ import annotations

import asyncio
import time

import pytest

from gigi_core import Actor, hookimpl
from gigi_core.errors import ConfigError, PolicyDenied
from gigi_core.testing import open_test_kernel
from tests.hardening.plugin_kit import Kit

USER = Actor(id="u1")


class HangsAtStartup:
    @hookimpl
    async def startup(self, kernel):
        await asyncio.Event().wait()


class HangsInVeto:
    @hookimpl
    async def check_tool_call(self, call, actor, action, kernel):
        await asyncio.Event().wait()


class HangsAfterCall:
    def __init__(self) -> None:
        self.started = 0

    @hookimpl
    async def after_tool_call(self, call, actor, outcome, kernel):
        self.started += 1
        await asyncio.Event().wait()


async def test_a_startup_that_never_returns_marks_its_plugin_failed(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("GIGI_HOOK_TIMEOUT_STARTUP_SECONDS", "0.2")
    kit = Kit(tmp_path)
    started = time.monotonic()
    async with asyncio.timeout(10):
        kernel_cm = open_test_kernel(
            tmp_path, plugins=[], extra_plugins=[("kit", kit), ("hangs", HangsAtStartup())]
        )
        async with kernel_cm as kernel:
            assert time.monotonic() - started < 5
            record = kernel.registry.records["hangs"]
            assert record.status == "failed"
            assert "startup" in record.error and "0.2" in record.error
            assert kernel.pm.get_plugin("hangs") is None  # its other hooks are gone too
            await kernel.enable_plugin("g1", "kit")  # the kernel goes on
            outcome = await kernel.call_tool("kit.echo", {"a": 1}, actor=USER, guild_id="g1")
            assert outcome.status == "ok"


async def test_a_veto_that_times_out_denies(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("GIGI_HOOK_TIMEOUT_CHECK_TOOL_CALL_SECONDS", "0.2")
    kit = Kit(tmp_path)
    async with open_test_kernel(
        tmp_path, plugins=[], extra_plugins=[("kit", kit), ("veto", HangsInVeto())]
    ) as kernel:
        await kernel.enable_plugin("g1", "kit")
        async with asyncio.timeout(10):
            with pytest.raises(PolicyDenied, match="did not answer within 0.2s"):
                await kernel.call_tool("kit.echo", {}, actor=USER, guild_id="g1")
    assert kit.seen == []


async def test_a_hanging_after_tool_call_does_not_hold_the_call(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("GIGI_HOOK_TIMEOUT_AFTER_TOOL_CALL_SECONDS", "0.2")
    observer = HangsAfterCall()
    async with open_test_kernel(
        tmp_path, plugins=[], extra_plugins=[("kit", Kit(tmp_path)), ("obs", observer)]
    ) as kernel:
        await kernel.enable_plugin("g1", "kit")
        started = time.monotonic()
        async with asyncio.timeout(10):
            outcome = await kernel.call_tool("kit.echo", {}, actor=USER, guild_id="g1")
        assert outcome.status == "ok" and observer.started == 1
        assert time.monotonic() - started < 5


async def test_the_default_deadline_applies_to_every_hook_kind(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("GIGI_HOOK_TIMEOUT_SECONDS", "0.2")
    async with asyncio.timeout(10):
        async with open_test_kernel(
            tmp_path,
            plugins=[],
            extra_plugins=[("kit", Kit(tmp_path)), ("veto", HangsInVeto())],
        ) as kernel:
            await kernel.enable_plugin("g1", "kit")
            with pytest.raises(PolicyDenied):
                await kernel.call_tool("kit.echo", {}, actor=USER, guild_id="g1")


@pytest.mark.parametrize(
    "var", ["GIGI_HOOK_TIMEOUT_SECONDS", "GIGI_HOOK_TIMEOUT_CHECK_TOOL_CALL_SECONDS"]
)
@pytest.mark.parametrize("bad", ["soon", "-1", "nan", "inf"])
async def test_bad_deadline_settings_are_refused(tmp_path, monkeypatch, var, bad) -> None:
    monkeypatch.setenv(var, bad)
    with pytest.raises(ConfigError, match=var):
        async with open_test_kernel(tmp_path, plugins=[]):
            pass
