"""What a model call may cost at most, held on its budgets before it is made: its prompt
estimated on the high side from its JSON, each picture at a fixed estimate, its output cap."""

from __future__ import annotations

import math
import os
from typing import TYPE_CHECKING

from gigi_core.errors import ConfigError

if TYPE_CHECKING:
    from gigi_core.llm.types import ChatRequest, EmbeddingRequest

#: A generous estimate of a prompt's tokens: one per this many bytes of its JSON.
BYTES_PER_TOKEN = 3
#: What one picture in a prompt is held as, whatever its size in bytes: providers bill an
#: image by its pixels, roughly 1-2k tokens (Anthropic about 1,600 at its largest size),
#: not by its base64, which would count a 100 KB picture as some 45,000 tokens.
IMAGE_TOKENS = 1600
OUTPUT_ENV = "GIGI_LLM_BUDGET_OUTPUT_TOKENS"
#: The output cap a budgeted call gets when it sets none: without a cap its cost is unbounded.
DEFAULT_OUTPUT_TOKENS = 4096


def output_cap() -> int:
    """``GIGI_LLM_BUDGET_OUTPUT_TOKENS`` (default 4096); the error names the variable."""
    raw = (os.environ.get(OUTPUT_ENV) or "").strip()
    if not raw:
        return DEFAULT_OUTPUT_TOKENS
    if not raw.isdigit() or int(raw) <= 0:
        raise ConfigError(
            f"{OUTPUT_ENV}: {raw!r} is not a positive number of tokens",
            hint=f"unset {OUTPUT_ENV} or set it to e.g. 4096",
        )
    return int(raw)


def most_tokens(request: ChatRequest | EmbeddingRequest) -> int:
    """The most tokens the call may cost: its prompt, estimated on the high side from its
    JSON (messages, tools, output schema), plus its output cap (none for embeddings)."""
    from gigi_core.llm.types import EmbeddingRequest

    if isinstance(request, EmbeddingRequest):
        size = sum(len(t.encode()) + 4 for t in request.inputs)
        return max(1, math.ceil(size / BYTES_PER_TOKEN))
    request, images = _without_images(request)
    prompt = request.model_dump_json(include={"messages", "tools", "structured_output"})
    output = request.max_output_tokens or output_cap()
    return math.ceil(len(prompt.encode()) / BYTES_PER_TOKEN) + images * IMAGE_TOKENS + output


def _without_images(request: ChatRequest) -> tuple[ChatRequest, int]:
    """The request with its image parts taken out (text is estimated from its bytes),
    and how many there were (each counts ``IMAGE_TOKENS``)."""
    from gigi_core.llm.types import ImagePart

    images = 0
    messages = []
    for message in request.messages:
        content = getattr(message, "content", None)
        if isinstance(content, list):
            kept = [p for p in content if not isinstance(p, ImagePart)]
            if len(kept) != len(content):
                images += len(content) - len(kept)
                message = message.model_copy(update={"content": kept})
        messages.append(message)
    if not images:
        return request, 0
    return request.model_copy(update={"messages": messages}), images
