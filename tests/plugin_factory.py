"""Build real installed-looking plugin distributions on sys.path for entry-point tests."""

from __future__ import annotations

import importlib
import sys
import textwrap
from pathlib import Path

import pytest

MANIFEST = """\
manifest_version: 1
plugin:
  name: {name}
  version: 1.2.3
  description: Test plugin {name}.
  data_statement: Stores nothing.
  capabilities:
    - {{name: {name}.use, description: Use it, default: everyone}}
    - {{name: {name}.admin, description: Admin only}}
actions:
  - name: {name}.echo
    description: Echo the text back.
    safety: read_only
    capability: {name}.use
    args: {{type: object, properties: {{text: {{type: string}}}}, required: [text], additionalProperties: false}}
"""

MODULE = """\
from pathlib import Path
from gigi_core import hookimpl

@hookimpl
def register_manifests(register):
    register(Path(__file__).parent / "gigi.yaml")

@hookimpl
def register_tools(register):
    register("{name}.echo", echo)

def echo(ctx, text):
    return {{"text": text}}
"""


def module_registering(tool_line: str) -> str:
    """A plugin module that ships the standard manifest and registers tools with one line."""
    return (
        "from pathlib import Path\n"
        "from gigi_core import hookimpl\n\n"
        "@hookimpl\n"
        "def register_manifests(register):\n"
        "    register(Path(__file__).parent / 'gigi.yaml')\n\n"
        "@hookimpl\n"
        "def register_tools(register):\n"
        f"    {tool_line}\n"
    )


class PluginFactory:
    """Writes a package plus a dist-info with a ``gigi`` entry point into a sys.path folder."""

    def __init__(self, root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        monkeypatch.syspath_prepend(str(root))
        self._modules: list[str] = []

    def make(
        self,
        name: str,
        *,
        module: str | None = None,
        manifest: str | None = None,
        package: str | None = None,
    ) -> str:
        package = package or f"gigi_test_{name}"
        pkg = self.root / package
        pkg.mkdir()
        (pkg / "__init__.py").write_text(
            textwrap.dedent(module if module is not None else MODULE.format(name=name))
        )
        (pkg / "gigi.yaml").write_text(
            manifest if manifest is not None else MANIFEST.format(name=name)
        )
        dist = self.root / f"{package}-1.2.3.dist-info"
        dist.mkdir()
        (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {package}\nVersion: 1.2.3\n")
        (dist / "entry_points.txt").write_text(f"[gigi]\n{name} = {package}\n")
        self._modules.append(package)
        importlib.invalidate_caches()
        return package

    def cleanup(self) -> None:
        for module in self._modules:
            sys.modules.pop(module, None)


@pytest.fixture
def plugin_factory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    factory = PluginFactory(tmp_path / "site", monkeypatch)
    yield factory
    factory.cleanup()
