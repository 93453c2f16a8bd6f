"""Which models a credential can call: the provider's own models endpoint, cached per key.

Two levels. In memory, per process: what a running bot asks again and again (profile
warnings, autocompletes). In ``llm_model_catalogue``, shared: the CLI is a new process
every time and a fleet has several, and a listing can take a paginated crawl that rate
limits count against, so one fetch serves them all until ``GIGI_LLM_MODELS_TTL`` seconds
(default 3600) have passed; ``refresh`` fetches anew. Both are keyed by the credential's
id *and* key fingerprint, so a rotated key (here or in another process) never gets the old
key's listing, and a revoked credential is refused before any lookup; a change made here
forgets the in-memory entry at once (``forget``) and the next fetch replaces the row.
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy.exc import IntegrityError

from gigi_core.llm import url_guard
from gigi_core.llm.errors import ProviderError
from gigi_core.llm.provider import ModelInfo
from gigi_core.llm.records import LlmConfigError, Owner
from gigi_core.store.catalogue_tables import LlmModelCatalogue

if TYPE_CHECKING:
    from gigi_core.llm.records import CredentialInfo
    from gigi_core.llm.service import LlmService
    from gigi_core.store.db import Database

log = logging.getLogger(__name__)
TTL_ENV = "GIGI_LLM_MODELS_TTL"
DEFAULT_TTL = 3600.0


def ttl_from_env() -> float:
    raw = os.environ.get(TTL_ENV, "").strip()
    if not raw:
        return DEFAULT_TTL
    try:
        value = float(raw)
    except ValueError:
        raise LlmConfigError(
            f"{TTL_ENV}={raw!r} is not a number of seconds", hint=f"set {TTL_ENV}=3600, or 0"
        ) from None
    if value < 0:
        raise LlmConfigError(f"{TTL_ENV}={raw!r} is negative", hint=f"set {TTL_ENV}=0 or more")
    return value


@dataclass(frozen=True)
class Catalogue:
    """One credential's models, when they were fetched and whether this answer came cached."""

    owner: Owner
    label: str
    provider: str
    models: tuple[ModelInfo, ...]
    fetched_at: float
    cached: bool = False

    @property
    def ids(self) -> frozenset[str]:
        return frozenset(m.id for m in self.models)

    def has(self, model: str) -> bool:
        """Whether ``model`` is listed, allowing the prefixes profiles may carry."""
        ids = self.ids
        bare = model.removeprefix("openrouter/").removeprefix("models/")
        return model in ids or bare in ids

    def as_dict(self) -> dict[str, object]:
        return {
            "owner": str(self.owner),
            "credential": self.label,
            "provider": self.provider,
            "cached": self.cached,
            "fetched_at": self.fetched_at,
            "models": [m.as_dict() for m in self.models],
        }


@dataclass
class CatalogueCache:
    """``(credential id, fingerprint) -> (expiry, models)``; ``forget`` on any change."""

    ttl: float = field(default_factory=ttl_from_env)
    entries: dict[tuple[str, str], tuple[float, float, tuple[ModelInfo, ...]]] = field(
        default_factory=dict
    )

    def get(self, key: tuple[str, str]) -> tuple[float, tuple[ModelInfo, ...]] | None:
        found = self.entries.get(key)
        if found is None or found[0] <= time.monotonic():
            self.entries.pop(key, None)
            return None
        return found[1], found[2]

    def put(self, key: tuple[str, str], models: tuple[ModelInfo, ...]) -> float:
        fetched = time.time()
        self.keep(key, fetched, models)
        return fetched

    def keep(self, key: tuple[str, str], fetched: float, models: tuple[ModelInfo, ...]) -> None:
        """Keep a listing fetched at ``fetched`` (Unix time) until its TTL runs out."""
        left = fetched + self.ttl - time.time()
        if left > 0:
            self.entries[key] = (time.monotonic() + left, fetched, models)

    def forget(self, credential_id: str | None = None) -> None:
        """One credential's entries (rotated, revoked), or all (``None``)."""
        if credential_id is None:
            self.entries.clear()
            return
        for key in [k for k in self.entries if k[0] == credential_id]:
            del self.entries[key]


class CatalogueStore:
    """The shared copy: one row per credential, served only for the same key fingerprint."""

    def __init__(self, db: Database) -> None:
        self.db = db

    async def read(
        self, credential_id: str, fingerprint: str, ttl: float
    ) -> tuple[float, tuple[ModelInfo, ...]] | None:
        if ttl <= 0:
            return None
        async with self.db.session() as s:
            row = await s.get(LlmModelCatalogue, credential_id)
            if row is None or row.fingerprint != fingerprint:
                return None
            fetched = _aware(row.fetched_at).timestamp()
            if fetched + ttl <= time.time():
                return None
            return fetched, tuple(_model(m) for m in row.models or [] if isinstance(m, dict))

    async def write(
        self,
        credential_id: str,
        fingerprint: str,
        provider: str,
        models: tuple[ModelInfo, ...],
        fetched: float,
    ) -> None:
        values: dict[str, Any] = {
            "fingerprint": fingerprint,
            "provider": provider,
            "models": [m.as_dict() for m in models],
            "fetched_at": datetime.fromtimestamp(fetched, UTC),
        }
        try:
            async with self.db.session() as s:
                row = await s.get(LlmModelCatalogue, credential_id)
                if row is None:
                    s.add(LlmModelCatalogue(credential_id=credential_id, **values))
                else:
                    for name, value in values.items():
                        setattr(row, name, value)
        except IntegrityError:  # another process stored the same listing a moment ago
            log.info("llm models: another process stored this listing first")


