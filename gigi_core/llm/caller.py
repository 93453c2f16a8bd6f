"""One model call on a resolution: the key, the provider, the fallback model, the usage row.

The fast path every production turn pays: the credential's metadata and its unsealed key
come from ``LlmCache``; the usage row, its rollup and (only when it changed) the
credential's outcome go out in one write through the batching writer. The caller's run
durability decides when:

- ``step``, or no durability (a plain caller): committed before the call returns; a
  failed write fails the call with ``UsageNotRecorded`` (no answer without its usage row).
- ``turn``: attached to the next write the calling task makes (the run journal's, which
  the reply waits for), in the same transaction, or committed alone within
  ``ATTACH_SECONDS``; the run's next awaited write raises if it failed.
- ``deferred``: queued behind the reply, like the run journal's own writes; a failed
  write is logged and counted (``kernel.llm.unrecorded``), since the reply is already out.

In every mode a failed write also clears the cache: the credential outcome it noted may
not have landed.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import math
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any, TypeVar

from gigi_core.errors import GigiError
from gigi_core.llm import calls, url_guard
from gigi_core.llm.budget_alerts import BudgetAlerts
from gigi_core.llm.budget_money import cost
from gigi_core.llm.budgets import BudgetExhausted, Budgets, Hold
from gigi_core.llm.errors import ProviderError
from gigi_core.llm.records import CredentialUnusable, LlmConfigError, Resolution
from gigi_core.llm.types import ChatRequest, ChatResponse, EmbeddingRequest, EmbeddingResponse
from gigi_core.llm.usage import UsageRecord, UsageWrite, event_row, usage_write

if TYPE_CHECKING:
    from gigi_core.kernel import Kernel
    from gigi_core.llm.cache import LlmCache
    from gigi_core.llm.credentials import CredentialMeta, CredentialStore
    from gigi_core.llm.provider import Provider
    from gigi_core.llm.resolve import Resolver

log = logging.getLogger(__name__)
T = TypeVar("T", ChatResponse, EmbeddingResponse)
Call = Callable[["Provider", str, "str | None"], Awaitable[Any]]
DURABILITIES = ("step", "turn", "deferred")
#: How long a ``turn`` usage row waits for the run's next write before going alone.
ATTACH_SECONDS = 0.2


class UsageNotRecorded(GigiError):
    """The call's usage row could not be written; its answer is withheld rather than unbilled."""


def chat_fn(request: ChatRequest) -> Call:
    async def call(provider: Provider, key: str, base_url: str | None) -> ChatResponse:
        return await provider.chat(request, api_key=key, base_url=base_url)

    return call


def embed_fn(request: EmbeddingRequest) -> Call:
    async def call(provider: Provider, key: str, base_url: str | None) -> EmbeddingResponse:
        reply = await provider.embed(request, api_key=key, base_url=base_url)
        return reply.model_copy(update={"requested_model": request.model})

    return call


def spent(result: Any) -> int | None:
    """The tokens a reply cost as its provider reported them (None: it did not say)."""
    usage = getattr(result, "usage", None)
    if usage is None:
        return None
    if usage.total_tokens is not None:
        return int(usage.total_tokens)
    if usage.input_tokens is None and usage.output_tokens is None:
        return None
    return (usage.input_tokens or 0) + (usage.output_tokens or 0)


def spent_money(result: Any, prices: tuple[float, float] | None) -> int | None:
    """What a reply cost in millionths of the profile's currency (None: unknown)."""
    usage = getattr(result, "usage", None)
    if usage is None or prices is None:
        return None
    if usage.input_tokens is None and usage.output_tokens is None:
        total = spent(result)
        return None if total is None else math.ceil(total * max(prices))
    return cost(prices, usage.input_tokens or 0, usage.output_tokens or 0)


def check_durability(durability: str | None) -> str:
    if durability is None:
        return "step"
    if durability not in DURABILITIES:
        raise LlmConfigError(
            f"unknown durability {durability!r}", hint=f"use one of {', '.join(DURABILITIES)}"
        )
    return durability


