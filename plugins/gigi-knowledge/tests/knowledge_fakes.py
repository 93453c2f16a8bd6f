"""A keyless test model for knowledge's tests: chat answers come from a script keyed by the
structured-output name (``knowledge_classify``, ``knowledge_extract``, ...), embeddings are
word vectors (texts sharing words are near). It runs through the kernel's real LLM port
(resolution, usage rows, errors), unlike a mock."""

from __future__ import annotations

import asyncio
import hashlib
import json
import random
from collections.abc import Callable
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

DIMS = 64
Reply = dict[str, Any] | str | Exception | Callable[[ChatRequest], Any]


def word_vector(word: str) -> list[float]:
    rng = random.Random(hashlib.sha256(word.encode()).digest())
    return [rng.gauss(0.0, 1.0) for _ in range(DIMS)]


def text_vector(text: str) -> list[float]:
    total = [0.0] * DIMS
    for word in text.lower().split():
        for i, x in enumerate(word_vector(word.strip(".,:;!?()—-"))):
            total[i] += x
    return total


class KnowledgeFake(Provider):
    name = "kfake"
    supports = Supports(tools=False, embeddings=True)
    requires_key = False
    default_models: ClassVar[dict[str, str]] = {
        "chat": "kfake-chat",
        "routing": "kfake-route",
        "embedding": "kfake-embed",
    }

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.script: dict[str, list[Reply]] = {}
        self.default: dict[str, Reply] = {}
        self.requests: list[ChatRequest] = []
        self.embedded: list[str] = []
        self.hang = False

    def on(self, slot: str, *replies: Reply) -> None:
        self.script.setdefault(slot, []).extend(replies)

    def always(self, slot: str, reply: Reply) -> None:
        self.default[slot] = reply

    def calls(self, slot: str) -> list[ChatRequest]:
        name = f"knowledge_{slot}"
        return [
            r for r in self.requests if r.structured_output and r.structured_output.name == name
        ]

    async def chat(
        self, request: ChatRequest, *, api_key: str, base_url: str | None = None
    ) -> ChatResponse:
        self.requests.append(request)
        if self.hang:
            await asyncio.sleep(3600)
        slot = (
            request.structured_output.name.removeprefix("knowledge_")
            if request.structured_output
            else "chat"
        )
        queue = self.script.get(slot)
        reply: Reply | None = queue.pop(0) if queue else self.default.get(slot)
        if reply is None:
            raise ProviderError(self.name, f"no scripted reply for {slot}", error_class="server")
        if callable(reply) and not isinstance(reply, dict):
            reply = reply(request)
        if isinstance(reply, Exception):
            raise reply
        text = reply if isinstance(reply, str) else json.dumps(reply)
        return ChatResponse(
            provider=self.name, model=request.model, text=text, finish_reason="stop"
        )

    async def embed(
        self, request: EmbeddingRequest, *, api_key: str, base_url: str | None = None
    ) -> EmbeddingResponse:
        self.embedded.extend(request.inputs)
        return EmbeddingResponse(
            provider=self.name,
            model=request.model,
            vectors=[text_vector(t) for t in request.inputs],
            dimension=DIMS,
        )


class KnowledgeFakePlugin:
    def __init__(self) -> None:
        self.provider = KnowledgeFake()

    @hookimpl
    def register_providers(self, register: Any) -> None:
        register(self.provider)


def classify(
    high: bool = True,
    categories: list[str] | None = None,
    entities: list[str] | None = None,
    confidence: float = 0.9,
) -> dict[str, Any]:
    return {
        "categories": categories or (["decision"] if high else ["discussion"]),
        "confidence": confidence,
        "entities": entities or [],
        "is_high_signal": high,
    }


def extraction(**items: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        k: items.get(k, [])
        for k in ("decisions", "actions", "entities", "relationships", "signals")
    }


def decision(
    summary: str, ids: list[str], by: list[str] | None = None, confidence: float = 0.9, **kw: Any
) -> dict[str, Any]:
    return {
        "summary": summary,
        "rationale": kw.get("rationale"),
        "decided_by": by or [],
        "message_ids": ids,
        "confidence": confidence,
        "tags": kw.get("tags", []),
    }


def action(
    description: str,
    ids: list[str],
    owner: str | None = None,
    deadline: str | None = None,
    confidence: float = 0.9,
) -> dict[str, Any]:
    return {
        "description": description,
        "owner_id": owner,
        "owner_name": None,
        "deadline": deadline,
        "message_ids": ids,
        "confidence": confidence,
        "tags": [],
    }


def entity(
    name: str,
    ids: list[str],
    type: str = "service",
    aliases: list[str] | None = None,
    member: str | None = None,
) -> dict[str, Any]:
    return {
        "name": name,
        "type": type,
        "aliases": aliases or [],
        "member_id": member,
        "message_ids": ids,
        "confidence": 0.9,
    }


def relation(source: str, target: str, ids: list[str], rel: str = "depends_on") -> dict[str, Any]:
    return {
        "source": source,
        "target": target,
        "relationship": rel,
        "context": None,
        "message_ids": ids,
        "confidence": 0.8,
    }


def signal(
    summary: str, ids: list[str], type: str = "discussion", participants: list[str] | None = None
) -> dict[str, Any]:
    return {
        "type": type,
        "summary": summary,
        "participants": participants or [],
        "message_ids": ids,
        "confidence": 0.8,
        "tags": [],
    }
