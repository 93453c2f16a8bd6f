"""Plugin loading: entry points, isolation of failures, allow/block lists, strict mode."""

from __future__ import annotations

import pytest

from gigi_core import hookimpl
from gigi_core.errors import PluginError
from gigi_core.plugins import LoadOptions, load_plugins
from tests.plugin_factory import module_registering


def load(only: set[str] | None = None, **kwargs):
    return load_plugins(LoadOptions(load=frozenset(only) if only is not None else None, **kwargs))


def test_entry_point_plugin_loads_with_version_and_actions(plugin_factory) -> None:
    plugin_factory.make("alpha")
    loaded = load({"alpha"})
    record = loaded.registry.records["alpha"]
    assert (record.status, record.error) == ("ok", None)
    assert record.version == "1.2.3"
    assert record.distribution == "gigi_test_alpha"
    assert record.actions == ["alpha.echo"]
    assert "alpha.echo" in loaded.registry.handlers


def test_installed_dice_plugin_is_found_through_its_entry_point() -> None:
    record = load({"dice"}).registry.records["dice"]
    assert record.status == "ok" and record.source == "entrypoint"
    assert record.distribution == "gigi-dice"


def test_import_error_is_recorded_and_others_still_load(plugin_factory) -> None:
    plugin_factory.make("broken", module="raise RuntimeError('boom at import')\n")
    plugin_factory.make("alpha")
    loaded = load({"broken", "alpha"})
    broken = loaded.registry.records["broken"]
    assert broken.status == "failed"
    assert broken.error == "RuntimeError: boom at import"
    assert loaded.registry.records["alpha"].status == "ok"
    assert "broken" not in loaded.registry.manifests


def test_hook_that_raises_fails_only_that_plugin(plugin_factory) -> None:
    plugin_factory.make(
        "hooky",
        module="""
        from gigi_core import hookimpl

        @hookimpl
        def register_manifests(register):
            raise ValueError("manifest hook exploded")
        """,
    )
    loaded = load({"hooky", "dice"})
    record = loaded.registry.records["hooky"]
    assert record.status == "failed"
    assert "register_manifests raised ValueError: manifest hook exploded" in record.error
    assert loaded.registry.records["dice"].status == "ok"
    assert not loaded.pm.is_registered(record) and loaded.pm.get_plugin("hooky") is None


def test_invalid_manifest_fails_plugin_with_file_line(plugin_factory) -> None:
    from tests.plugin_factory import MANIFEST

    plugin_factory.make(
        "bad", manifest=MANIFEST.format(name="bad").replace("safety: read_only", "safety: risky")
    )
    record = load({"bad"}).registry.records["bad"]
    assert record.status == "failed"
    assert "gigi.yaml:13: actions.0.safety:" in record.error


def test_handler_without_action_and_action_without_handler(plugin_factory) -> None:
    plugin_factory.make(
        "mismatch", module=module_registering('register("mismatch.shout", lambda ctx, text: text)')
    )
    record = load({"mismatch"}).registry.records["mismatch"]
    assert record.status == "failed"
    assert (
        "handler registered for 'mismatch.shout', which no manifest of this plugin declares"
        in record.error
    )
    assert "action 'mismatch.echo' has no handler" in record.error


def test_handler_signature_must_match_args(plugin_factory) -> None:
    plugin_factory.make(
        "sig", module=module_registering('register("sig.echo", lambda ctx, message: message)')
    )
    record = load({"sig"}).registry.records["sig"]
    assert record.status == "failed"
    assert "does not accept argument 'text'" in record.error
    assert "requires 'message', which the manifest does not declare" in record.error


def test_misspelled_hook_is_a_recorded_failure(plugin_factory) -> None:
    plugin_factory.make(
        "typo",
        module="""
        from gigi_core import hookimpl

        @hookimpl
        def register_tool(register):
            pass
        """,
    )
    record = load({"typo"}).registry.records["typo"]
    assert record.status == "failed"
    assert "unknown hook" in record.error and "register_tool" in record.error


def test_load_list_and_block_list(plugin_factory, monkeypatch: pytest.MonkeyPatch) -> None:
    plugin_factory.make("alpha")
    plugin_factory.make("beta")
    monkeypatch.setenv("GIGI_LOAD_PLUGINS", "alpha,beta")
    monkeypatch.setenv("GIGI_BLOCK_PLUGINS", "beta")

    def loaded() -> set[str]:  # default plugins ignore the load list
        return {n for n, r in load_plugins().registry.records.items() if r.source != "default"}

    assert loaded() == {"alpha"}
    monkeypatch.setenv("GIGI_LOAD_PLUGINS", "")
    assert loaded() == set()


