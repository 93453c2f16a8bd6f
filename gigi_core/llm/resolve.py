"""Which owner's profile serves a request, decided once, before any provider call.

Order for a request in a guild (``billing="auto"``):

1. the guild's profile for the purpose;
2. the actor's personal (``user``) profile, only where the guild policy allows personal
   keys here (``guild-allowed``, or ``dm-only`` when ``dm=True``), and always in a DM
   outside any guild (``private_dm``: no guild policy applies there);
3. the tenant's profile, only when the operator enabled tenant fallback: globally with
   ``GIGI_TENANT_FALLBACK=1`` or per guild with ``gigi llm policy set --tenant-fallback``.

The first owner that *has* an enabled profile wins, whatever the state of its key: a
failing or revoked guild credential is an error for the guild admin, never a reason to
bill the tenant or the user instead (and the reverse). ``billing="me"`` asks for the
personal profile only, ``billing="server"`` for guild then tenant.

When no permitted owner has a profile for the purpose (``auto`` or ``server``), a
registered keyless provider (``requires_key = False``) whose ``default_models`` lists the
purpose serves it as a tenant-owned resolution; with several, the lowest ``name`` wins.
An explicit profile always wins over it; ``billing="me"`` never falls back to it.

A place policy (``channel_policy.py``) can override, for a thread, channel, forum,
category or the whole guild, which of the *guild's own* profiles serves a purpose there
(another purpose's profile, or another model id on the same key). It applies to the
guild owner only and never sends the bill elsewhere: an override whose profile is
missing is an error naming the place, not a reason to try the member or the tenant.

A slot purpose (``respond``, ``query_analyse``, ``classify``, ...) falls back to
its general purpose *within each owner* (``purpose_chain``): the guild's ``chat`` profile
serves ``respond`` before any user or tenant profile is consulted: a slot profile of
another owner never moves a bill away from an owner with the general profile.
"""

from __future__ import annotations

import dataclasses
import functools
import os
from collections.abc import Callable, Sequence
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Literal

from gigi_core.errors import Hint
from gigi_core.llm.cache import MISSING, LlmCache
from gigi_core.llm.channel_policy import GuildPolicies, ModelChoice, Place
from gigi_core.llm.credentials import CredentialMeta, CredentialStore
from gigi_core.llm.profiles import PolicyStore, ProfileStore
from gigi_core.llm.records import (
    CredentialUnusable,
    GuildPolicy,
    LlmConfigError,
    NothingToResolve,
    Owner,
    ProfileInfo,
    Resolution,
    purpose_chain,
)

if TYPE_CHECKING:
    from gigi_core.llm.channel_policy_store import ChannelPolicyStore
    from gigi_core.llm.provider import Provider

Billing = Literal["auto", "server", "me"]
TENANT_FALLBACK_ENV = "GIGI_TENANT_FALLBACK"
#: While a resolution is built: the expiry of each cached fact it read.
_SOURCES: ContextVar[list[float] | None] = ContextVar("gigi_resolution_sources", default=None)


def tenant_fallback_from_env() -> bool:
    return os.environ.get(TENANT_FALLBACK_ENV, "").strip().lower() in ("1", "true", "yes", "on")


def personal_allowed(policy: GuildPolicy, dm: bool) -> bool:
    return policy.personal_keys == "guild-allowed" or (dm and policy.personal_keys == "dm-only")


def private_dm(guild_id: str | None, dm: bool) -> bool:
    """A DM outside any guild (no guild id, or a surface's per-member ``dm:<id>`` scope): no
    guild policy governs it, so the member's own key may answer there on a fresh install."""
    return dm and (not guild_id or guild_id.startswith("dm:"))


def keyless_default(providers: Sequence[Provider], purpose: str) -> Resolution | None:
    """The keyless provider (lowest name) that serves ``purpose`` with no profile, if any."""
    for provider in sorted(providers, key=lambda p: p.name):
        model = provider.default_models.get(purpose) if not provider.requires_key else None
        if model:
            return Resolution(
                owner=Owner.tenant(),
                purpose=purpose,
                provider=provider.name,
                model=model,
                fallback_model=None,
                credential_id="",
                credential_label="",
                base_url=None,
                keyless=True,
            )
    return None


