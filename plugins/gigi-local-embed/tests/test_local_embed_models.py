"""The local embedder lists its one model through the port, without a key or a credential."""

from __future__ import annotations

from gigi_local_embed import MODEL_ID

from gigi_core.testing import open_test_kernel


async def test_the_local_model_is_listed_by_provider_name_without_a_credential(tmp_path) -> None:
    async with open_test_kernel(tmp_path, plugins=["local-embed"]) as kernel:
        found = await kernel.llm.list_models("guild:g1", "local")
        assert [m.id for m in found.models] == [MODEL_ID]
        assert found.models[0].kinds == ("embeddings",)
        assert (found.provider, found.label, found.cached) == ("local", "local", False)
