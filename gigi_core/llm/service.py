"""``kernel.llm``: credentials, model profiles, guild policy, resolution, calls and usage.

Everything that spends money goes through ``chat`` / ``embed`` here: they resolve which
owner pays (``resolve.py``), unseal that owner's key just for the call, try the profile's
explicit fallback model on the *same* credential when the first model fails in a way a
different model could fix, and write a usage event for every provider call. The facts a
call needs are cached (``cache.py``) and every change made here clears them at once; the
call itself runs in ``caller.py``.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gigi_core.llm import calls, failover, url_guard
from gigi_core.llm.budget_cost import most_tokens, output_cap
from gigi_core.llm.budget_port import PluginBudgets
from gigi_core.llm.budget_store import BudgetStore
from gigi_core.llm.budgets import Budgets
from gigi_core.llm.cache import LlmCache
from gigi_core.llm.caller import Call, Caller, chat_fn, check_durability, embed_fn
from gigi_core.llm.catalogue import CatalogueCache, CatalogueStore
from gigi_core.llm.credentials import CredentialStore
from gigi_core.llm.errors import ProviderError
from gigi_core.llm.failover_store import FailoverStore
from gigi_core.llm.policy_admin import PlacePolicies
from gigi_core.llm.profiles import PolicyStore, ProfileStore
from gigi_core.llm.records import (
    CredentialInfo,
    GuildPolicy,
    LlmConfigError,
    Owner,
    ProfileInfo,
    Resolution,
    UsageRow,
)
from gigi_core.llm.resolve import Billing, Resolver
from gigi_core.llm.service_budgets import BudgetAdmin
from gigi_core.llm.service_models import ModelAdmin
from gigi_core.llm.types import (
    ChatRequest,
    ChatResponse,
    EmbeddingRequest,
    EmbeddingResponse,
    Message,
    UserMessage,
)
from gigi_core.llm.usage import UsageLog
from gigi_core.store.audit import AuditRecord

if TYPE_CHECKING:
    from datetime import datetime

    from gigi_core.kernel import Kernel
    from gigi_core.llm.channel_policy import Place
    from gigi_core.llm.personal import PersonalKeys
    from gigi_core.llm.provider import Provider
    from gigi_core.policy.actor import Actor

log = logging.getLogger(__name__)

TEST_PROMPT = "Reply with the single word OK."


@dataclass(frozen=True)
class CredentialTest:
    """The outcome of ``credential test``: the provider's own words on failure."""

    ok: bool
    label: str
    provider: str
    model: str
    latency_ms: float
    error_class: str | None = None
    message: str | None = None


def _owner(owner: Owner | str) -> Owner:
    return owner if isinstance(owner, Owner) else Owner.parse(owner)


