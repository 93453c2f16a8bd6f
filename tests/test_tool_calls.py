"""The deterministic tool-call path on both backends: validate, decide, execute, audit."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from gigi_core import Actor, hookimpl
from gigi_core.errors import (
    ConfigError,
    ConfirmationRequired,
    InvalidArguments,
    PolicyDenied,
    ToolExecutionError,
    UnknownAction,
)
from gigi_core.store.tables import AuditEvent, GuildPlugin, SealedSecret
from gigi_core.testing import open_test_kernel
from tests.toolbox import Toolbox

USER = Actor(id="u1", roles=frozenset({"r-mod"}))
ADMIN = Actor(id="boss", is_admin=True)


@pytest.fixture
async def box(database_url, tmp_path):
    toolbox = Toolbox(tmp_path)
    async with open_test_kernel(
        tmp_path, plugins=[], extra_plugins=[("box", toolbox)], database_url=database_url
    ) as kernel:
        await kernel.enable_plugin("g1", "box")
        yield kernel, toolbox


async def audit_rows(kernel):
    await kernel.db.writer.drain()  # read-only calls' rows ride the writer's next batch
    async with kernel.db.session() as s:
        return list(await s.scalars(select(AuditEvent).order_by(AuditEvent.id)))


async def test_allowed_call_runs_with_context_and_defaults(box) -> None:
    kernel, _toolbox = box
    outcome = await kernel.call_tool(
        "box.echo", {"text": "hi"}, actor=USER, guild_id="g1", channel_id="c9"
    )
    assert outcome.result == {"text": "hi", "actor": "u1", "guild": "g1", "channel": "c9"}
    assert outcome.decision == "allow"
    rows = await audit_rows(kernel)
    last = rows[-1]
    assert (last.kind, last.action, last.status, last.decision, last.capability) == (
        "tool.call",
        "box.echo",
        "ok",
        "allow",
        "box.use",
    )
    assert last.actor_id == "u1" and last.channel_id == "c9" and last.duration_ms >= 0


async def test_invalid_arguments_name_the_field_and_do_not_run(box) -> None:
    kernel, toolbox = box
    with pytest.raises(InvalidArguments) as info:
        await kernel.call_tool("box.echo", {"text": "x" * 51}, actor=USER, guild_id="g1")
    assert info.value.field == "text"
    with pytest.raises(InvalidArguments) as info:
        await kernel.call_tool("box.echo", {}, actor=USER, guild_id="g1")
    assert info.value.field == "text" and "required" in str(info.value)
    with pytest.raises(InvalidArguments, match="unexpected"):
        await kernel.call_tool("box.echo", {"text": "a", "extra": 1}, actor=USER, guild_id="g1")
    with pytest.raises(InvalidArguments, match="expected a JSON object"):
        await kernel.call_tool("box.echo", ["text"], actor=USER, guild_id="g1")
    assert toolbox.ran == []
    assert [r.status for r in await audit_rows(kernel)][-4:] == ["invalid"] * 4


async def test_unknown_action_suggests_close_names(box) -> None:
    kernel, _ = box
    with pytest.raises(UnknownAction, match="did you mean box.echo"):
        await kernel.call_tool("box.ecco", {}, actor=USER, guild_id="g1")


async def test_disabled_plugin_denies(box) -> None:
    kernel, toolbox = box
    await kernel.disable_plugin("g1", "box")
    with pytest.raises(PolicyDenied, match="not enabled in this server"):
        await kernel.call_tool("box.echo", {"text": "a"}, actor=ADMIN, guild_id="g1")
    with pytest.raises(PolicyDenied):
        await kernel.call_tool("box.echo", {"text": "a"}, actor=ADMIN, guild_id="other-guild")
    assert toolbox.ran == []


async def test_policy_is_decided_before_arguments_are_checked(box) -> None:
    """A member never learns an action's schema from a guild where it is off (exit 3, not 2)."""
    kernel, toolbox = box
    await kernel.disable_plugin("g1", "box")
    with pytest.raises(PolicyDenied, match="not enabled in this server"):
        await kernel.call_tool("box.echo", {"text": 5, "junk": True}, actor=ADMIN, guild_id="g1")
    member = Actor(id="m1")
    await kernel.enable_plugin("g1", "box")
    with pytest.raises(PolicyDenied):  # box.secret_op needs box.admin, which the member lacks
        await kernel.call_tool("box.secret_op", {"bogus": 1}, actor=member, guild_id="g1")
    await kernel.disable_plugin("g1", "box")
    from gigi_core.surfaces import Request

    slash = Request(actor=ADMIN, guild_id="g1", channel_id="c1", kind="slash", text="")
    with pytest.raises(PolicyDenied, match="not enabled"):  # the direct path: commands
        await kernel.agent.direct(slash, "box.echo", {"text": 5, "junk": True})
    assert toolbox.ran == []


