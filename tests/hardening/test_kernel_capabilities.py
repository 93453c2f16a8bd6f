"""A plugin's ``capabilities_for`` hook cannot hand out the kernel's own capabilities (issue 28,
item 9): `/llm` rights, grants, plugin management and the rest come only from being an admin,
the documented defaults and explicit guild grants. Plugins' own capabilities still can be."""

from __future__ import annotations

from typing import Any

import pytest

from gigi_core import Actor, PolicyDenied, hookimpl
from gigi_core.policy.capabilities import KERNEL_CAPABILITY_NAMES
from gigi_core.policy.decision import Outcome
from gigi_core.testing import open_test_kernel
from tests.toolbox import Toolbox

MEMBER = Actor(id="m1", roles=frozenset({"r1"}))
ADMIN = Actor(id="a1", is_admin=True)


class GenerousDirectory:
    """An in-process plugin whose hook grants everything it can name."""

    def __init__(self, caps: list[str]) -> None:
        self.caps = caps

    @hookimpl
    def capabilities_for(self, actor: Actor, guild_id: str, kernel: Any) -> list[str]:
        return list(self.caps)


@pytest.fixture
async def kernel(database_url: str | None, tmp_path: Any) -> Any:
    hook = GenerousDirectory(
        ["llm.provider.write", "llm.*", "grants.manage", "plugins.manage", "*", "box.admin"]
    )
    async with open_test_kernel(
        tmp_path,
        plugins=[],
        extra_plugins=[("box", Toolbox(tmp_path)), ("directory", hook)],
        database_url=database_url,
    ) as kernel:
        await kernel.enable_plugin("g1", "box")
        yield kernel


@pytest.mark.parametrize(
    "capability",
    ["llm.provider.write", "llm.provider.select", "llm.provider.test", "llm.usage.read"],
)
async def test_a_plugin_hook_cannot_grant_llm_rights(kernel, capability: str) -> None:
    decision = await kernel.policy.capability(MEMBER, capability, "g1")
    assert decision.outcome is Outcome.deny and decision.code == "missing_capability"
    assert f"grants add {capability}" in decision.reason  # what the admin can do instead


async def test_no_admin_only_kernel_capability_comes_from_a_hook(kernel) -> None:
    for capability in sorted(KERNEL_CAPABILITY_NAMES):
        decision = await kernel.policy.capability(MEMBER, capability, "g1")
        default = kernel.registry.capability_default(capability)
        assert (decision.outcome is Outcome.allow) == (default == "everyone"), capability


async def test_a_kernel_action_is_not_reachable_through_a_hook_grant(kernel) -> None:
    with pytest.raises(PolicyDenied, match="llm.usage.read"):
        await kernel.call_tool("llm.usage.guild", {}, actor=MEMBER, guild_id="g1")


async def test_plugin_capabilities_admins_and_guild_grants_still_count(kernel) -> None:
    await kernel.call_tool("box.secret_op", {}, actor=MEMBER, guild_id="g1")  # via the hook
    assert (await kernel.policy.capability(ADMIN, "llm.provider.write", "g1")).allowed
    await kernel.add_grant("g1", "llm.provider.write", "role", "r1")
    decision = await kernel.policy.capability(MEMBER, "llm.provider.write", "g1")
    assert decision.allowed and "explicit grant" in decision.reason
    assert not (await kernel.policy.capability(MEMBER, "llm.provider.select", "g1")).allowed


def test_the_admin_guide_names_every_kernel_capability_a_hook_cannot_grant() -> None:
    from pathlib import Path

    guide = (Path(__file__).parents[2] / "docs" / "admin.md").read_text()
    section = guide.split("## Granting capabilities", 1)[1].split("\n## ", 1)[0]
    assert all(f"`{name}`" in section for name in KERNEL_CAPABILITY_NAMES)
