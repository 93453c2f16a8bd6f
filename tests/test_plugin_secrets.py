"""Operator-level plugin secrets (``kernel.plugin_secrets``) and withdrawn actions
(``kernel.withdraw_action``): two ports a plugin like gigi-mcp needs."""

from __future__ import annotations

import pytest
from sqlalchemy import select, update

from gigi_core import Actor, PolicyDenied
from gigi_core.errors import SecretsError
from gigi_core.store.tables import SealedSecret
from gigi_core.testing import open_test_kernel
from tests.llm.service_helpers import leaks
from tests.toolbox import Toolbox

TOKEN = "ghp_CANARY_operator_token_9d2f"


async def test_a_secret_is_sealed_opened_fingerprinted_and_deleted(tmp_path, database_url) -> None:
    async with open_test_kernel(tmp_path, database_url=database_url) as kernel:
        secrets = kernel.plugin_secrets("mcp")
        fingerprint = await secrets.put("git:GITHUB_TOKEN", TOKEN)
        assert await secrets.open("git:GITHUB_TOKEN") == TOKEN
        assert await secrets.fingerprints() == {"git:GITHUB_TOKEN": fingerprint}
        assert await secrets.open("missing") is None
        assert await kernel.plugin_secrets("other").fingerprints() == {}
        assert await leaks(kernel, TOKEN) == []  # nowhere in plaintext
        assert fingerprint not in TOKEN and len(fingerprint) >= 8
        assert (
            await secrets.delete("git:GITHUB_TOKEN")
            and await secrets.open("git:GITHUB_TOKEN") is None
        )
        assert not await secrets.delete("git:GITHUB_TOKEN")


async def test_a_row_moved_to_another_plugin_does_not_open(tmp_path, database_url) -> None:
    async with open_test_kernel(tmp_path, database_url=database_url) as kernel:
        await kernel.plugin_secrets("mcp").put("token", TOKEN)
        async with kernel.db.session() as s:
            await s.execute(update(SealedSecret).values(owner="thief"))
        with pytest.raises(SecretsError):  # the associated data binds plugin and name
            await kernel.plugin_secrets("thief").open("token")


async def test_rotation_reseals_plugin_secrets(tmp_path, database_url) -> None:
    from gigi_core.store.sealing import Sealer, generate_key

    old = generate_key()
    async with open_test_kernel(tmp_path, database_url=database_url, secret_key=old) as kernel:
        await kernel.plugin_secrets("mcp").put("token", TOKEN)
        kernel.secrets.sealer = Sealer(generate_key(), retired=[old])  # the operator's new key
        async with kernel.db.session() as s:
            assert await kernel.secrets.rotate(s) == 1
        async with kernel.db.session() as s:
            [key_id] = (await s.scalars(select(SealedSecret.key_id))).all()
        assert key_id == kernel.secrets.sealer.current_key_id
        assert await kernel.plugin_secrets("mcp").open("token") == TOKEN


async def test_a_withdrawn_action_is_neither_offered_nor_allowed(tmp_path, database_url) -> None:
    member = Actor(id="u1")
    async with open_test_kernel(
        tmp_path, extra_plugins=[("box", Toolbox(tmp_path))], database_url=database_url
    ) as kernel:
        await kernel.enable_plugin("g1", "box")
        offered = {a.name for a in await kernel.policy.offerable(member, "g1")}
        assert "box.echo" in offered
        kernel.withdraw_action(
            "box.echo", "its server changed box.echo; an operator must approve it"
        )
        assert "box.echo" not in {a.name for a in await kernel.policy.offerable(member, "g1")}
        with pytest.raises(PolicyDenied, match="must approve it"):
            await kernel.call_tool("box.echo", {"text": "hi"}, actor=member, guild_id="g1")
        kernel.reinstate_action("box.echo")
        assert "box.echo" in {a.name for a in await kernel.policy.offerable(member, "g1")}
        outcome = await kernel.call_tool("box.echo", {"text": "hi"}, actor=member, guild_id="g1")
        assert outcome.status == "ok"