class Resolver:
    """Decides from cached facts (``gigi_core.llm.cache``); a miss reads one fact."""

    def __init__(
        self,
        profiles: ProfileStore,
        policies: PolicyStore,
        credentials: CredentialStore,
        keyless: Callable[[], Sequence[Provider]] = tuple,
        cache: LlmCache | None = None,
        places: ChannelPolicyStore | None = None,
    ) -> None:
        self.profiles = profiles
        self.places = places  # per-place and per-role policies; None: there are none
        self.policies = policies
        self.credentials = credentials
        self.keyless = keyless  # the registered providers with requires_key = False
        self.cache = cache or LlmCache()

    # -- cached facts --------------------------------------------------------------------

    async def policy(self, guild_id: str) -> GuildPolicy:
        key = ("policy", guild_id)
        found = await self.cache.fetch(key, lambda: self.policies.get(guild_id))
        self._source(key)
        return found  # type: ignore[no-any-return]

    async def place_policies(self, guild_id: str) -> GuildPolicies:
        """Every place and role policy of the guild, as one cached fact."""
        store = self.places
        if store is None:
            return GuildPolicies(guild_id)
        key = ("places", guild_id)
        found = await self.cache.fetch(key, lambda: store.read(guild_id))
        self._source(key)
        return found  # type: ignore[no-any-return]

    async def credential(self, credential_id: str) -> CredentialMeta | None:
        key = ("credential", credential_id)
        found = await self.cache.fetch(key, lambda: self.credentials.meta(credential_id))
        self._source(key)
        return found  # type: ignore[no-any-return]

    def _source(self, key: tuple[Any, ...]) -> None:
        """A resolution being built read this fact: it must not outlive it."""
        sources = _SOURCES.get()
        if sources is not None:
            sources.append(self.cache.expires(key))

    def noted(self, meta: CredentialMeta) -> None:
        """This process wrote the credential's new status: later calls see it without a read."""
        self.cache.replace(("credential", meta.info.id), meta)

    # -- resolution ----------------------------------------------------------------------

    async def candidates(
        self, guild_id: str | None, actor_id: str | None, *, dm: bool, billing: Billing
    ) -> tuple[list[Owner], GuildPolicy, bool]:
        """Owners to consult, in order, plus the policy and tenant switch that decided them."""
        policy = await self.policy(guild_id) if guild_id else GuildPolicy("")
        tenant_on = tenant_fallback_from_env() or policy.tenant_fallback
        personal = actor_id is not None and (
            personal_allowed(policy, dm) or private_dm(guild_id, dm)
        )
        if billing == "me":
            if actor_id is None or not personal:
                where = f"guild {guild_id}" if guild_id else "this context"
                raise LlmConfigError(
                    f"personal keys are not allowed in {where} "
                    f"(policy: {policy.personal_keys}{', not a DM' if not dm else ''})",
                    hint=f"an admin can run `gigi llm policy set --guild {guild_id or 'G'} "
                    "--personal-keys dm-only|guild-allowed`",
                )
            return [Owner.user(actor_id)], policy, tenant_on
        owners: list[Owner] = []
        if guild_id:
            owners.append(Owner.guild(guild_id))
        if billing == "auto" and personal and actor_id is not None:
            owners.append(Owner.user(actor_id))
        if tenant_on:
            owners.append(Owner.tenant())
        return owners, policy, tenant_on

    async def resolve(
        self,
        guild_id: str | None,
        purpose: str,
        actor_id: str | None,
        *,
        dm: bool = False,
        billing: Billing = "auto",
        places: Sequence[Place] = (),
    ) -> Resolution:
        """``places``: where the request was made, nearest first (a thread, its channel or
        forum, that one's category), as the surface knows them; the guild is implied."""
        # The whole answer is a fact of its own, cleared and expired with the facts it was
        # read from (same cache, same generation): a hit skips the walk over owners.
        where = tuple(places) if guild_id else ()
        env = tenant_fallback_from_env()
        key = ("resolution", guild_id, purpose, actor_id, dm, billing, env, where)
        found = self.cache.get(key)
        if found is not MISSING:
            return found  # type: ignore[no-any-return]
        generation = self.cache.generation
        sources: list[float] = []
        token = _SOURCES.set(sources)
        try:
            resolution, from_profile = await self._resolve(
                guild_id, purpose, actor_id, dm=dm, billing=billing, places=where
            )
        finally:
            _SOURCES.reset(token)
        if from_profile:  # a keyless provider's default is the provider's own, asked each time
            # It expires with the oldest fact it was read from: a change made by another
            # process applies within the TTL for new members as for everyone else.
            self.cache.put(key, resolution, generation, expires=min(sources, default=None))
        return resolution

    async def _resolve(
        self,
        guild_id: str | None,
        purpose: str,
        actor_id: str | None,
        *,
        dm: bool,
        billing: Billing,
        places: tuple[Place, ...] = (),
    ) -> tuple[Resolution, bool]:
        chain = purpose_chain(purpose)
        owners, policy, tenant_on = await self.candidates(
            guild_id, actor_id, dm=dm, billing=billing
        )
        override = None
        if guild_id and Owner.guild(guild_id) in owners:
            override = (await self.place_policies(guild_id)).effective(places).choice(chain)
        for owner in owners:
            if override is not None and owner.type == "guild":
                return await self._overridden(owner, chain, *override), True
            profile = await self._first_profile(owner, chain)
            if profile is not None:
                return await self._resolution(profile), True
        if billing != "me":
            for each in chain:
                default = keyless_default(self.keyless(), each)
                if default is not None:
                    return default, False
        raise nothing_to_resolve(guild_id, chain, owners, policy, tenant_on)

    async def _first_profile(self, owner: Owner, chain: tuple[str, ...]) -> ProfileInfo | None:
        """The owner's profile for the first purpose of ``chain`` that has one. Walked in
        order over the cached facts; at the first one missing, the rest of the chain is
        read in one statement (and each purpose's answer kept as its own fact)."""
        for i, each in enumerate(chain):
            key = ("profile", owner.type, owner.id, each)
            found = self.cache.get(key)
            if found is MISSING:
                rest = chain[i:]
                if self.cache.ttl <= 0:
                    read = await self.profiles.get_chain(owner, rest)
                else:
                    read = await self.cache.reads.read(
                        (("profiles", owner.type, owner.id, rest), self.cache.generation),
                        functools.partial(self._read_chain, owner, rest, self.cache.generation),
                    )
                for later in rest:
                    self._source(("profile", owner.type, owner.id, later))
                return next((read[p] for p in rest if read[p] is not None), None)
            self._source(key)
            if found is not None:
                return found  # type: ignore[no-any-return]
        return None

    async def _read_chain(
        self, owner: Owner, purposes: tuple[str, ...], generation: int
    ) -> dict[str, ProfileInfo | None]:
        read = await self.profiles.get_chain(owner, purposes)
        for each, profile in read.items():
            self.cache.put(("profile", owner.type, owner.id, each), profile, generation)
        return read

    async def _overridden(
        self, owner: Owner, chain: tuple[str, ...], purpose: str, choice: ModelChoice, at: Place
    ) -> Resolution:
        """The guild's profile a place policy names for ``purpose``; missing, it is an
        error for the admin (never a reason to bill another owner)."""
        if choice.profile:
            wanted = purpose_chain(choice.profile)
        else:
            wanted = chain[chain.index(purpose) :]
        profile = await self._first_profile(owner, wanted)
        if profile is None:
            raise LlmConfigError(
                f"the policy of {at} makes {purpose} use {choice}, but {owner} has no "
                f"{wanted[-1]} profile",
                hint=(
                    f"add it with `gigi llm profile set --owner {owner} --purpose {wanted[0]} "
                    f"--credential <label> --model <model id>`, or clear the override with "
                    f"`gigi llm policy channel --guild {owner.id} --place {at.kind}:{at.id} "
                    f"--purpose {purpose} --clear model`"
                ),
            )
        resolution = await self._resolution(profile)
        if choice.model:
            resolution = dataclasses.replace(resolution, model=choice.model)
        return resolution

    async def _resolution(self, profile: ProfileInfo) -> Resolution:
        meta = await self.credential(profile.credential_id)
        if meta is None or meta.info.revoked_at is not None:
            self.cache.drop_secret(profile.credential_id)  # revoked elsewhere: forget the key
            raise revoked(profile)
        cred = meta.info
        return Resolution(
            owner=profile.owner,
            purpose=profile.purpose,
            provider=profile.provider,
            model=profile.model,
            fallback_model=profile.fallback_model,
            credential_id=cred.id,
            credential_label=cred.label,
            base_url=cred.base_url,
            params=profile.params,
        )


