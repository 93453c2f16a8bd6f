"""A keyless embedder for memory's tests that can fail on purpose or switch its model.

Each word maps to a fixed pseudo-random unit vector (seeded by the word), a text to the sum
of its words: texts sharing words are near, others nearly orthogonal. Unlike a mock it runs
through the kernel's real port (resolution, usage rows, errors).
"""

from __future__ import annotations

import hashlib
import random
from typing import Any, ClassVar

from gigi_core import hookimpl
from gigi_core.llm import (
    ChatRequest,
    ChatResponse,
    EmbeddingRequest,
    EmbeddingResponse,
    Provider,
    ProviderError,
    Supports,
)


def word_vector(word: str, dims: int) -> list[float]:
    rng = random.Random(hashlib.sha256(word.encode()).digest())
    return [rng.gauss(0.0, 1.0) for _ in range(dims)]


class FlakyEmbedder(Provider):
    name = "flaky"
    supports = Supports(tools=False, embeddings=True)
    requires_key = False
    default_models: ClassVar[dict[str, str]] = {"embedding": "words-256"}

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.failures = 0  # the next N calls raise a server error
        self.calls = 0
        self.default_models = {"embedding": "words-256"}

    def use_model(self, model: str) -> None:
        self.default_models = {"embedding": model}

    async def chat(
        self, request: ChatRequest, *, api_key: str, base_url: str | None = None
    ) -> ChatResponse:
        raise self.unsupported("chat")

    async def embed(
        self, request: EmbeddingRequest, *, api_key: str, base_url: str | None = None
    ) -> EmbeddingResponse:
        self.calls += 1
        if self.failures:
            self.failures -= 1
            raise ProviderError(self.name, "embedder down (test)", error_class="server")
        dims = int(request.model.rsplit("-", 1)[1])
        vectors = []
        for text in request.inputs:
            total = [0.0] * dims
            for word in text.lower().split():
                for i, x in enumerate(word_vector(word.strip(".,:;!?"), dims)):
                    total[i] += x
            vectors.append(total)
        return EmbeddingResponse(
            provider=self.name, model=request.model, vectors=vectors, dimension=dims
        )


class FlakyEmbedderPlugin:
    def __init__(self) -> None:
        self.provider = FlakyEmbedder()

    @hookimpl
    def register_providers(self, register: Any) -> None:
        register(self.provider)
