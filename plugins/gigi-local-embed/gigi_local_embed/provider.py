"""The ``local`` provider: wordllama static embeddings, loaded from the installed wheel.

``wordllama==0.4.0.post1`` ships its ``l2_supercat`` weights and tokenizer inside the
package. ``WordLlama.load`` looks for them under ``cache_dir`` (its default points at the
Hugging Face cache, and it would download there), so the package folder is passed as the
cache and downloads are disabled: a missing file is an error, never a fetch.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any, ClassVar

from gigi_core.llm import (
    ChatRequest,
    ChatResponse,
    EmbeddingRequest,
    EmbeddingResponse,
    ModelInfo,
    Provider,
    ProviderError,
    Supports,
    Usage,
)

MODEL_ID = "wordllama-l2-supercat-256"
DIMENSIONS = 256
MAX_INPUTS = 4096  # texts per call; memory sends batches far below this
MAX_CHARS = 20_000  # per text; longer inputs are cut (a static model averages tokens anyway)
BATCH = 256
INLINE_CHARS = 1_000  # a search query: embedded on the loop (~0.1 ms), not via a thread hop


class LocalEmbedProvider(Provider):
    """Embeddings only, with no key and no network; ``chat`` is unsupported."""

    name = "local"
    description = "Offline embeddings (wordllama l2_supercat, 256-d, inside its wheel); no key."
    supports = Supports(tools=False, embeddings=True)
    requires_key = False
    default_models: ClassVar[dict[str, str]] = {"embedding": MODEL_ID}

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._model: Any = None

    async def chat(
        self, request: ChatRequest, *, api_key: str, base_url: str | None = None
    ) -> ChatResponse:
        raise self.unsupported("chat")

    async def list_models(self, *, api_key: str, base_url: str | None = None) -> list[ModelInfo]:
        """The one model inside the wheel (no endpoint to ask: nothing is downloaded)."""
        return [
            ModelInfo(
                MODEL_ID,
                display_name=f"wordllama l2_supercat ({DIMENSIONS}-d)",
                kinds=("embeddings",),
            )
        ]

    async def embed(
        self, request: EmbeddingRequest, *, api_key: str, base_url: str | None = None
    ) -> EmbeddingResponse:
        if request.model != MODEL_ID:
            raise ProviderError(
                self.name,
                f"the local embedder serves only {MODEL_ID!r}, not {request.model!r}",
                error_class="config",
                hint=f"set the embedding profile's model to {MODEL_ID}",
            )
        if request.dimensions not in (None, DIMENSIONS):
            raise ProviderError(
                self.name,
                f"the local embedder returns {DIMENSIONS} dimensions, not {request.dimensions}",
                error_class="config",
            )
        if len(request.inputs) > MAX_INPUTS:
            raise ProviderError(
                self.name,
                f"at most {MAX_INPUTS} texts per call ({len(request.inputs)} given)",
                error_class="bad_request",
            )
        texts = list(request.inputs)
        if self._model is not None and sum(len(t) for t in texts) <= INLINE_CHARS:
            # A thread hop waits for the GIL (up to its 5 ms switch interval under load)
            # for work that takes a tenth of a millisecond once the model is loaded.
            vectors = self._embed(texts)
        else:
            vectors = await asyncio.to_thread(self._embed, texts)
        return EmbeddingResponse(
            provider=self.name,
            model=MODEL_ID,
            vectors=vectors,
            dimension=DIMENSIONS,
            usage=Usage(),
        )

    # -- off the event loop -------------------------------------------------------------

    def model(self) -> Any:
        """The process's model, loaded on first use (about 0.2-0.6 s), shared by every kernel."""
        if self._model is None:
            self._model = shared_model()
        return self._model

    def _embed(self, texts: list[str]) -> list[list[float]]:
        import numpy as np

        model = self.model()
        raw = model.embed([t[:MAX_CHARS] for t in texts], norm=False, batch_size=BATCH)
        matrix = np.asarray(raw, dtype=np.float32).reshape(len(texts), DIMENSIONS)
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        # A text with no known token embeds to zeros; it stays zeros (never NaN).
        matrix = np.divide(matrix, norms, out=np.zeros_like(matrix), where=norms > 0)
        return matrix.tolist()  # type: ignore[no-any-return]


_MODEL: Any = None
_LOCK = threading.Lock()


def shared_model() -> Any:
    """Load once per process (the weights are read-only, so kernels can share them)."""
    global _MODEL
    with _LOCK:
        if _MODEL is None:
            _MODEL = load_model()
        return _MODEL


def load_model() -> Any:
    """wordllama's bundled model, from the package folder, downloads disabled."""
    try:
        import wordllama
        from wordllama import WordLlama
    except ImportError as exc:  # pragma: no cover - a broken install
        raise ProviderError(
            "local",
            "the local embedder needs the wordllama package",
            error_class="config",
            hint="pip install gigi-local-embed",
        ) from exc
    try:
        return WordLlama.load(
            config="l2_supercat",
            cache_dir=Path(wordllama.__file__).parent,
            dim=DIMENSIONS,
            disable_download=True,
        )
    except Exception as exc:
        raise ProviderError(
            "local",
            f"the local embedding model did not load ({type(exc).__name__})",
            error_class="config",
            hint="reinstall wordllama==0.4.0.post1 (its wheel holds the model)",
        ) from exc
