"""The validated-manifest cache is used by `Kernel.open` and the test kernel, and a changed
file is always validated again (its errors as good as without a cache)."""

from __future__ import annotations

import pytest

from gigi_core.errors import ManifestError
from gigi_core.kernel import Kernel
from gigi_core.manifest import loader
from gigi_core.manifest.cache import ManifestCache, clear_memory
from gigi_core.store.sealing import Sealer, generate_key
from gigi_core.testing import open_test_kernel
from tests.hardening.plugin_kit import Kit
from tests.plugin_factory import MANIFEST


@pytest.fixture
def validations(monkeypatch) -> list[str]:
    """The manifests that were actually parsed and validated (cache misses)."""
    seen: list[str] = []
    original = loader._validate

    def counted(name, *args):
        seen.append(name)
        return original(name, *args)

    monkeypatch.setattr(loader, "_validate", counted)
    return seen


async def test_kernel_open_caches_manifests_and_revalidates_a_changed_file(
    database_url, tmp_path, plugin_factory, validations
) -> None:
    plugin_factory.make("alpha")
    manifest = plugin_factory.root / "gigi_test_alpha" / "gigi.yaml"
    home = tmp_path / "home"

    async def open_kernel() -> Kernel:
        return await Kernel.open(database_url, home, load=["alpha"], sealer=Sealer(generate_key()))

    clear_memory()
    async with await open_kernel() as kernel:
        assert kernel.registry.actions["alpha.echo"].description == "Echo the text back."
    assert str(manifest) in validations
    assert list((home / "cache" / "manifests").glob("*.json"))  # the file layer, as the CLI's

    validations.clear()
    clear_memory()  # a new process: only the files under GIGI_HOME remain
    async with await open_kernel():
        pass
    assert validations == []

    manifest.write_text(MANIFEST.format(name="alpha").replace("Echo the text", "Say the text"))
    async with await open_kernel() as kernel:
        assert kernel.registry.actions["alpha.echo"].description == "Say the text back."
    assert validations == [str(manifest)]

    manifest.write_text(MANIFEST.format(name="alpha").replace("safety: read_only", "safety: odd"))
    async with await open_kernel() as kernel:
        record = kernel.registry.records["alpha"]
    assert record.status == "failed"
    assert f"{manifest}:13: actions.0.safety: Input should be" in (record.error or "")


async def test_test_kernels_share_the_memory_layer(tmp_path, validations) -> None:
    """Every test kernel of a process validates a manifest it already validated only once."""
    kit = Kit(tmp_path)
    clear_memory()
    for _ in range(3):
        async with open_test_kernel(tmp_path, plugins=[], extra_plugins=[("kit", kit)]) as k:
            assert "kit.echo" in k.registry.actions
    assert validations.count(str(kit.path)) == 1


def test_lower_yaml_limits_are_a_new_key(tmp_path, monkeypatch) -> None:
    """A file accepted under the default limits is refused, not served, under lower ones."""
    path = tmp_path / "gigi.yaml"
    text = (
        MANIFEST.format(name="alpha")
        .replace("description: Echo the text back.", "description: &d Echo the text back.")
        .replace("args: {type: object,", "args: {type: object, x-copies: [*d, *d],")
    )
    path.write_text(text)
    cache = ManifestCache(tmp_path / "cache")
    assert loader.load_manifest(path, cache=cache).manifest.name == "alpha"
    monkeypatch.setenv("GIGI_YAML_MAX_ALIASES", "1")
    with pytest.raises(ManifestError, match="GIGI_YAML_MAX_ALIASES"):
        loader.load_manifest(path, cache=cache)
