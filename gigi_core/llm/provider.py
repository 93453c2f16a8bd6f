"""The provider port: what a provider plugin implements and declares.

Plugins subclass ``Provider`` and register instances through ``register_providers``;
the runtime only ever talks to this interface, never to a vendor format.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from gigi_core.llm.errors import ProviderError
from gigi_core.llm.types import (
    ChatRequest,
    ChatResponse,
    EmbeddingRequest,
    EmbeddingResponse,
    ImageRequest,
    ImageResponse,
)

if TYPE_CHECKING:
    from gigi_core.llm.client import LlmHttpClient


@dataclass(frozen=True)
class Supports:
    """What a provider can do; the runtime checks this before asking for a feature."""

    tools: bool = True
    structured_output: bool = False
    embeddings: bool = False
    images: bool = False  # image input (vision); a profile's ``images`` param overrides
    reasoning: bool = False
    image_generation: bool = False

    def as_dict(self) -> dict[str, bool]:
        """For ``gigi llm providers --json``."""
        return asdict(self)


@dataclass(frozen=True)
class ModelInfo:
    """One model a credential can call, as the provider's models endpoint lists it.

    Only ids and public facts: listings are shown to admins and cached, never sent to a model.
    """

    id: str
    display_name: str | None = None
    created: str | None = None  # as the provider states it (ISO date or Unix seconds)
    context_window: int | None = None
    output_limit: int | None = None
    #: What the provider says the model does (``chat``, ``embeddings``...), when it says.
    kinds: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["kinds"] = list(self.kinds)
        return out


class Provider(ABC):
    """Base of every LLM provider. ``name`` is the id credentials and profiles refer to.

    ``http`` is created lazily so importing a plugin never imports httpx (CLI cold start).
    A keyless provider (``requires_key = False``, e.g. a local model) is called with
    ``api_key=""``; its ``default_models`` serve purposes no owner configured a profile for.
    """

    name: str = ""
    description: str = ""
    supports: Supports = Supports()
    default_base_url: str | None = None
    requires_base_url: bool = False
    #: False: never needs a stored credential; every call gets ``api_key=""``.
    requires_key: bool = True
    #: purpose -> model id this provider serves when no profile exists (keyless providers only).
    default_models: ClassVar[dict[str, str]] = {}

    def __init__(self, *, http: LlmHttpClient | None = None) -> None:
        self._http = http

    @property
    def http(self) -> LlmHttpClient:
        """The owned client (shared pool, the single retry layer)."""
        if self._http is None:
            from gigi_core.llm.client import LlmHttpClient

            self._http = LlmHttpClient()
        return self._http

    @abstractmethod
    async def chat(
        self, request: ChatRequest, *, api_key: str, base_url: str | None = None
    ) -> ChatResponse:
        """Run one chat call; raise ``ProviderError`` on failure."""

    async def embed(
        self, request: EmbeddingRequest, *, api_key: str, base_url: str | None = None
    ) -> EmbeddingResponse:
        """Embed a batch of texts; providers without embeddings keep this default."""
        raise self.unsupported("embeddings")

    async def list_models(self, *, api_key: str, base_url: str | None = None) -> list[ModelInfo]:
        """Every model ``api_key`` can call, all pages read; optional for a provider plugin.

        Callers go through ``kernel.llm.list_models`` (cached per credential); providers
        without a models endpoint keep this default, which says so.
        """
        raise self.unsupported("model listing")

    async def generate_images(
        self, request: ImageRequest, *, api_key: str, base_url: str | None = None
    ) -> ImageResponse:
        """Draw pictures; providers without image generation keep this default."""
        raise self.unsupported("image generation")

    def base_url_for(self, base_url: str | None) -> str:
        """The base URL to call (given or default), without a trailing slash."""
        url = base_url or self.default_base_url
        if not url:
            raise ProviderError(
                self.name,
                f"provider {self.name!r} needs a base URL",
                error_class="config",
                hint="set --base-url on the credential",
            )
        return url.rstrip("/")

    def unsupported(self, feature: str) -> ProviderError:
        """The error for a feature this provider does not declare."""
        return ProviderError(
            self.name, f"{self.name} does not support {feature}", error_class="unsupported"
        )

    def describe(self) -> dict[str, Any]:
        """Name, description and supports, for listings."""
        return {
            "name": self.name,
            "description": self.description,
            "supports": self.supports.as_dict(),
            "default_base_url": self.default_base_url,
            "requires_key": self.requires_key,
            "default_models": dict(self.default_models),
        }