async def test_grants_by_user_role_and_wildcard(box) -> None:
    kernel, toolbox = box
    with pytest.raises(PolicyDenied, match="do not hold box.admin"):
        await kernel.call_tool("box.secret_op", {}, actor=USER, guild_id="g1")
    await kernel.add_grant("g1", "box.admin", "role", "r-mod")
    await kernel.call_tool("box.secret_op", {}, actor=USER, guild_id="g1")
    await kernel.remove_grant("g1", "box.admin", "role", "r-mod")
    with pytest.raises(PolicyDenied):
        await kernel.call_tool("box.secret_op", {}, actor=USER, guild_id="g1")
    await kernel.add_grant("g1", "box.*", "user", "u1")
    await kernel.call_tool("box.secret_op", {}, actor=USER, guild_id="g1")
    with pytest.raises(PolicyDenied):  # a grant in one guild means nothing in another
        await kernel.enable_plugin("g2", "box")
        await kernel.call_tool("box.secret_op", {}, actor=USER, guild_id="g2")
    await kernel.call_tool("box.secret_op", {}, actor=ADMIN, guild_id="g2")
    assert toolbox.ran.count("box.secret_op") == 3


async def test_grant_validation(box) -> None:
    kernel, _ = box
    with pytest.raises(ConfigError, match="unknown capability 'box.nope'"):
        await kernel.add_grant("g1", "box.nope", "user", "u1")
    assert await kernel.add_grant("g1", "box.use", "user", "u1") is True
    assert await kernel.add_grant("g1", "box.use", "user", "u1") is False
    with pytest.raises(ConfigError, match="no grant of box.admin"):
        await kernel.remove_grant("g1", "box.admin", "user", "u1")


async def test_confirmation_required_does_not_execute(box) -> None:
    kernel, toolbox = box
    for name in ("box.write", "box.wipe"):
        with pytest.raises(ConfirmationRequired) as info:
            await kernel.call_tool(name, {}, actor=ADMIN, guild_id="g1")
        assert info.value.exit_code == 4
    assert toolbox.ran == []
    assert (await audit_rows(kernel))[-1].status == "needs_confirmation"


async def test_external_needs_guild_consent(box) -> None:
    kernel, toolbox = box
    with pytest.raises(PolicyDenied, match="has not allowed external actions"):
        await kernel.call_tool("box.fetch", {}, actor=ADMIN, guild_id="g1")
    await kernel.enable_plugin("g1", "box", allow_external=True)
    await kernel.call_tool("box.fetch", {}, actor=ADMIN, guild_id="g1")
    assert toolbox.ran == ["box.fetch"]


async def test_sync_handler_runs_off_the_event_loop(box) -> None:
    kernel, _toolbox = box
    outcome = await kernel.call_tool("box.thread", {}, actor=USER, guild_id="g1")
    assert outcome.result == {"main": False}


async def test_handler_exception_is_masked(box, caplog) -> None:
    kernel, _ = box
    with pytest.raises(ToolExecutionError) as info:
        await kernel.call_tool("box.crash", {}, actor=USER, guild_id="g1")
    assert str(info.value) == "box.crash failed (RuntimeError)"
    assert "secret internal detail" in caplog.text  # the log has the detail, the caller does not
    assert (await audit_rows(kernel))[-1].status == "error"


