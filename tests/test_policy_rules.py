"""The policy engine's pure rules, including hypothesis properties over every input."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from gigi_core.manifest.models import ActionSpec, ConfirmRule, Safety
from gigi_core.policy.actor import Actor
from gigi_core.policy.capabilities import matches
from gigi_core.policy.decision import Decision, Outcome
from gigi_core.policy.engine import PolicyFacts, base_decision, combine

ARGS = {"type": "object", "properties": {}, "additionalProperties": False}


def action(
    safety: Safety = Safety.read_only, confirm: ConfirmRule = ConfirmRule.never
) -> ActionSpec:
    return ActionSpec(
        name="dice.roll",
        description="d",
        safety=safety,
        capability="dice.use",
        confirm=confirm,
        args=ARGS,
    )


def facts(**overrides) -> PolicyFacts:
    values = dict(
        action=action(),
        plugin_loaded=True,
        plugin_enabled=True,
        capability_default="admins",
        grants=frozenset(),
    )
    values.update(overrides)
    return PolicyFacts(**values)


USER = Actor(id="u1", roles=frozenset({"r1"}))
ADMIN = Actor(id="a1", is_admin=True)


def test_default_deny_without_grant() -> None:
    d = base_decision(USER, facts())
    assert d.outcome is Outcome.deny and d.code == "missing_capability"
    assert "grants add dice.use" in d.reason


def test_explicit_grant_allows() -> None:
    assert base_decision(USER, facts(grants=frozenset({"dice.use"}))).allowed


def test_wildcard_grant_allows() -> None:
    assert base_decision(USER, facts(grants=frozenset({"dice.*"}))).allowed
    assert not base_decision(USER, facts(grants=frozenset({"dicex.*"}))).allowed


def test_everyone_default_allows() -> None:
    assert base_decision(USER, facts(capability_default="everyone")).allowed


def test_admin_holds_capabilities_of_enabled_plugins_only() -> None:
    assert base_decision(ADMIN, facts()).allowed
    d = base_decision(ADMIN, facts(plugin_enabled=False))
    assert d.outcome is Outcome.deny and d.reason == "plugin dice is not enabled in this server"


def test_unknown_capability_denies_even_admins() -> None:
    assert base_decision(ADMIN, facts(capability_default=None)).outcome is Outcome.deny


def test_plugin_not_loaded() -> None:
    assert base_decision(ADMIN, facts(plugin_loaded=False)).code == "plugin_not_loaded"


def test_hidden_channel_denies() -> None:
    assert base_decision(ADMIN, facts(channel_visible=False)).code == "channel_hidden"
    assert base_decision(ADMIN, facts(channel_visible=True)).allowed


def test_hook_capability_counts_as_grant() -> None:
    assert base_decision(USER, facts(hook_capabilities=frozenset({"dice.use"}))).allowed


def test_destructive_and_always_confirm() -> None:
    assert base_decision(ADMIN, facts(action=action(Safety.destructive))).outcome is Outcome.confirm
    assert (
        base_decision(ADMIN, facts(action=action(confirm=ConfirmRule.always))).outcome
        is Outcome.confirm
    )


def test_external_needs_consent() -> None:
    ext = action(Safety.external, ConfirmRule.never)
    assert base_decision(ADMIN, facts(action=ext)).code == "external_not_consented"
    assert base_decision(ADMIN, facts(action=ext, external_consent=True)).allowed


def test_veto_semantics() -> None:
    allow = Decision.allow()
    assert combine(allow, [None, None]) is allow
    assert combine(allow, ["confirm", None]).outcome is Outcome.confirm
    assert combine(allow, ["confirm", "deny"]).outcome is Outcome.deny
    assert combine(allow, [Decision.deny("no", "x")]).reason == "no"
    deny = Decision.deny("base", "b")
    assert combine(deny, [Decision.allow()]) is deny


def test_capability_matching() -> None:
    assert matches("*", "anything.at.all")
    assert matches("memory.*", "memory.read.guild")
    assert not matches("memory.*", "memoryx.read")
    assert not matches("memory.read", "memory.read.guild")


actors = st.builds(
    Actor,
    id=st.sampled_from(["u1", "u2"]),
    roles=st.frozensets(st.sampled_from(["r1", "r2"])),
    is_admin=st.booleans(),
)
grant_sets = st.frozensets(st.sampled_from(["dice.use", "dice.*", "*", "other.use", "other.*"]))
fact_sets = st.builds(
    PolicyFacts,
    action=st.builds(action, st.sampled_from(list(Safety)), st.sampled_from(list(ConfirmRule))),
    plugin_loaded=st.booleans(),
    plugin_enabled=st.booleans(),
    capability_default=st.sampled_from(["everyone", "admins", None]),
    grants=grant_sets,
    hook_capabilities=grant_sets,
    external_consent=st.booleans(),
    channel_visible=st.sampled_from([None, True, False]),
)
vetoes = st.lists(
    st.sampled_from(
        [
            None,
            "confirm",
            "deny",
            "allow",
            Decision.allow(),
            Decision.confirm("c"),
            Decision.deny("d"),
        ]
    ),
    max_size=4,
)


def _granted(actor: Actor, f: PolicyFacts) -> bool:
    cap = f.action.capability
    return f.capability_default is not None and (
        actor.is_admin
        or f.capability_default == "everyone"
        or any(matches(g, cap) for g in f.grants | f.hook_capabilities)
    )


@given(actors, fact_sets, vetoes)
def test_no_allow_without_enabled_plugin_and_grant(actor: Actor, f: PolicyFacts, v: list) -> None:
    decision = combine(base_decision(actor, f), v)
    if decision.outcome is not Outcome.deny:
        assert f.plugin_loaded and f.plugin_enabled
        assert _granted(actor, f)
        assert f.channel_visible is not False


@given(actors, fact_sets, vetoes)
def test_any_deny_veto_wins(actor: Actor, f: PolicyFacts, v: list) -> None:
    decision = combine(base_decision(actor, f), v)
    if any(x == "deny" or (isinstance(x, Decision) and x.outcome is Outcome.deny) for x in v):
        assert decision.outcome is Outcome.deny


@given(actors, fact_sets, vetoes)
def test_confirmation_is_never_dropped(actor: Actor, f: PolicyFacts, v: list) -> None:
    base = base_decision(actor, f)
    decision = combine(base, v)
    if base.outcome is Outcome.confirm:
        assert decision.outcome in (Outcome.confirm, Outcome.deny)
    if f.action.needs_confirmation:
        assert decision.outcome is not Outcome.allow