def _aware(when: datetime) -> datetime:
    return when if when.tzinfo else when.replace(tzinfo=UTC)  # SQLite: naive UTC


def _model(data: dict[str, Any]) -> ModelInfo:
    def number(name: str) -> int | None:
        value = data.get(name)
        return value if isinstance(value, int) else None

    return ModelInfo(
        id=str(data.get("id", "")),
        display_name=data.get("display_name")
        if isinstance(data.get("display_name"), str)
        else None,
        created=data.get("created") if isinstance(data.get("created"), str) else None,
        context_window=number("context_window"),
        output_limit=number("output_limit"),
        kinds=tuple(k for k in data.get("kinds") or () if isinstance(k, str)),
    )


async def cached_models(llm: LlmService, owner: Owner, label: str) -> Catalogue | None:
    """The listing already cached for ``label`` (memory, then the table), else None: never
    asks the provider, so setting a profile never waits on (or fails with) a listing."""
    cred = await credential_for(llm, owner, label)
    meta = await llm.resolver.credential(cred.id)
    if meta is None or meta.info.revoked_at is not None:
        return None
    return await _cached(llm, owner, cred, meta.fingerprint)


async def _cached(
    llm: LlmService, owner: Owner, cred: CredentialInfo, fingerprint: str
) -> Catalogue | None:
    cache_key = (cred.id, fingerprint)
    hit = llm.catalogue.get(cache_key)
    if hit is None:
        hit = await llm.catalogue_store.read(cred.id, fingerprint, llm.catalogue.ttl)
        if hit is not None:
            llm.catalogue.keep(cache_key, hit[0], hit[1])
    if hit is None:
        return None
    return Catalogue(owner, cred.label, cred.provider, hit[1], hit[0], cached=True)


async def list_models(
    llm: LlmService, owner: Owner, which: str, *, refresh: bool = False
) -> Catalogue:
    """The models of ``owner``'s credential labelled ``which`` (or its only credential for
    the provider called ``which``, or a keyless provider of that name); ``refresh`` skips
    both caches."""
    try:
        cred = await credential_for(llm, owner, which)
    except LlmConfigError:
        keyless = next((p for p in llm.keyless_providers() if p.name == which), None)
        if keyless is None:
            raise
        # A local provider needs no key and lists its own models: nothing to cache.
        models = tuple(sorted(await keyless.list_models(api_key=""), key=lambda m: m.id))
        return Catalogue(owner, keyless.name, keyless.name, models, time.time())
    provider = llm.provider(cred.provider)
    key, meta = await llm.caller.key(cred.id)  # refuses a revoked credential
    cache_key = (cred.id, meta.fingerprint)
    if not refresh:
        found = await _cached(llm, owner, cred, meta.fingerprint)
        if found is not None:
            return found
    try:
        guarded = cred.url_checked and cred.base_url is not None  # added from chat or the web
        with url_guard.guarding(guarded):
            models = tuple(await provider.list_models(api_key=key, base_url=cred.base_url))
    except ProviderError as err:
        if err.error_class == "unsupported":
            err.hint = "this provider has no models endpoint: use the model ids it documents"
        clean = err.rescrubbed((key,))
        if guarded and not url_guard.refused(err):  # the target's body stays unread
            raise ProviderError(
                err.provider,
                url_guard.withheld(err),
                error_class=err.error_class,
                status=err.status,
                hint=clean.hint,
            ) from None
        raise clean from None
    models = tuple(sorted(models, key=lambda m: m.id))
    fetched = llm.catalogue.put(cache_key, models)
    await llm.catalogue_store.write(cred.id, meta.fingerprint, cred.provider, models, fetched)
    log.info("llm models provider=%s count=%d", cred.provider, len(models))
    return Catalogue(owner, cred.label, cred.provider, models, fetched)


async def credential_for(llm: LlmService, owner: Owner, which: str) -> CredentialInfo:
    """The credential labelled ``which``, else the owner's single one for provider ``which``."""
    creds = await llm.list_credentials(owner)
    by_label = [c for c in creds if c.label == which]
    if by_label:
        return by_label[0]
    by_provider = [c for c in creds if c.provider == which]
    if len(by_provider) == 1:
        return by_provider[0]
    labels = ", ".join(sorted(c.label for c in creds)) or "none"
    if by_provider:
        raise LlmConfigError(
            f"{owner} has {len(by_provider)} credentials for {which}",
            hint=f"name one by its label: {', '.join(sorted(c.label for c in by_provider))}",
        )
    raise LlmConfigError(
        f"{owner} has no active credential labelled {which!r} nor one for a provider of "
        f"that name (its credentials: {labels})",
        hint="give a credential label or a provider name from `gigi llm credential list`",
    )


async def model_warning(
    llm: LlmService, owner: Owner, label: str, model: str, *, see: str | None = None
) -> str | None:
    """A warning when ``label``'s cached listing lacks ``model``; None without a listing.

    Never a refusal: catalogues lag behind new and private models. Only a listing already
    fetched (``models``) is read: a profile is set without a call to the provider.
    """
    try:
        catalogue = await cached_models(llm, owner, label)
    except LlmConfigError:
        return None
    if catalogue is None or not catalogue.models or catalogue.has(model):
        return None
    return (
        f"{model!r} is not among the {len(catalogue.models)} models credential "
        f"{label!r} ({catalogue.provider}) lists; it was set anyway (lists lag behind new "
        f"models). See them with {see or f'`gigi llm models --owner {owner} --credential {label}`'}."
    )
