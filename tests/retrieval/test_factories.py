"""``register(name, factory)``: a retriever that needs the kernel is built once per kernel."""

from __future__ import annotations

from gigi_core import hookimpl
from gigi_core.retrieval.engine import retrievers_of
from gigi_core.testing import FakeRetriever, RetrieverPlugin, open_test_kernel


class Bound(FakeRetriever):
    built: list = []

    def __init__(self, kernel) -> None:
        super().__init__("bound", capability="notes.read")
        self.kernel = kernel
        Bound.built.append(kernel)


class Broken:
    name = "broken"

    def __init__(self, kernel) -> None:
        raise RuntimeError("no store")


class Factories(RetrieverPlugin):
    @hookimpl
    def register_retrievers(self, register):
        register("bound", Bound)
        register("broken", Broken)


async def test_a_factory_gets_the_kernel_once_and_a_broken_one_is_never_asked(tmp_path) -> None:
    plugin = Factories(tmp_path, FakeRetriever("bound", capability="notes.read"))
    async with open_test_kernel(tmp_path, extra_plugins=[("notes", plugin)]) as kernel:
        first = retrievers_of(kernel)
        assert isinstance(first["bound"], Bound) and first["bound"].kernel is kernel
        assert "broken" not in first
        assert retrievers_of(kernel) is first and Bound.built == [kernel]