async def test_hanging_handler_times_out(box) -> None:
    kernel, _ = box
    with pytest.raises(ToolExecutionError, match="did not finish within 0.2s"):
        await kernel.call_tool("box.hang", {}, actor=USER, guild_id="g1")
    assert (await audit_rows(kernel))[-1].status == "timeout"


async def test_results_must_be_json_and_match_result_schema(box) -> None:
    kernel, _ = box
    with pytest.raises(ToolExecutionError, match="not JSON"):
        await kernel.call_tool("box.notjson", {}, actor=USER, guild_id="g1")
    with pytest.raises(ToolExecutionError, match="does not match its manifest"):
        await kernel.call_tool("box.badresult", {}, actor=USER, guild_id="g1")


async def test_config_validated_and_secrets_sealed(box) -> None:
    kernel, _ = box
    with pytest.raises(ConfigError, match="greeting"):
        await kernel.configure_plugin("g1", "box", {"greeting": 5})
    with pytest.raises(ConfigError, match="unknown_field|Additional properties"):
        await kernel.configure_plugin("g1", "box", {"unknown_field": 1})
    await kernel.configure_plugin(
        "g1", "box", {"greeting": "hey", "api_token": "sk-VERY-SECRET-123"}
    )
    outcome = await kernel.call_tool("box.config", {}, actor=USER, guild_id="g1")
    assert outcome.result == {"greeting": "hey", "api_token": "sk-VERY-SECRET-123"}
    state = await kernel.plugin_state.get("g1", "box")
    assert state.config == {"greeting": "hey"} and set(state.secret_fields) == {"api_token"}
    async with kernel.db.session() as s:
        row = await s.get(GuildPlugin, ("g1", "box"))
        assert "sk-VERY-SECRET" not in repr(row.config)
        secret = await s.scalar(select(SealedSecret))
        assert b"sk-VERY-SECRET" not in secret.ciphertext
    for row in await audit_rows(kernel):
        assert "sk-VERY-SECRET" not in repr(vars(row))


async def test_audit_holds_no_argument_values(box) -> None:
    kernel, _ = box
    await kernel.call_tool("box.echo", {"text": "canary-7f3a"}, actor=USER, guild_id="g1")
    with pytest.raises(InvalidArguments):
        await kernel.call_tool("box.echo", {"text": "canary-7f3a" * 10}, actor=USER, guild_id="g1")
    for row in await audit_rows(kernel):
        assert "canary-7f3a" not in repr(vars(row))


async def test_enable_unknown_plugin_is_a_clear_error(box) -> None:
    kernel, _ = box
    with pytest.raises(
        ConfigError,
        match="no loaded plugin is named 'nope' \\(loaded: box, gigi, llm, permissions, plugins\\)",
    ):
        await kernel.enable_plugin("g1", "nope")


class Vetoer:
    def __init__(self, answer):
        self.answer = answer
        self.seen = []

    @hookimpl
    async def check_tool_call(self, call, actor, action, kernel):
        self.seen.append((call["action"], call["args"]))
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


class Granter:
    @hookimpl
    def capabilities_for(self, actor, guild_id, kernel):
        return ["box.admin"] if actor.id == "vip" else []


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        (None, "ok"),
        ("confirm", ConfirmationRequired),
        ("deny", PolicyDenied),
        (RuntimeError("x"), PolicyDenied),
    ],
)
async def test_check_tool_call_vetoes(database_url, tmp_path, answer, expected) -> None:
    toolbox, vetoer = Toolbox(tmp_path), Vetoer(answer)
    async with open_test_kernel(
        tmp_path,
        plugins=[],
        extra_plugins=[("box", toolbox), ("vetoer", vetoer)],
        database_url=database_url,
    ) as kernel:
        await kernel.enable_plugin("g1", "box")
        if expected == "ok":
            await kernel.call_tool("box.echo", {"text": "a"}, actor=USER, guild_id="g1")
            assert toolbox.ran == ["box.echo"]
        else:
            with pytest.raises(expected):
                await kernel.call_tool("box.echo", {"text": "a"}, actor=USER, guild_id="g1")
            assert toolbox.ran == []
        assert vetoer.seen == [("box.echo", {"text": "a", "n": 1})]