def revoked(profile: ProfileInfo) -> CredentialUnusable:
    return CredentialUnusable(
        f"the {profile.purpose} profile of {profile.owner} uses credential "
        f"{profile.credential_label!r}, which was revoked",
        hint=f"run `gigi llm profile set --owner {profile.owner} --purpose "
        f"{profile.purpose} --credential <active label> --model {profile.model}`",
    )


def nothing_to_resolve(
    guild_id: str | None,
    chain: Sequence[str],
    owners: list[Owner],
    policy: GuildPolicy,
    tenant_on: bool,
) -> NothingToResolve:
    """Tell an admin exactly which two commands make this request work."""
    purpose = chain[-1]  # the general purpose: one profile for it serves every slot above
    checked = ", ".join(str(o) for o in owners) or "nobody"
    state = (
        f"checked: {checked}; personal keys: {policy.personal_keys}; "
        f"tenant fallback: {'on' if tenant_on else 'off'}"
    )
    owner = f"guild:{guild_id}" if guild_id else "tenant"
    steps = (
        f"`gigi llm credential add --owner {owner} --provider <provider> --label <label> "
        f"--api-key-env <VAR>`, then `gigi llm profile set --owner {owner} --purpose {purpose} "
        f"--credential <label> --model <model id>`"
    )
    if not guild_id:
        steps += f" and set {TENANT_FALLBACK_ENV}=1"
    where = f"guild {guild_id}" if guild_id else "requests outside a guild"
    asked = f"asked for {', then '.join(chain[:-1])}; " if len(chain) > 1 else ""
    fix = f"an admin can run {steps}"
    # Where the operator types: a local fake model tries Gigi without an account.
    local = f"{fix}; to try it without an account, run `gigi dev fake-provider`"
    return NothingToResolve(
        f"no {purpose} model is configured for {where} ({asked}{state})",
        hint=Hint(fix, shell=local, console=local),
    )