class Caller:
    """Runs attempts for ``LlmService``; holds nothing but references to its collaborators."""

    def __init__(
        self,
        kernel: Kernel,
        resolver: Resolver,
        credentials: CredentialStore,
        cache: LlmCache,
        provider: Callable[[str], Provider],
        budgets: Budgets,
    ) -> None:
        self.kernel = kernel
        self.budgets = budgets
        self.alerts = BudgetAlerts(kernel, budgets)
        self.resolver = resolver
        self.credentials = credentials
        self.cache = cache
        self.provider = provider
        #: Usage rows of ``deferred`` calls whose write failed after the reply went out.
        self.unrecorded = 0

    def _landed(self, future: asyncio.Future[Any]) -> bool:
        """A queued usage write settled; if it failed, the outcome noted in the cache is
        forgotten with everything else (it may not have landed)."""
        if not future.cancelled() and future.exception() is None:
            return True
        self.cache.clear()
        return False

    def _deferred_landed(self, future: asyncio.Future[Any]) -> None:
        """Behind the reply nobody can be told: count it where operators look (the log and
        ``kernel.llm.unrecorded``)."""
        if not self._landed(future):
            self.unrecorded += 1
            log.error(
                "llm usage row not recorded (deferred, after the reply): %d in this process",
                self.unrecorded,
            )

    def _alert(self, write: Any, future: asyncio.Future[Any]) -> None:
        """The settle committed: post the budget alerts it claimed (none, nearly always)."""
        alerts = getattr(write, "alerts", None)
        if alerts and not future.cancelled() and future.exception() is None:
            self.alerts.announce(alerts)

    async def key(self, credential_id: str) -> tuple[str, CredentialMeta]:
        """The credential's key, checked against revocation and rotation right before use.

        The epoch check comes after the last await: no call that starts after a revoke or
        rotation through this kernel returned gets the old key.
        """
        for _ in range(3):
            epoch = self.cache.epoch(credential_id)
            meta = await self.resolver.credential(credential_id)
            if meta is None or meta.info.revoked_at is not None:
                raise CredentialUnusable(
                    "the credential was revoked",
                    hint="add a new credential and point the profile at it",
                )
            key = self.cache.secret(credential_id, meta.fingerprint)
            if key is None:
                # Calls that miss together unseal once (a revoke or rotation here bumps the
                # epoch: a call after it never joins an unsealing begun before it).
                unseal = functools.partial(
                    self.credentials.open_secret_and_fingerprint, credential_id
                )
                if self.cache.secret_ttl > 0:
                    key, fingerprint = await self.cache.reads.read(
                        ("secret", credential_id, epoch), unseal
                    )
                else:  # keys are not kept: each call unseals its own
                    key, fingerprint = await unseal()
                if fingerprint != meta.fingerprint:  # rotated elsewhere since the read
                    self.cache.clear()
                    continue
                self.cache.keep_secret(credential_id, fingerprint, key, epoch)
            if self.cache.epoch(credential_id) == epoch:
                return key, meta
        raise CredentialUnusable(
            "the credential changed three times while this call was starting",
            hint="try again once the credential is no longer being rotated",
        )

    async def with_fallback(
        self,
        resolution: Resolution,
        make: Callable[[str], Call],
        where: dict[str, Any],
        durability: str,
    ) -> Any:
        try:
            return await self.budgeted(resolution, make, where, durability)
        except ProviderError as first:
            fallback = resolution.fallback_model
            if (
                not fallback
                or fallback == resolution.model
                or first.error_class not in calls.FALLBACK_ON
            ):
                raise
            log.info(
                "llm fallback: %s -> %s on the same credential (%s)",
                resolution.model,
                fallback,
                first.error_class,
            )
            try:
                return await self.attempt(
                    resolution, fallback, make(fallback), where, durability=durability
                )
            except ProviderError as second:
                first.hint = f"fallback model {fallback} also failed: {second.provider_message}"
                raise first from second

    async def budgeted(
        self,
        resolution: Resolution,
        make: Callable[[str], Call],
        where: dict[str, Any],
        durability: str,
    ) -> Any:
        """The profile's model; once a budget refuses it, the profile's cheaper budget
        fallback model on the same credential, if one is set and its budgets have room
        (its usage row says ``failover_reason=budget_exhausted``)."""
        try:
            return await self.attempt(
                resolution, resolution.model, make(resolution.model), where, durability=durability
            )
        except BudgetExhausted as spent:
            cheaper = await self._budget_fallback(resolution)
            if not cheaper or cheaper == resolution.model:
                raise
            if await self._roles_refuse(replace(resolution, model=cheaper), where):
                log.info("llm budget fallback: the member's roles do not allow %s", cheaper)
                raise  # a spent budget never widens what a role may use
            log.info("llm budget fallback: %s -> %s", resolution.model, cheaper)
            moved = {**where, "failover_reason": "budget_exhausted"}
            try:
                return await self.attempt(
                    resolution, cheaper, make(cheaper), moved, durability=durability
                )
            except BudgetExhausted:
                raise spent from None  # the profile's own budget is the one to report

    async def _roles_refuse(self, target: Resolution, where: dict[str, Any]) -> bool:
        """Whether the member's role policy refuses ``target``'s model (admins and calls
        billed to the member's own key are never held)."""
        guild = where.get("guild_id")
        if not guild or target.owner.type == "user" or not where.get("roles"):
            return False
        policies = await self.resolver.place_policies(guild)
        return policies.role_refusal(target, where["roles"], bool(where.get("admin"))) is not None

    async def _budget_fallback(self, resolution: Resolution) -> str | None:
        return (await self._budget_facts(resolution))[0]

    async def _budget_facts(
        self, resolution: Resolution
    ) -> tuple[str | None, tuple[float, float] | None]:
        """The resolution's profile's budget fallback model and prices (cached)."""
        profiles = self.resolver.profiles

        async def read() -> tuple[str | None, tuple[float, float] | None]:
            profile = await profiles.get(resolution.owner, resolution.purpose)
            if profile is None or profile.credential_id != resolution.credential_id:
                return None, None
            prices = None
            if profile.input_price is not None and profile.output_price is not None:
                prices = (profile.input_price, profile.output_price)
            return profile.budget_fallback_model, prices

        key = ("budget_facts", str(resolution.owner), resolution.purpose)
        return await self.cache.fetch(key, read)  # type: ignore[no-any-return]

    async def _reserve(
        self, resolution: Resolution, model: str, where: dict[str, Any]
    ) -> tuple[list[Hold], tuple[float, float] | None]:
        """The call's holds (money budgets count its most tokens at the profile's prices;
        without an output split, all at the higher price) and the prices to settle with."""
        prices = (await self._budget_facts(resolution))[1]
        most, money = where["most"], None
        if prices is not None:
            out = where.get("most_out")
            if out is None:
                money = math.ceil(most * max(prices))
            else:
                money = cost(prices, most - out, out)
        holds = await self.budgets.reserve(
            where["budget_guild"], where, resolution.provider, model, most, money
        )
        return holds, prices

    async def attempt(
        self,
        resolution: Resolution,
        model: str,
        call: Call,
        where: dict[str, Any],
        *,
        tested: bool = False,
        durability: str = "step",
    ) -> Any:
        """One provider call with the resolution's key: usage row and credential outcome."""
        provider = self.provider(resolution.provider)
        meta: CredentialMeta | None = None
        if resolution.keyless or not getattr(provider, "requires_key", True):
            key = ""  # a keyless provider never needs (nor gets) a stored secret
        else:
            key, meta = await self.key(resolution.credential_id)
        record = UsageRecord(
            request_id=where.get("request_id") or uuid.uuid4().hex,
            provider=resolution.provider,
            model=model,
            purpose=resolution.purpose,
            billing_owner_type=resolution.owner.type,
            billing_owner_id=resolution.owner.id,
            status="ok",
            actor_id=where.get("actor_id"),
            guild_id=where.get("guild_id")
            or (resolution.owner.id if resolution.owner.type == "guild" else None),
            channel_id=where.get("channel_id"),
            failover_step=where.get("failover_step"),  # set by ``failover`` when it moved on
            failover_reason=where.get("failover_reason"),
        )
        holds: list[Hold] = []
        prices: tuple[float, float] | None = None
        if "most" in where:  # raises BudgetExhausted, holding nothing, if one cannot cover it
            holds, prices = await self._reserve(resolution, model, where)
        started = time.perf_counter()
        error_class: str | None = None
        result: Any = None
        try:
            with url_guard.guarding(await self._url_checked(resolution, meta)):
                reply = await call(provider, key, resolution.base_url)
            result = await calls.scrubbed_reply(reply, key)
        except ProviderError as err:
            error_class = err.error_class
            raise calls.scrubbed(err, key) from None
        except Exception as exc:  # a provider bug: still one call, still one usage row
            error_class = "internal"
            raise calls.scrubbed_any(exc, key) from None
        except BaseException:  # cancelled mid-call: the attempt is still recorded
            error_class = "cancelled"
            raise
        finally:
            latency = calls.ms(started)
            row = event_row(record)
            row["latency_ms"] = latency
            if error_class is not None:
                row["status"], row["error_class"] = "error", error_class
            elif result is not None:
                usage = result.usage
                row["input_tokens"], row["output_tokens"] = usage.input_tokens, usage.output_tokens
                row["reasoning_tokens"] = usage.reasoning_tokens
                row["cached_tokens"] = usage.cached_input_tokens
            outcome = None
            if meta is not None and error_class != "internal":
                values = meta.outcome(error_class, tested=tested)
                if values is not None:
                    outcome = {"id": meta.info.id, "values": values}
                    self.resolver.noted(meta.after(values))
            write = usage_write([row], outcome)
            if holds:  # settled in the usage row's own transaction
                write.settles = self.budgets.settle_rows(
                    holds,
                    spent(result) if error_class is None else 0,
                    spent_money(result, prices) if error_class is None else 0,
                )
            await self._record(write, durability)
            log.info(
                "llm call provider=%s model=%s purpose=%s billing=%s status=%s "
                "error_class=%s latency_ms=%.0f",
                resolution.provider,
                model,
                resolution.purpose,
                resolution.owner,
                row["status"],
                error_class,
                latency,
            )
        return result

    async def _url_checked(self, resolution: Resolution, meta: CredentialMeta | None) -> bool:
        """Whether the call's credential was added from a surface by a member or guild
        admin with a base URL of their own: its host is then checked, and pinned, as the call
        connects (``url_guard``); a provider's built-in endpoint is the operator's."""
        if meta is None and resolution.credential_id and not resolution.keyless:
            meta = await self.resolver.credential(resolution.credential_id)  # keyless provider
        return meta is not None and meta.info.url_checked and bool(resolution.base_url)

    async def _record(self, write: Any, durability: str) -> None:
        writer = self.kernel.db.writer
        if durability == "deferred":  # behind the reply; a failure is logged by the writer
            future = writer.submit(write)
            if future is None:
                raise UsageNotRecorded("the usage row arrived after the database was closed")
            future.add_done_callback(self._deferred_landed)
            future.add_done_callback(functools.partial(self._alert, write))
            return
        if durability == "turn":  # with the run's next write, which the reply waits for
            try:
                future = writer.attach(write, within=ATTACH_SECONDS, combine=UsageWrite.combine)
            except RuntimeError as exc:  # the database is closed
                raise UsageNotRecorded(str(exc)) from None
            future.add_done_callback(self._landed)  # the turn itself fails on a failure
            future.add_done_callback(functools.partial(self._alert, write))
            return
        try:
            await writer.write(write)  # shielded: a caller giving up does not cancel it
        except Exception as exc:
            self.cache.clear()  # the outcome noted in the cache may not have landed
            log.error("llm usage row not recorded: %s", type(exc).__name__)
            raise UsageNotRecorded(
                f"the usage of this model call could not be recorded "
                f"({type(exc).__name__}), so its answer was withheld",
                hint="check that the database is reachable and has space",
            ) from exc
        alerts = getattr(write, "alerts", None)  # a wrapped write (tests) claims nothing
        if alerts:
            self.alerts.announce(alerts)
