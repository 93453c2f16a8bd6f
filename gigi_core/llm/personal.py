"""A member's own provider keys (owner ``user:<id>``) and the choices that go with them.

Every surface (Discord, the console, ``gigi llm key``) calls these: a member manages only
their own keys and needs no capability for it; whether a key is *used* is the guild's
policy (``resolve.py``). The billing choice (``server`` or ``me``) is remembered per member
and guild, and so is the member's acknowledgement that guild context (memory, knowledge,
channel history) may be sent to their own provider: until then it is left out.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from sqlalchemy import delete, select

from gigi_core.errors import GigiError
from gigi_core.llm import url_guard
from gigi_core.llm.records import CredentialInfo, LlmConfigError, Owner, ProfileInfo
from gigi_core.store.personal_tables import LlmBillingChoice, LlmContextDisclosure
from gigi_core.store.tables import utcnow

if TYPE_CHECKING:
    from collections.abc import Sequence

    from gigi_core.llm.channel_policy import Place
    from gigi_core.llm.service import CredentialTest, LlmService

Choice = Literal["server", "me"]
CHOICES: tuple[str, ...] = ("server", "me")
#: The purposes ``prefer`` points at the chosen key: ``chat`` serves every answer slot
#: (``respond``, ``extract``, ...) through ``purpose_chain``. Never ``embedding``: shared
#: memory and knowledge vectors are always made with the server's key.
PREFERRED_PURPOSES: tuple[str, ...] = ("chat",)
#: What a reply says when guild context was left out of a run billed to the member's key.
DISCLOSURE_NOTE = (
    "This answer was billed to your personal key, so the server's context (memory, "
    "knowledge, channel history) was left out. To include it, confirm once with "
    "`/llm key disclose` that it may be sent to your provider."
)
#: What guild context a personal key would carry, for the disclosure a member confirms.
DISCLOSED = (
    "the server's memory and knowledge entries that match your request, recent messages "
    "of the channel when you ask for them, earlier turns of the conversation, and the "
    "instructions the server's admins wrote for the channel"
)


#: A member may test their keys once in this many seconds: nobody hammers a provider
#: through Gigi (its address is the one a provider would block).
TEST_INTERVAL = 10.0
#: Active keys one member may hold: a member cannot fill the store with sealed keys.
MAX_KEYS = 10
#: The guard a member's base URL passes (``url_guard``): kept here for the surfaces and
#: the tests that import it from this module.
LOCAL_URLS_ENV = url_guard.LOCAL_URLS_ENV
check_member_url = url_guard.check_url


def check_choice(billing: str) -> Choice:
    if billing not in CHOICES:
        raise LlmConfigError(
            f"invalid billing choice {billing!r}", hint="use server (the server pays) or me"
        )
    return billing  # type: ignore[return-value]


def disclosure_text(provider: str | None) -> str:
    """What a member reads before guild context first goes to their own provider."""
    where = f"your {provider} account" if provider else "your own provider"
    return (
        f"Requests billed to your personal key are sent to {where}. Here that can include "
        f"{DISCLOSED}. Until you confirm once for this server, that context is left out of "
        "answers billed to your key."
    )


@dataclass(frozen=True)
class BillingDecision:
    """``billing`` goes to every model call of a run; ``withheld``: guild context is left out
    (billed to the member's key in a guild whose disclosure they have not confirmed)."""

    billing: str
    personal: bool = False
    withheld: bool = False


@dataclass(frozen=True)
class KeyView:
    """A member's key as they see it: its listing and the purposes it answers for them."""

    credential: CredentialInfo
    preferred_for: tuple[str, ...]


class PersonalKeys:
    """``kernel.llm.personal``: a thin layer over the service, always for ``user:<id>``."""

    note = DISCLOSURE_NOTE  # for surfaces, which import no kernel module
    check_member_url = staticmethod(check_member_url)

    @staticmethod
    def disclosure(provider: str | None) -> str:
        return disclosure_text(provider)

    def __init__(self, llm: LlmService) -> None:
        self.llm = llm
        self.db = llm.kernel.db
        self.clock = time.monotonic
        self._tested: dict[str, float] = {}  # member -> when their last test started

    # -- keys ----------------------------------------------------------------------------

    async def add(
        self,
        user_id: str,
        provider: str,
        label: str,
        api_key: str,
        *,
        base_url: str | None = None,
        model: str | None = None,
        from_member: bool = False,
    ) -> CredentialInfo:
        """Seal the member's key; with ``model`` it also answers for them at once.
        ``from_member``: typed on a chat surface by someone who is not the operator."""
        owner = Owner.user(user_id)
        if len(await self.llm.list_credentials(owner)) >= MAX_KEYS:
            raise LlmConfigError(
                f"you already have {MAX_KEYS} keys, the most one member may keep",
                hint="remove one you no longer use with /llm key remove",
            )
        cred = await self.llm.add_credential(
            owner, provider, label, api_key, base_url=base_url, by=user_id, checked_url=from_member
        )
        if model:
            await self.prefer(user_id, cred.label, model)
        return cred

    async def keys(self, user_id: str) -> list[KeyView]:
        owner = Owner.user(user_id)
        profiles = await self.llm.list_profiles(owner)
        return [
            KeyView(c, tuple(p.purpose for p in profiles if p.credential_id == c.id))
            for c in await self.llm.list_credentials(owner)
        ]

    async def test(self, user_id: str, label: str, *, model: str | None = None) -> CredentialTest:
        now = self.clock()
        wait = self._tested.get(user_id, now - TEST_INTERVAL) + TEST_INTERVAL - now
        if wait > 0:
            raise GigiError(
                f"you tested a key {TEST_INTERVAL - wait:.0f} s ago",
                hint=f"test again in {max(1, round(wait))} s",
            )
        self._tested[user_id] = now
        return await self.llm.test_credential(Owner.user(user_id), label, model=model, by=user_id)

    async def prefer(self, user_id: str, label: str, model: str) -> list[ProfileInfo]:
        """Point the member's personal profiles at this key and model."""
        owner = Owner.user(user_id)
        return [
            await self.llm.set_profile(owner, purpose, label, model, by=user_id)
            for purpose in PREFERRED_PURPOSES
        ]

    async def remove(self, user_id: str, label: str) -> list[str]:
        """Revoke (the sealed key is destroyed); returns purposes left without a key."""
        return await self.llm.revoke_credential(Owner.user(user_id), label, by=user_id)

    async def preferred(self, user_id: str) -> ProfileInfo | None:
        """The personal profile that answers for the member, if any."""
        found = await self.llm.profiles.get_chain(Owner.user(user_id), PREFERRED_PURPOSES)
        return next((p for p in found.values() if p is not None), None)

    # -- the remembered billing choice ---------------------------------------------------

    async def billing(self, guild_id: str, user_id: str) -> Choice | None:
        async with self.db.session() as s:
            row = await s.get(LlmBillingChoice, (guild_id, user_id))
            return row.billing if row is not None else None  # type: ignore[return-value]

    async def remember_billing(self, guild_id: str, user_id: str, billing: str) -> Choice:
        choice = check_choice(billing)
        async with self.db.session() as s:
            row = await s.get(LlmBillingChoice, (guild_id, user_id))
            if row is None:
                s.add(LlmBillingChoice(guild_id=guild_id, user_id=user_id, billing=choice))
            else:
                row.billing, row.updated_at = choice, utcnow()
        return choice

    async def forget_billing(self, guild_id: str, user_id: str) -> None:
        async with self.db.session() as s:
            await s.execute(
                delete(LlmBillingChoice).where(
                    LlmBillingChoice.guild_id == guild_id, LlmBillingChoice.user_id == user_id
                )
            )

    async def decide(
        self,
        guild_id: str,
        actor: Any,
        *,
        dm: bool,
        in_guild: bool,
        billing: str | None = None,
        purpose: str = "respond",
        places: Sequence[Place] = (),
    ) -> BillingDecision:
        """Who pays for a request: ``billing`` given for it wins, then the member's remembered
        choice here (only where personal keys apply: if the guild no longer allows them, the
        server pays as its policy says), else ``auto``. A choice given for the request that
        cannot apply is passed on, so the model call refuses it with the policy's words."""
        user_id = actor if isinstance(actor, str) else actor.id
        explicit = billing not in (None, "auto")
        if explicit:
            chosen = billing
        elif await self._personal_here(guild_id, dm):  # else no remembered choice applies
            chosen = await self.billing(guild_id, user_id) or "auto"
        else:
            chosen = "auto"
        try:
            found = await self.llm.resolve(  # as the run's calls will: ``places`` too
                guild_id,
                purpose,
                actor,
                dm=dm,
                billing=chosen,  # type: ignore[arg-type]
                places=places,
            )
        except GigiError:
            if explicit or chosen == "auto":
                return BillingDecision(chosen)  # the model call raises the same clear error
            chosen = "auto"
            try:
                found = await self.llm.resolve(guild_id, purpose, actor, dm=dm, places=places)
            except GigiError:
                return BillingDecision(chosen)
        # Pinned for the whole run: a later call of another purpose (planning, a picture)
        # must not find the other owner under ``auto`` (the member's key would then carry
        # context gathered for the server, or the reverse).
        if found.owner.type != "user":
            return BillingDecision("server")
        withheld = in_guild and not await self.acknowledged(guild_id, user_id)
        return BillingDecision("me", personal=True, withheld=withheld)

    async def _personal_here(self, guild_id: str, dm: bool) -> bool:
        """Whether personal keys may answer here, from the cached policy (no read per run)."""
        from gigi_core.llm.resolve import personal_allowed, private_dm

        if private_dm(guild_id, dm):
            return True
        return personal_allowed(await self.llm.resolver.policy(guild_id), dm)

    # -- the guild-context disclosure ----------------------------------------------------

    async def acknowledged(self, guild_id: str, user_id: str) -> bool:
        async with self.db.session() as s:
            return await s.get(LlmContextDisclosure, (guild_id, user_id)) is not None

    async def acknowledge(self, guild_id: str, user_id: str) -> bool:
        """Record the confirmation; False when it was already given (nothing changes)."""
        async with self.db.session() as s:
            if await s.get(LlmContextDisclosure, (guild_id, user_id)) is not None:
                return False
            s.add(LlmContextDisclosure(guild_id=guild_id, user_id=user_id))
        await self.llm._audit("llm.personal.disclosure", Owner.guild(guild_id), user_id, None)
        return True

    async def guilds_acknowledged(self, user_id: str) -> list[str]:
        async with self.db.session() as s:
            rows = await s.scalars(
                select(LlmContextDisclosure.guild_id).where(LlmContextDisclosure.user_id == user_id)
            )
            return sorted(rows)