async def test_capabilities_for_grants_through_a_plugin(database_url, tmp_path) -> None:
    async with open_test_kernel(
        tmp_path,
        plugins=[],
        extra_plugins=[("box", Toolbox(tmp_path)), ("granter", Granter())],
        database_url=database_url,
    ) as kernel:
        await kernel.enable_plugin("g1", "box")
        await kernel.call_tool("box.secret_op", {}, actor=Actor(id="vip"), guild_id="g1")
        with pytest.raises(PolicyDenied):
            await kernel.call_tool("box.secret_op", {}, actor=Actor(id="nobody"), guild_id="g1")


async def test_undeclared_arguments_never_reach_a_handler(database_url, tmp_path) -> None:
    from tests.toolbox import Toolbox

    seen = {}

    def thread(ctx, dry_run: bool = True):  # a hidden keyword the manifest does not declare
        seen["dry_run"] = dry_run
        return {"ok": True}

    toolbox = Toolbox(tmp_path)
    toolbox.thread = thread
    async with open_test_kernel(
        tmp_path, plugins=[], extra_plugins=[("box", toolbox)], database_url=database_url
    ) as kernel:
        await kernel.enable_plugin("g1", "box")
        # box.thread's schema is {type: object}: extra properties validate
        await kernel.call_tool("box.thread", {"dry_run": False}, actor=USER, guild_id="g1")
    assert seen == {"dry_run": True}


async def test_a_read_only_call_returns_before_its_audit_row_commits(box) -> None:
    """A read-only call runs no statement before it returns (box's config has a secret
    field, kept unsealed with the policy facts): its audit row rides the writer's next
    batch, and a reader sees it at once."""
    from sqlalchemy import event

    kernel, _ = box
    await kernel.call_tool("box.echo", {"text": "warm"}, actor=USER, guild_id="g1")
    await kernel.db.writer.drain()
    seen: list[str] = []

    def count(conn, cursor, statement, *rest) -> None:
        seen.append(statement.split()[0])

    event.listen(kernel.db.engine.sync_engine, "before_cursor_execute", count)
    try:
        outcome = await kernel.call_tool("box.echo", {"text": "hi"}, actor=USER, guild_id="g1")
        during = list(seen)
        rows = await kernel.audit.recent("g1", limit=1)
    finally:
        event.remove(kernel.db.engine.sync_engine, "before_cursor_execute", count)
    assert outcome.result["text"] == "hi" and during == []  # the secrets were kept
    assert (rows[0]["action"], rows[0]["status"]) == ("box.echo", "ok")


async def test_a_failed_audit_write_is_logged_for_a_read_and_raised_for_a_change(
    box, monkeypatch, caplog
) -> None:
    from gigi_core.store import audit

    kernel, _ = box
    await kernel.enable_plugin("g1", "box", allow_external=True)  # box.fetch may run

    def broken(self, conn) -> None:
        raise RuntimeError("the audit table is gone")

    monkeypatch.setattr(audit.AuditWrite, "__call__", broken)
    outcome = await kernel.call_tool("box.echo", {"text": "hi"}, actor=USER, guild_id="g1")
    assert outcome.result["text"] == "hi"  # the read ran; losing its row is logged
    await kernel.db.writer.drain()
    assert "a queued database write failed" in caplog.text
    assert kernel.audit.failed_rows == 1
    with pytest.raises(RuntimeError, match="audit table"):  # it ran: not reported as done
        await kernel.call_tool("box.fetch", {}, actor=USER, guild_id="g1")