def test_strict_mode_makes_failures_fatal(plugin_factory, monkeypatch: pytest.MonkeyPatch) -> None:
    plugin_factory.make("broken", module="import nonexistent_module_xyz\n")
    monkeypatch.setenv("GIGI_LOAD_PLUGINS", "broken")
    monkeypatch.setenv("GIGI_STRICT_PLUGINS", "1")
    with pytest.raises(PluginError, match="plugin broken failed to load: ModuleNotFoundError"):
        load_plugins()


def test_two_modules_declaring_the_same_plugin_name(plugin_factory) -> None:
    from tests.plugin_factory import MANIFEST, MODULE

    plugin_factory.make("alpha")
    plugin_factory.make(
        "alpha2", module=MODULE.format(name="alpha"), manifest=MANIFEST.format(name="alpha")
    )
    loaded = load({"alpha", "alpha2"})
    assert loaded.registry.records["alpha"].status == "ok"
    assert "already declared by alpha" in loaded.registry.records["alpha2"].error


def test_async_registration_hook_is_rejected() -> None:
    class AsyncRegistrar:
        @hookimpl
        async def register_tools(self, register):
            pass

    loaded = load_plugins(LoadOptions(load=frozenset()), extra=[("asyncreg", AsyncRegistrar())])
    assert "must be synchronous" in loaded.registry.records["asyncreg"].error


def test_default_plugins_load_first_ignore_load_list_but_obey_block_list(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import sys

    class Default:
        @hookimpl(trylast=True)
        def track_event(self, name, properties, kernel):
            pass

    monkeypatch.setitem(sys.modules, "gigi_test_default_mod", Default())
    options = LoadOptions(load=frozenset({"dice"}), defaults=("gigi_test_default_mod",))
    records = load_plugins(options).registry.records
    assert list(records) == ["gigi_test_default_mod", "dice"]
    assert records["gigi_test_default_mod"].source == "default"
    blocked = LoadOptions(
        load=frozenset({"dice"}),
        block=frozenset({"gigi_test_default_mod"}),
        defaults=options.defaults,
    )
    assert list(load_plugins(blocked).registry.records) == ["dice"]


def test_second_plugin_with_same_provider_name_fails() -> None:
    class Prov:
        name = "same"

    class A:
        @hookimpl
        def register_providers(self, register):
            register(Prov())

    loaded = load_plugins(LoadOptions(load=frozenset()), extra=[("a", A()), ("b", A())])
    assert loaded.registry.records["a"].status == "ok"
    assert (
        loaded.registry.records["b"].error
        == "provider 'same' is already registered by another plugin"
    )


def test_register_commands_failure_withdraws_the_plugin(plugin_factory) -> None:
    from gigi_core.cli.common import CliState
    from gigi_core.cli.main import _add_plugin_commands

    class Broken:
        @hookimpl
        def register_commands(self, cli):
            raise RuntimeError("no commands today")

    state = CliState()
    plugin_factory.make("alpha")
    state._plugins = load_plugins(
        LoadOptions(load=frozenset({"alpha"})), extra=[("alpha2", Broken())]
    )
    state._plugins.registry.records["alpha2"].contributions.tools.clear()
    _add_plugin_commands(state)
    registry = state._plugins.registry
    assert registry.records["alpha2"].status == "failed"
    assert (
        "register_commands raised RuntimeError('no commands today')"
        in registry.records["alpha2"].error
    )
    assert registry.records["alpha"].status == "ok" and "alpha.echo" in registry.actions
    assert state._plugins.pm.get_plugin("alpha2") is None


def test_registry_fail_withdraws_actions_and_capabilities(plugin_factory) -> None:
    plugin_factory.make("alpha")
    plugin_factory.make("beta")
    loaded = load({"alpha", "beta"})
    loaded.registry.fail("alpha", "broken later")
    assert "alpha.echo" not in loaded.registry.actions and "alpha" not in loaded.registry.manifests
    assert "alpha.use" not in loaded.registry.capabilities
    assert (
        "beta.echo" in loaded.registry.handlers
        and "memory.read.guild" in loaded.registry.capabilities
    )
