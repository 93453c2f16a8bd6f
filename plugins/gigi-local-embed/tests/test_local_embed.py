"""The local embedder: offline, keyless, normalised 256-d vectors through the kernel's port."""

from __future__ import annotations

import math
import subprocess
import sys
import textwrap

import pytest
from gigi_local_embed import DIMENSIONS, MODEL_ID, LocalEmbedProvider

from gigi_core.llm import ChatRequest, EmbeddingRequest, ProviderError, UserMessage
from gigi_core.testing import open_test_kernel


def _cos(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


async def test_embeds_without_a_key_or_profile_and_records_usage(tmp_path) -> None:
    async with open_test_kernel(tmp_path, plugins=["local-embed"]) as kernel:
        reply = await kernel.llm.embed(
            ["the release ships on friday", "we ship the release friday", "my cat likes fish"],
            guild_id="g1",
            actor=None,
            billing="server",
        )
        assert reply.provider == "local" and reply.model == MODEL_ID
        assert reply.dimension == DIMENSIONS == 256
        assert all(len(v) == 256 for v in reply.vectors)
        assert all(math.isclose(_cos(v, v), 1.0, rel_tol=1e-4) for v in reply.vectors)
        same, other = (
            _cos(reply.vectors[0], reply.vectors[1]),
            _cos(reply.vectors[0], reply.vectors[2]),
        )
        assert same > other + 0.2  # related sentences are nearer than unrelated ones
        (row,) = await kernel.llm.usage("g1")
        assert (row.provider, row.model, row.purpose, row.calls) == (
            "local",
            MODEL_ID,
            "embedding",
            1,
        )


async def test_the_model_loads_once_and_off_the_event_loop(monkeypatch) -> None:
    import threading

    from gigi_local_embed import provider as module

    loads: list[str] = []
    real = module.load_model

    def counting() -> object:
        loads.append(threading.current_thread().name)
        return real()

    monkeypatch.setattr(module, "_MODEL", None)
    monkeypatch.setattr(module, "load_model", counting)
    provider = LocalEmbedProvider()
    assert provider._model is None  # constructing (plugin load) costs nothing
    request = EmbeddingRequest(model=MODEL_ID, inputs=["hello"])
    first = await provider.embed(request, api_key="")
    second = await LocalEmbedProvider().embed(request, api_key="")  # another kernel's instance
    assert first.vectors == second.vectors
    assert len(loads) == 1 and loads[0] != threading.main_thread().name


async def test_a_short_text_embeds_on_the_loop_once_loaded_a_batch_on_a_thread(
    monkeypatch,
) -> None:
    """A search query (short, model loaded) skips the thread hop; the vectors are the same."""
    import asyncio

    from gigi_local_embed import provider as module

    provider = LocalEmbedProvider()
    query = EmbeddingRequest(model=MODEL_ID, inputs=["what did we decide about the release"])
    threaded = await provider.embed(query, api_key="")  # loads the model (on a thread)
    hops: list[int] = []
    real = asyncio.to_thread

    async def counting(fn, *args):
        hops.append(len(args[0]))
        return await real(fn, *args)

    monkeypatch.setattr(module.asyncio, "to_thread", counting)
    inline = await provider.embed(query, api_key="")
    assert hops == [] and inline.vectors == threaded.vectors
    batch = EmbeddingRequest(model=MODEL_ID, inputs=["x" * 600, "y" * 600])
    await provider.embed(batch, api_key="")
    assert hops == [2]  # over INLINE_CHARS: off the loop


async def test_a_text_without_known_tokens_embeds_to_zeros_not_nan() -> None:
    reply = await LocalEmbedProvider().embed(
        EmbeddingRequest(model=MODEL_ID, inputs=["", "x" * 50_000]), api_key=""
    )
    assert reply.vectors[0] == [0.0] * 256
    assert all(not math.isnan(x) for x in reply.vectors[1])


async def test_chat_and_other_models_are_refused_with_the_ports_errors() -> None:
    provider = LocalEmbedProvider()
    with pytest.raises(ProviderError) as chat:
        await provider.chat(
            ChatRequest(model=MODEL_ID, messages=[UserMessage(content="hi")]), api_key=""
        )
    assert chat.value.error_class == "unsupported"
    with pytest.raises(ProviderError) as model:
        await provider.embed(
            EmbeddingRequest(model="text-embedding-3-small", inputs=["a"]), api_key=""
        )
    assert model.value.error_class == "config"
    assert provider.describe()["requires_key"] is False
    assert provider.describe()["supports"]["embeddings"] is True


def test_it_runs_with_the_network_blocked() -> None:
    """In a fresh interpreter every connect and name lookup fails before anything imports."""
    script = textwrap.dedent(
        """
        import asyncio, socket
        def refuse(*a, **k):
            raise OSError("network blocked by the test")
        socket.socket.connect = refuse
        socket.socket.connect_ex = refuse
        socket.create_connection = refuse
        socket.getaddrinfo = refuse
        from gigi_core.llm import EmbeddingRequest
        from gigi_local_embed import MODEL_ID, LocalEmbedProvider
        reply = asyncio.run(LocalEmbedProvider().embed(
            EmbeddingRequest(model=MODEL_ID, inputs=["offline works"]), api_key=""))
        print(len(reply.vectors[0]))
        """
    )
    env = {"HF_HUB_OFFLINE": "0", "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=env
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "256"