async def test_a_failed_awaited_audit_row_makes_the_next_read_fail_closed(box, monkeypatch) -> None:
    """A change whose row could not be written tells the reads too: the next read waits for
    its own row rather than answering while the log is known to be failing."""
    from gigi_core.store import audit

    kernel, _ = box
    await kernel.enable_plugin("g1", "box", allow_external=True)

    def broken(self, conn) -> None:
        raise RuntimeError("the audit table is gone")

    monkeypatch.setattr(audit.AuditWrite, "__call__", broken)
    with pytest.raises(RuntimeError, match="audit table"):
        await kernel.call_tool("box.fetch", {}, actor=USER, guild_id="g1")
    with pytest.raises(RuntimeError, match="audit table"):
        await kernel.call_tool("box.echo", {"text": "hi"}, actor=USER, guild_id="g1")
    assert kernel.audit.failed_rows == 0  # both raised to their callers; none was queued


async def test_reads_fail_closed_while_their_audit_rows_fail_and_recover_after(
    box, monkeypatch
) -> None:
    """After a queued row failed, the next read waits for its row: no data goes out while
    the log cannot be written; once a row lands again, reads queue their rows again."""
    from gigi_core.store import audit

    kernel, _ = box
    real = audit.AuditWrite.__call__

    def broken(self, conn) -> None:
        raise RuntimeError("the audit table is gone")

    monkeypatch.setattr(audit.AuditWrite, "__call__", broken)
    await kernel.call_tool("box.echo", {"text": "one"}, actor=USER, guild_id="g1")
    await kernel.db.writer.drain()
    for _ in range(2):  # still failing: each read raises instead of answering
        with pytest.raises(RuntimeError, match="audit table"):
            await kernel.call_tool("box.echo", {"text": "two"}, actor=USER, guild_id="g1")
    assert kernel.audit.failed_rows == 1  # awaited rows raise to their caller instead
    monkeypatch.setattr(audit.AuditWrite, "__call__", real)
    back = await kernel.call_tool("box.echo", {"text": "three"}, actor=USER, guild_id="g1")
    assert back.result["text"] == "three"
    rows = await kernel.audit.recent("g1", limit=1)  # this one waited for its commit
    assert (rows[0]["action"], rows[0]["status"]) == ("box.echo", "ok")
    seen: list[int] = []
    monkeypatch.setattr(kernel.audit, "record", lambda record: seen.append(1))
    await kernel.call_tool("box.echo", {"text": "four"}, actor=USER, guild_id="g1")
    assert seen == []  # queued again, not awaited
    assert len(await kernel.audit.recent("g1", limit=5)) >= 2


async def test_a_gigi_error_inside_a_tool_reaches_the_member_with_its_hint(box) -> None:
    """A refusal written for users (a spent budget, a denied nested call) is not masked as
    "failed (ExcName)"; other exceptions still are (``test_handler_exception_is_masked``)."""
    from datetime import UTC, datetime

    from gigi_core.llm import BudgetExhausted
    from gigi_core.llm.budgets import BudgetInfo

    kernel, _ = box
    budget = BudgetInfo("b1", "g1", "guild", "", "tokens", 100, "daily", 0)
    resets = datetime(2026, 1, 2, tzinfo=UTC)

    async def spent(ctx):
        raise BudgetExhausted(budget, 50, 10, resets)

    async def denied(ctx):
        raise PolicyDenied("box.wipe", "only admins may wipe")

    kernel.registry.handlers["box.crash"] = spent
    with pytest.raises(ToolExecutionError) as info:
        await kernel.call_tool("box.crash", {}, actor=USER, guild_id="g1")
    text = str(info.value)
    assert text.startswith("box.crash: the server's daily budget of 100 tokens is spent")
    assert "resets at 2026-01-02 00:00 UTC" in text and "gigi llm budget set|reset" in text
    assert isinstance(info.value.__cause__, BudgetExhausted)
    kernel.registry.handlers["box.crash"] = denied
    with pytest.raises(ToolExecutionError, match="box.wipe denied: only admins may wipe"):
        await kernel.call_tool("box.crash", {}, actor=USER, guild_id="g1")
    assert [r.status for r in await audit_rows(kernel)][-2:] == ["error", "error"]
