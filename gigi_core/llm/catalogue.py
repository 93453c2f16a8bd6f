"""Which models a credential can call: the provider's own models endpoint, cached per key.

Kept in memory only, per process, no table: a listing is a few kilobytes any process can
fetch again in one request, nothing else depends on it being shared, and a stored copy
would need its own invalidation across processes. Each entry is keyed by the credential's
id *and* key fingerprint, so a rotation (here or in another process) misses at once; a
revoked credential is refused before any lookup; a change made here forgets the entry
(``forget``). Entries expire after ``GIGI_LLM_MODELS_TTL`` seconds (default 3600).
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gigi_core.llm.errors import ProviderError
from gigi_core.llm.provider import ModelInfo
from gigi_core.llm.records import LlmConfigError, Owner

if TYPE_CHECKING:
    from gigi_core.llm.records import CredentialInfo
    from gigi_core.llm.service import LlmService

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
        if self.ttl > 0:
            self.entries[key] = (time.monotonic() + self.ttl, fetched, models)
        return fetched

    def forget(self, credential_id: str | None = None) -> None:
        """One credential's entries (rotated, revoked), or all (``None``)."""
        if credential_id is None:
            self.entries.clear()
            return
        for key in [k for k in self.entries if k[0] == credential_id]:
            del self.entries[key]


async def list_models(
    llm: LlmService, owner: Owner, which: str, *, refresh: bool = False
) -> Catalogue:
    """The models of ``owner``'s credential labelled ``which`` (or its only credential for
    the provider called ``which``); ``refresh`` skips the cache."""
    cred = await credential_for(llm, owner, which)
    provider = llm.provider(cred.provider)
    key, meta = await llm.caller.key(cred.id)  # refuses a revoked credential
    cache_key = (cred.id, meta.fingerprint)
    if not refresh:
        hit = llm.catalogue.get(cache_key)
        if hit is not None:
            return Catalogue(owner, cred.label, cred.provider, hit[1], hit[0], cached=True)
    try:
        models = tuple(await provider.list_models(api_key=key, base_url=cred.base_url))
    except ProviderError as err:
        if err.error_class == "unsupported":
            err.hint = "this provider has no models endpoint: use the model ids it documents"
        raise err.rescrubbed((key,)) from None
    models = tuple(sorted(models, key=lambda m: m.id))
    fetched = llm.catalogue.put(cache_key, models)
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
    """A warning when ``label``'s provider lists models and ``model`` is not among them.

    Never a refusal: catalogues lag behind new and private models. None when the list
    cannot be had (no endpoint, a failure): setting a profile never waits on it to fail.
    """
    try:
        catalogue = await list_models(llm, owner, label)
    except (ProviderError, LlmConfigError) as err:
        log.info("llm models not checked for a profile: %s", type(err).__name__)
        return None
    if not catalogue.models or catalogue.has(model):
        return None
    return (
        f"{model!r} is not among the {len(catalogue.models)} models credential "
        f"{label!r} ({catalogue.provider}) lists; it was set anyway (lists lag behind new "
        f"models). See them with {see or f'`gigi llm models --owner {owner} --credential {label}`'}."
    )
