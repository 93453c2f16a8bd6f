"""Extensions of the shared FakeGemini that this plugin's tests need (candidates for gigi_core).

``SizedFakeGemini`` honours ``outputDimensionality`` in batchEmbedContents the way the
real API does (the shared fake always answers ``embedding_dimension`` values).
"""

from __future__ import annotations

from typing import Any

from gigi_core.testing.fake_providers import FakeGemini, RecordedRequest, Reply, fake_vector

API_KEY = "AIza-test-key-1234"


class SizedFakeGemini(FakeGemini):
    """FakeGemini whose default embeddings use each request's ``outputDimensionality``."""

    def default_reply(self, request: RecordedRequest) -> Reply:
        body = request.json
        if request.route != "embeddings" or not isinstance(body, dict) or "requests" not in body:
            return super().default_reply(request)
        vectors = [
            {"values": fake_vector(_text(item), _size(item, self))} for item in body["requests"]
        ]
        return Reply(200, {"embeddings": vectors})


def _size(item: Any, fake: FakeGemini) -> int:
    size = item.get("outputDimensionality") if isinstance(item, dict) else None
    return size if isinstance(size, int) and size > 0 else fake.embedding_dimension


def _text(item: Any) -> str:
    try:
        return str(item["content"]["parts"][0]["text"])
    except (KeyError, IndexError, TypeError):
        return ""