class LlmService(ModelAdmin, BudgetAdmin):
    """The LLM layer's front door; ``kernel.llm`` builds one per kernel."""

    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel
        self.credentials = CredentialStore(kernel.db, kernel.sealer)
        self.profiles = ProfileStore(kernel.db)
        self.policies = PolicyStore(kernel.db)
        self.usage_log = UsageLog(kernel.db)
        self.cache = LlmCache()
        self.resolver = Resolver(
            self.profiles, self.policies, self.credentials, self.keyless_providers, self.cache
        )
        self.places = PlacePolicies(self)  # per-place and per-role policies (policy_admin)
        self.resolver.places = self.places.store
        self.budgets = Budgets(kernel.db, self.cache)
        self.budget_store = BudgetStore(kernel.db)
        self.plugin_budgets = PluginBudgets(self)  # a plugin's own allowance (budget_port)
        self.caller = Caller(
            kernel, self.resolver, self.credentials, self.cache, self.provider, self.budgets
        )
        # The resolver's facts, by the kind its cache keys start with: renewed in the
        # background near expiry, so no call waits for the read (``cache.py``).
        self.cache.loaders.update(
            policy=lambda key: self.policies.get(key[1]),
            profile=lambda key: self.profiles.get(Owner(key[1], key[2]), key[3]),
            credential=lambda key: self.credentials.meta(key[1]),
            budgets=lambda key: self.budgets.read(key[1]),
            places=lambda key: self.places.store.read(key[1]),
        )
        self._keyless: tuple[Provider, ...] | None = None
        self.catalogue = CatalogueCache()  # model listings per key (``catalogue``)
        self.catalogue_store = CatalogueStore(kernel.db)  # the listings all processes share
        self.failovers = FailoverStore(kernel.db)  # read after a failure only (``failover``)

    # -- providers ---------------------------------------------------------------------

    def provider(self, name: str) -> Provider:
        """The registered provider called ``name``, or an error listing the registered ones."""
        provider = (
            self.kernel.registry.provider(name) if name in self.kernel.registry.providers else None
        )
        if provider is None:
            known = ", ".join(sorted(self.kernel.registry.providers)) or "none"
            raise LlmConfigError(
                f"no provider is registered as {name!r} (registered: {known})",
                hint="install and load the provider's plugin, e.g. gigi-openai",
            )
        return provider

    def keyless_providers(self) -> tuple[Provider, ...]:
        """Registered providers with ``requires_key = False`` (loaded once, then kept)."""
        if self._keyless is None:
            self._keyless = tuple(
                p
                for p in self.kernel.registry.all_providers()
                if not getattr(p, "requires_key", True)
            )
        return self._keyless

    @functools.cached_property
    def personal(self) -> PersonalKeys:
        """Members' own keys, billing choices and disclosures (``personal.py``)."""
        from gigi_core.llm.personal import PersonalKeys

        return PersonalKeys(self)

    def describe_providers(self) -> list[dict[str, Any]]:
        return [p.describe() for p in self.kernel.registry.all_providers()]

    # -- credentials -------------------------------------------------------------------

    async def add_credential(
        self,
        owner: Owner | str,
        provider: str,
        label: str,
        api_key: str,
        *,
        base_url: str | None = None,
        by: str | None = None,
        checked_url: bool = False,
    ) -> CredentialInfo:
        """Seal and store a key; without GIGI_SECRET_KEY this fails and stores nothing.
        ``checked_url``: added from a surface by a member or guild admin, not the operator:
        the base URL must be public now and at every call (``url_guard``)."""
        owner = _owner(owner)
        chosen = self.provider(provider)
        if chosen.requires_base_url and not base_url:
            raise LlmConfigError(
                f"provider {provider!r} needs a base URL", hint="pass --base-url URL"
            )
        if checked_url:
            await url_guard.check_url(base_url)
        cred = await self.credentials.add(
            owner, provider, label, api_key, base_url=base_url, by=by, url_checked=checked_url
        )
        self._changed()
        await self._audit("llm.credential.add", owner, by, f"{provider}:{cred.label}")
        return cred

    async def list_credentials(
        self, owner: Owner | str | None = None, *, include_revoked: bool = False
    ) -> list[CredentialInfo]:
        return await self.credentials.find(
            _owner(owner) if owner is not None else None, include_revoked=include_revoked
        )

    async def revoke_credential(
        self, owner: Owner | str, label: str, *, by: str | None = None
    ) -> list[str]:
        """Revoke (the sealed key is destroyed); returns purposes of profiles left unusable."""
        owner = _owner(owner)
        credential_id, purposes = await self.credentials.revoke_returning_id(owner, label, by=by)
        self._changed(credential_id)  # before returning: no later call here gets the key
        await self._audit("llm.credential.revoke", owner, by, label)
        return purposes

    async def rotate_credential(
        self, owner: Owner | str, label: str, api_key: str, *, by: str | None = None
    ) -> CredentialInfo:
        """Replace a credential's key in place; no call that starts after this returns uses
        the old key in this process; other processes hear of it through the change feed
        (PostgreSQL) or their cache TTL."""
        owner = _owner(owner)
        cred = await self.credentials.rotate(owner, label, api_key, by=by)
        self._changed(cred.id)
        await self._audit("llm.credential.rotate", owner, by, label)
        return cred

    async def test_credential(
        self, owner: Owner | str, label: str, *, model: str | None = None, by: str | None = None
    ) -> CredentialTest:
        """One tiny real call with the key; records the outcome on the credential."""
        owner = _owner(owner)
        cred = await self.credentials.get(owner, label)
        profiles = [p for p in await self.profiles.find(owner) if p.credential_id == cred.id]
        # Prefer a chat-like profile's model; an embedding-only credential is tested by embedding.
        profile = next((p for p in profiles if p.purpose != "embedding"), None)
        embed = model is None and profile is None and bool(profiles)
        if model is not None:
            chosen_model = model
        elif profile is not None or profiles:
            chosen_model = (profile or profiles[0]).model
        else:
            raise LlmConfigError(
                f"no profile uses credential {label!r}, so there is no model to test with",
                hint="pass --model <model id>",
            )
        resolution = Resolution(
            owner=owner,
            purpose="test",
            provider=cred.provider,
            model=chosen_model,
            fallback_model=None,
            credential_id=cred.id,
            credential_label=cred.label,
            base_url=cred.base_url,
        )
        started = time.perf_counter()
        try:
            if embed:
                request = EmbeddingRequest(model=chosen_model, inputs=["ok"])
                call = embed_fn(request)
            else:
                chat = ChatRequest(
                    model=chosen_model,
                    messages=[UserMessage(content=TEST_PROMPT)],
                    max_output_tokens=16,
                )
                call = chat_fn(chat)
            await self.caller.attempt(resolution, chosen_model, call, {}, tested=True)
        except ProviderError as err:
            return CredentialTest(
                False,
                cred.label,
                cred.provider,
                chosen_model,
                calls.ms(started),
                err.error_class,
                url_guard.withheld(err)
                if cred.url_checked and cred.base_url
                else err.provider_message,
            )
        finally:
            await self._audit("llm.credential.test", owner, by, label)
        return CredentialTest(True, cred.label, cred.provider, chosen_model, calls.ms(started))

    # -- profiles and policy -----------------------------------------------------------

    async def set_profile(
        self,
        owner: Owner | str,
        purpose: str,
        credential_label: str,
        model: str,
        *,
        fallback_model: str | None = None,
        params: dict[str, Any] | None = None,
        enabled: bool = True,
        by: str | None = None,
        budget_fallback_model: str | None = None,
        input_price: float | None = None,
        output_price: float | None = None,
        currency: str | None = None,
    ) -> ProfileInfo:
        """Point ``owner``'s ``purpose`` at one of *its own* credentials and a model id;
        ``budget_fallback_model`` (same credential) answers once a budget is spent; prices
        per million input / output tokens let money budgets count its calls."""
        owner = _owner(owner)
        cred = await self.credentials.get(owner, credential_label)
        provider = self.provider(cred.provider)
        if purpose == "embedding" and not provider.supports.embeddings:
            raise LlmConfigError(f"provider {cred.provider!r} does not support embeddings")
        if purpose == "image" and not provider.supports.image_generation:
            raise LlmConfigError(
                f"provider {cred.provider!r} cannot draw pictures",
                hint="use an openai or gemini credential for the image purpose",
            )
        profile = await self.profiles.set(
            owner,
            purpose,
            credential_label,
            model,
            fallback_model=fallback_model,
            params=params,
            enabled=enabled,
            by=by,
            budget_fallback_model=budget_fallback_model,
            input_price=input_price,
            output_price=output_price,
            currency=currency,
        )
        self._changed()
        await self._audit("llm.profile.set", owner, by, purpose)
        return profile

    async def remove_profile(
        self, owner: Owner | str, purpose: str, *, by: str | None = None
    ) -> bool:
        """Delete ``owner``'s profile for ``purpose`` (its credential stays); False: none."""
        owner = _owner(owner)
        removed = await self.profiles.remove(owner, purpose)
        if removed:
            self._changed()
            await self._audit("llm.profile.remove", owner, by, purpose)
        return removed

    async def list_profiles(self, owner: Owner | str | None = None) -> list[ProfileInfo]:
        return await self.profiles.find(_owner(owner) if owner is not None else None)

    async def policy(self, guild_id: str) -> GuildPolicy:
        return await self.policies.get(guild_id)

    async def set_policy(
        self,
        guild_id: str,
        *,
        personal_keys: str | None = None,
        tenant_fallback: bool | None = None,
        by: str | None = None,
    ) -> GuildPolicy:
        policy = await self.policies.set(
            guild_id, personal_keys=personal_keys, tenant_fallback=tenant_fallback, by=by
        )
        self._changed()
        await self._audit("llm.policy.set", Owner.guild(guild_id), by, None)
        return policy

    def _changed(self, credential_id: str | None = None) -> None:
        """Forget cached resolution here at once, and tell the other processes."""
        from gigi_core.store.changes import Change

        self.catalogue.forget(credential_id)
        if credential_id is None:
            self.cache.clear()
        else:
            self.cache.retire(credential_id)
        self.kernel.changes.tell(Change("llm", None, {"credential": credential_id}))

    def forget(self) -> None:
        """Rows went behind the stores' back (a privacy delete, a guild purge): every fact
        and unsealed key is dropped, and a call begun before this never keeps or uses one."""
        self.cache.retire_all()
        self._changed()

    # -- resolution and calls ----------------------------------------------------------

    async def resolve(
        self,
        guild_id: str | None,
        purpose: str,
        actor: Actor | str | None,
        *,
        dm: bool = False,
        billing: Billing = "auto",
        places: Sequence[Place] = (),
    ) -> Resolution:
        """Which owner's profile serves this request (``gigi_core.llm.resolve``)."""
        return await self.resolver.resolve(
            guild_id, purpose, calls.actor_id(actor), dm=dm, billing=billing, places=places
        )

    async def chat(
        self,
        request_or_messages: ChatRequest | Sequence[Message | dict[str, Any]],
        *,
        guild_id: str | None,
        actor: Actor | str | None,
        channel_id: str | None = None,
        purpose: str = "chat",
        dm: bool = False,
        billing: Billing = "auto",
        request_id: str | None = None,
        durability: str | None = None,
        places: Sequence[Place] = (),
    ) -> ChatResponse:
        """Resolve, call, maybe fall back on the same key, record usage; the profile's model wins.

        ``durability`` is the calling run's (``step``, ``turn``, ``deferred``): it decides
        when the usage rows are written (``gigi_core.llm.caller``). Without it they are
        committed before this returns.
        """
        durability = check_durability(durability)
        resolution = await self.resolve(
            guild_id, purpose, actor, dm=dm, billing=billing, places=places
        )
        where = calls.where(request_id, actor, guild_id, channel_id, places)
        await self.places.check_roles(resolution, where)  # a role policy may refuse the model
        if isinstance(request_or_messages, ChatRequest):
            request = request_or_messages.model_copy(update={"model": resolution.model})
        else:
            request = ChatRequest(model=resolution.model, messages=list(request_or_messages))
        request = calls.apply_params(request, resolution.params)
        if await self._budgeted(resolution, where):
            if request.max_output_tokens is None:  # a cap makes the most it may cost known
                request = request.model_copy(update={"max_output_tokens": output_cap()})
            where["most"] = most_tokens(request)
            where["most_out"] = request.max_output_tokens  # money budgets price it apart

        def make(model: str) -> Call:  # the fallback model gets its own copy
            same = model == request.model
            return chat_fn(request if same else request.model_copy(update={"model": model}))

        return await failover.call(self, resolution, make, where, durability)

    async def embed(
        self,
        texts_or_request: EmbeddingRequest | Sequence[str],
        *,
        guild_id: str | None,
        actor: Actor | str | None,
        channel_id: str | None = None,
        purpose: str = "embedding",
        dm: bool = False,
        billing: Billing = "auto",
        request_id: str | None = None,
        durability: str | None = None,
        places: Sequence[Place] = (),
    ) -> EmbeddingResponse:
        """Embed with the resolved embedding profile; same fallback and usage rules as chat
        (``places``: the place chain, for the channel budgets that cover it)."""
        durability = check_durability(durability)
        resolution = await self.resolve(guild_id, purpose, actor, dm=dm, billing=billing)
        if isinstance(texts_or_request, EmbeddingRequest):
            base = texts_or_request
        else:
            base = EmbeddingRequest(model=resolution.model, inputs=list(texts_or_request))
        where = calls.where(request_id, actor, guild_id, channel_id, places)
        if await self._budgeted(resolution, where):
            where["most"] = most_tokens(base)
            where["most_out"] = 0

        def make(model: str) -> Call:
            return embed_fn(base.model_copy(update={"model": model}))

        return await failover.call(self, resolution, make, where, durability)

    async def generate_images(self, request_or_prompt: Any, **where: Any) -> Any:
        """Draw pictures with the ``image`` profile (``gigi_core.llm.image_calls``)."""
        from gigi_core.llm.image_calls import generate_images

        return await generate_images(self, request_or_prompt, **where)

    async def close(self) -> None:
        """Before the database closes: queued settles land and budget leases go back, then
        the budget alerts the settles claimed are posted (bounded), not lost at shutdown."""
        await self.budgets.close()  # drains the writer, then gives this process's leases back
        await self.caller.alerts.close()

    @property
    def unrecorded(self) -> int:
        """Usage rows of ``deferred`` calls lost to a failed write after their reply."""
        return self.caller.unrecorded

    async def usage(self, guild_id: str, since: datetime | None = None) -> list[UsageRow]:
        return await self.usage_log.summary(guild_id, since)

    # -- internals ---------------------------------------------------------------------

    async def _audit(self, kind: str, owner: Owner, by: str | None, action: str | None) -> None:
        await self.kernel.audit.record(
            AuditRecord(
                kind=kind,
                status="ok",
                actor_id=by,
                guild_id=owner.id if owner.type == "guild" else None,
                action=action,
            )
        )
