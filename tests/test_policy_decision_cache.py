"""The kernel's own decision is kept per view; every input outside the view is in its key."""

from __future__ import annotations

import pytest

from gigi_core import Actor
from gigi_core.policy.decision import Outcome
from gigi_core.policy.engine import cached_base_decision
from gigi_core.policy.view import guild_view
from gigi_core.testing import open_test_kernel
from tests.toolbox import Toolbox

USER = Actor(id="u1")
ADMIN = Actor(id="u1", is_admin=True)  # the same stored facts: the admin flag is not one


async def test_decisions_follow_what_the_view_does_not_hold(tmp_path) -> None:
    async with open_test_kernel(
        tmp_path, plugins=[], extra_plugins=[("box", Toolbox(tmp_path))]
    ) as kernel:
        await kernel.enable_plugin("g1", "box")
        view = await guild_view(kernel, USER, "g1")
        echo = kernel.registry.actions["box.echo"]
        admin_only = kernel.registry.actions["box.secret_op"]

        def decide(actor, spec, channel_visible=None, channel_audience=None):
            return cached_base_decision(
                view, kernel, actor, spec, channel_visible, channel_audience
            )

        assert decide(USER, echo).outcome is Outcome.allow
        assert decide(USER, echo) is decide(USER, echo)  # kept
        kernel.withdraw_action("box.echo", "its server changed the tool")
        assert decide(USER, echo).code == "withdrawn"  # the same view, decided again
        kernel.reinstate_action("box.echo")
        assert decide(USER, echo).outcome is Outcome.allow
        assert decide(USER, echo, channel_visible=False).code == "channel_hidden"
        assert decide(USER, echo, channel_visible=True).outcome is Outcome.allow
        outside = decide(USER, echo, channel_visible=True, channel_audience=False)
        assert outside.code == "channel_outside_audience"
        assert decide(USER, echo, channel_visible=True).outcome is Outcome.allow
        assert decide(USER, admin_only).code == "missing_capability"
        assert decide(ADMIN, admin_only).outcome is Outcome.allow
        assert decide(USER, admin_only).code == "missing_capability"


async def test_a_change_through_the_kernel_reaches_the_next_call(tmp_path) -> None:
    async with open_test_kernel(
        tmp_path, plugins=[], extra_plugins=[("box", Toolbox(tmp_path))]
    ) as kernel:
        await kernel.enable_plugin("g1", "box")
        args = {"text": "a"}
        outcome = await kernel.call_tool("box.echo", args, actor=USER, guild_id="g1")
        assert outcome.result["text"] == "a"
        await kernel.disable_plugin("g1", "box")
        from gigi_core.errors import PolicyDenied

        with pytest.raises(PolicyDenied, match="not enabled"):
            await kernel.call_tool("box.echo", args, actor=USER, guild_id="g1")
