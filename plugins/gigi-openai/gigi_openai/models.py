"""Model discovery for the OpenAI wire format: ``GET {base}/models`` (OpenAI, OpenRouter and
OpenAI-compatible servers such as Ollama, vLLM or LM Studio all serve it, unpaginated)."""

from __future__ import annotations

from typing import Any

from gigi_core.llm import LlmHttpClient, ModelInfo, ProviderError, as_int


async def list_models(
    http: LlmHttpClient, provider: str, base: str, headers: dict[str, str]
) -> list[ModelInfo]:
    """Every model the key can call, in the server's order; entries without an id are skipped."""
    reply = await http.get_json(f"{base}/models", provider=provider, headers=headers)
    data = reply.body.get("data") if isinstance(reply.body, dict) else None
    if not isinstance(data, list):
        raise ProviderError(
            provider,
            "the models reply has no data list",
            error_class="invalid_response",
            request_id=reply.request_id,
        )
    return [model for item in data if (model := _model(item)) is not None]


def _model(item: Any) -> ModelInfo | None:
    if not isinstance(item, dict) or not isinstance(item.get("id"), str) or not item["id"]:
        return None
    created = item.get("created")
    top = item.get("top_provider") if isinstance(item.get("top_provider"), dict) else {}
    arch = item.get("architecture") if isinstance(item.get("architecture"), dict) else {}
    kinds = arch.get("output_modalities") if isinstance(arch, dict) else None
    return ModelInfo(
        id=item["id"],
        display_name=item["name"] if isinstance(item.get("name"), str) else None,
        created=str(created) if isinstance(created, int | str) else None,
        context_window=as_int(item.get("context_length")),  # OpenRouter's extra facts
        output_limit=as_int(top.get("max_completion_tokens")) if isinstance(top, dict) else None,
        kinds=tuple(k for k in kinds if isinstance(k, str)) if isinstance(kinds, list) else (),
    )
