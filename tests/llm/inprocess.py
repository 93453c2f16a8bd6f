"""An in-process provider that needs a key, for the fast-path tests: it records every call."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import event

from gigi_core import hookimpl
from gigi_core.kernel import Kernel
from gigi_core.llm import ChatRequest, ChatResponse, Provider, ProviderError, Usage
from gigi_core.testing import open_test_kernel

OLD_KEY = "sk-inproc-OLD-5b7d9f1a3c"
NEW_KEY = "sk-inproc-NEW-8e0c2a4b6d"
HI = [{"role": "user", "content": "hi"}]


class KeyedEcho(Provider):
    """Answers with the model id; ``log`` gets ("call", key) as each call starts."""

    name = "keyed-echo"

    def __init__(self) -> None:
        super().__init__()
        self.log: list[tuple[str, str]] = []
        self.gate: asyncio.Event | None = None  # when set, calls wait for it
        self.fail: str | None = None  # an error class to raise

    async def chat(
        self, request: ChatRequest, *, api_key: str, base_url: str | None = None
    ) -> ChatResponse:
        self.log.append(("call", api_key))
        await asyncio.sleep(0)
        if self.gate is not None:
            await self.gate.wait()
        if self.fail is not None:
            raise ProviderError(self.name, f"failed: {self.fail}", error_class=self.fail)  # type: ignore[arg-type]
        return ChatResponse(
            provider=self.name,
            model=request.model,
            text=f"answer from {request.model}",
            finish_reason="stop",
            usage=Usage(input_tokens=3, output_tokens=2),
        )


class EchoPlugin:
    def __init__(self, provider: KeyedEcho) -> None:
        self.provider = provider

    @hookimpl
    def register_providers(self, register: Any) -> None:
        register(self.provider)


@asynccontextmanager
async def echo_kernel(
    home: Path, database_url: str, provider: KeyedEcho, *, secret_key: str | None = None
) -> AsyncIterator[Kernel]:
    async with open_test_kernel(
        home,
        plugins=[],
        extra_plugins=[("echo", EchoPlugin(provider))],
        database_url=database_url,
        secret_key=secret_key,
    ) as kernel:
        yield kernel


async def configure(kernel: Kernel, model: str = "m-1", key: str = OLD_KEY) -> None:
    await kernel.llm.add_credential("guild:g1", "keyed-echo", "main", key)
    await kernel.llm.set_profile("guild:g1", "chat", "main", model)


class Statements:
    """Counts SQL statements on the kernel's engines (the async one and the writer's)."""

    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel
        self.seen: list[str] = []
        self._engines: list[Any] = []

    def _on(self, conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        self.seen.append(statement)

    def __enter__(self) -> Statements:
        writer = self.kernel.db.writer
        engines = [self.kernel.db.engine.sync_engine, getattr(writer, "_engine", None)]
        self._engines = [e for e in engines if e is not None]
        for engine in self._engines:
            event.listen(engine, "before_cursor_execute", self._on)
        return self

    def __exit__(self, *exc: Any) -> None:
        for engine in self._engines:
            event.remove(engine, "before_cursor_execute", self._on)

    def reads(self) -> list[str]:
        return [s for s in self.seen if s.lstrip().upper().startswith("SELECT")]

    def touching(self, table: str, verb: str) -> list[str]:
        return [s for s in self.seen if s.lstrip().upper().startswith(verb) and table in s]
