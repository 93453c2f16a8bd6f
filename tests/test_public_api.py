"""The public plugin API: what it exports resolves, stays cheap to import, and is the only
part of ``gigi_core`` that plugins use.

``lint-imports`` (the ``[tool.importlinter]`` contracts in pyproject.toml, run by CI) checks
the run-time imports of every first-party plugin. These tests check what it cannot see:
that the contract names every internal module, that type-only imports and the plugin
template use the public API too, and that the documentation lists the same names.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import json
import pkgutil
import re
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

import gigi_core

REPO = Path(__file__).resolve().parents[1]
PUBLIC = (
    "gigi_core",
    "gigi_core.commands",
    "gigi_core.events",
    "gigi_core.hookspecs",
    "gigi_core.jobs",
    "gigi_core.llm",
    "gigi_core.retrieval",
    "gigi_core.surfaces",
    "gigi_core.testing",
)
# Public packages whose submodules are internal (gigi_core.testing's are public).
PUBLIC_PACKAGES_WITH_INTERNALS = (
    "gigi_core.commands",
    "gigi_core.jobs",
    "gigi_core.llm",
    "gigi_core.retrieval",
)
# Facades that re-export through a module ``__getattr__`` (names load on first use).
LAZY_FACADES = (
    "gigi_core",
    "gigi_core.llm",
    "gigi_core.retrieval",
    "gigi_core.surfaces",
    "gigi_core.testing",
)
HEAVY = ("pydantic", "httpx", "sqlalchemy", "alembic", "jsonschema_rs", "cryptography", "ruamel")
# First-party code held to the public API: every plugin package and the default plugins.
PLUGIN_ROOTS = sorted(
    p.parent
    for pattern in ("plugins/*/gigi_*", "contrib/*/gigi_*")
    for p in REPO.glob(f"{pattern}/__init__.py")
)
DEFAULT_PLUGINS = REPO / "gigi_core" / "default_plugins"


def is_public(module: str) -> bool:
    return module in PUBLIC or module.startswith("gigi_core.testing.")


def _importlinter() -> dict[str, Any]:
    return tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]


def _contract(contract_id: str) -> dict[str, Any]:
    (found,) = [c for c in _importlinter()["contracts"] if c.get("id") == contract_id]
    return found


def _import_module_or_skip(name: str) -> Any:
    if name == "gigi_core.jobs" and not (REPO / "gigi_core" / "jobs" / "__init__.py").exists():
        pytest.skip("gigi_core.jobs has no __init__.py yet (its public API is being written)")
    return importlib.import_module(name)


# -- what the public modules export ----------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [*PUBLIC, "gigi_core.testing.fake_providers", "gigi_core.testing.scripted"],
)
def test_every_exported_name_resolves(name: str) -> None:
    module = _import_module_or_skip(name)
    exported = getattr(module, "__all__", None)
    if name in ("gigi_core.hookspecs", "gigi_core.testing.scripted"):
        return  # read as a whole (every hook spec; the scripted turns); no __all__ needed
    assert exported, f"{name} declares no __all__"
    assert len(set(exported)) == len(exported), f"{name}.__all__ repeats a name"
    missing = []
    for attr in exported:
        try:
            getattr(module, attr)
        except AttributeError as exc:
            missing.append(f"{attr} ({exc})")
    assert not missing, f"{name}.__all__ names what it cannot give: {missing}"


@pytest.mark.parametrize("name", LAZY_FACADES)
def test_lazy_facades_refuse_unknown_names(name: str) -> None:
    module = importlib.import_module(name)
    with pytest.raises(AttributeError, match="no attribute 'NoSuchName'"):
        module.NoSuchName  # noqa: B018
    assert not hasattr(module, "NoSuchName")


@pytest.mark.parametrize("name", LAZY_FACADES)
def test_type_checkers_see_every_lazy_name_where_it_loads_from(name: str) -> None:
    """Each lazily exported name is imported under TYPE_CHECKING from the module it loads."""
    module = importlib.import_module(name)
    tree = ast.parse(Path(module.__file__).read_text())
    typed: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            for stmt in ast.walk(node):
                if isinstance(stmt, ast.ImportFrom) and stmt.module:
                    for alias in stmt.names:
                        typed[alias.asname or alias.name] = stmt.module
    lazy: dict[str, str] = module._LAZY
    wrong = {n: (src, typed.get(n)) for n, src in lazy.items() if typed.get(n) != src}
    assert not wrong, f"{name}: lazy name -> (loads from, TYPE_CHECKING import from): {wrong}"
    eager = set(vars(module))
    assert set(module.__all__) <= set(lazy) | eager, "an exported name is neither lazy nor defined"


def test_lazy_modules_stay_cheap_to_import() -> None:
    """`import gigi_core` runs on every CLI start and in every plugin; it must load nothing heavy."""
    code = (
        "import json, sys\n"
        "import gigi_core, gigi_core.llm, gigi_core.surfaces, gigi_core.testing\n"
        "import gigi_core.events, gigi_core.hookspecs, gigi_core.retrieval\n"
        f"heavy = [m for m in {HEAVY!r} if m in sys.modules]\n"
        "inner = sorted(m for m in sys.modules if m.startswith(('gigi_core.kernel',"
        " 'gigi_core.agent', 'gigi_core.store', 'gigi_core.policy', 'gigi_core.tools')))\n"
        "print(json.dumps([heavy, inner]))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO
    )
    heavy, inner = json.loads(out.stdout)
    assert heavy == [] and inner == [], f"loaded at import: {heavy + inner}"


def test_agent_calls_and_runner_do_not_import_each_other_at_load() -> None:
    """calls <- runner only: what both need (Stop, Paused, ms) lives in agent.signals."""
    code = "import sys, gigi_core.agent.calls; print('gigi_core.agent.runner' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO
    )
    assert out.stdout.strip() == "False"
    from gigi_core.agent import calls, runner, signals

    assert runner.Stop is signals.Stop and calls.Stop is signals.Stop


# -- the import contracts --------------------------------------------------------------


def test_the_contract_forbids_every_internal_module() -> None:
    """A new kernel module is internal until someone decides otherwise, in pyproject.toml."""
    top = {
        f"gigi_core.{m.name}"
        for m in pkgutil.iter_modules(gigi_core.__path__)
        if not m.name.startswith("_")
    }
    expected = {m for m in top if not is_public(m)} | {
        f"{p}.*" for p in PUBLIC_PACKAGES_WITH_INTERNALS
    }
    forbidden = set(_contract("public-api")["forbidden_modules"])
    assert forbidden == expected, (
        f"add to forbidden_modules: {sorted(expected - forbidden)}; "
        f"remove: {sorted(forbidden - expected)}"
    )


def test_every_first_party_plugin_is_under_the_contracts() -> None:
    packages = {p.name for p in PLUGIN_ROOTS}
    assert {"gigi_openai", "gigi_anthropic", "gigi_gemini", "gigi_discord", "gigi_dice"} <= packages
    config = _importlinter()
    assert packages | {"gigi_core"} <= set(config["root_packages"])
    assert packages | {"gigi_core.default_plugins"} <= set(
        _contract("public-api")["source_modules"]
    )
    assert packages <= set(_contract("plugins-independent")["modules"])
    assert packages <= set(_contract("kernel-imports-no-plugin")["forbidden_modules"])


def _gigi_imports(path: Path, *, type_checking_only: bool) -> list[tuple[int, str]]:
    """``(line, module)`` for each gigi_core import in a file (a submodule named in
    ``from gigi_core.x import y`` counts as the module it is)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    scopes: list[ast.AST] = [tree]
    if type_checking_only:
        scopes = [
            n
            for n in ast.walk(tree)
            if isinstance(n, ast.If) and "TYPE_CHECKING" in ast.unparse(n.test)
        ]
    found = []
    for scope in scopes:
        for node in ast.walk(scope):
            if isinstance(node, ast.Import):
                found += [(node.lineno, a.name) for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for alias in node.names:
                    sub = f"{node.module}.{alias.name}"
                    found.append((node.lineno, sub if _is_module(sub) else node.module))
    return [(line, m) for line, m in found if m.split(".")[0] == "gigi_core"]


def _is_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


@pytest.mark.parametrize(
    "root", [*PLUGIN_ROOTS, DEFAULT_PLUGINS], ids=lambda p: p.relative_to(REPO).as_posix()
)
def test_type_only_imports_use_the_public_api(root: Path) -> None:
    """lint-imports ignores `if TYPE_CHECKING:` imports (they cannot make cycles); a type
    name a plugin relies on must still come from the public API, or it breaks on a move."""
    bad = sorted(
        {
            f"{path.relative_to(REPO)}:{line}: {module}"
            for path in root.rglob("*.py")
            for line, module in _gigi_imports(path, type_checking_only=True)
            if not is_public(module)
        }
    )
    assert not bad, "type-only imports of internal modules:\n" + "\n".join(bad)


def test_the_plugin_template_uses_the_public_api() -> None:
    """The template is Jinja, not a package lint-imports can read: check its import lines."""
    pattern = re.compile(r"^\s*(?:from|import)\s+(gigi_core(?:\.[\w.]+)?)(?:\s+import\s+(.+))?")
    bad = []
    for path in sorted((REPO / "plugin-template" / "template").rglob("*.jinja")):
        for number, text in enumerate(path.read_text().splitlines(), 1):
            match = pattern.match(text)
            if not match:
                continue
            module, names = match.group(1), match.group(2) or ""
            targets = [module] + [
                f"{module}.{n.strip()}"
                for n in names.strip("()").split(",")
                if n.strip() and _is_module(f"{module}.{n.strip()}")
            ]
            bad += [f"{path.relative_to(REPO)}:{number}: {t}" for t in targets if not is_public(t)]
    assert not bad, "the template imports internal modules:\n" + "\n".join(bad)


# -- the documentation -----------------------------------------------------------------


def _public_api_section() -> str:
    text = (REPO / "docs" / "plugin-authors.md").read_text()
    start = text.index("\n## Public API\n")
    return text[start : text.index("\n## ", start + 1)]


def test_the_docs_list_every_public_name() -> None:
    section = _public_api_section()
    missing = {}
    for name in ("gigi_core", "gigi_core.llm", "gigi_core.events", "gigi_core.surfaces",
                 "gigi_core.commands", "gigi_core.testing"):  # fmt: skip
        module = importlib.import_module(name)
        absent = [n for n in module.__all__ if f"`{n}`" not in section]
        if absent:
            missing[name] = absent
    assert not missing, f"docs/plugin-authors.md, 'Public API', does not mention: {missing}"


def test_the_docs_contract_for_third_party_plugins_matches_ours() -> None:
    section = _public_api_section()
    block = re.search(r"```toml\n(.*?)```", section, re.S)
    assert block is not None
    contract = tomllib.loads(block.group(1))["tool"]["importlinter"]["contracts"][0]
    assert contract["forbidden_modules"] == _contract("public-api")["forbidden_modules"]
    assert contract["allow_indirect_imports"] is True
