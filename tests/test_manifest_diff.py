"""The install review's facts and the upgrade diff, read from packaged manifests without
importing plugin code."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from gigi_core.cli.review_text import distribution_lines
from gigi_core.errors import ManifestError
from gigi_core.manifest.diff import diff, diff_distribution, review
from gigi_core.manifest.packaged import plugin_distributions
from tests.plugin_wheels import PACKAGE, build_wheel, unpack


def staged(tmp_path: Path, version: str) -> list:
    site = tmp_path / f"site-{version}"
    unpack(build_wheel(tmp_path / "wheels", version), site)
    return plugin_distributions([site])


def test_packaged_manifests_are_read_without_importing_the_plugin(tmp_path: Path) -> None:
    [plugin] = staged(tmp_path, "1.0")
    assert (plugin.distribution, plugin.version, plugin.entry_points) == (
        "gigi-widget",
        "1.0",
        ("widget",),
    )
    assert [m.plugin.name for m in plugin.manifests] == ["widget"]
    assert plugin.sources[0].endswith(f"{PACKAGE}/gigi.yaml")
    assert PACKAGE not in sys.modules  # nothing of the candidate ran


def test_review_lists_what_a_fresh_plugin_may_do(tmp_path: Path) -> None:
    [plugin] = staged(tmp_path, "1.1")
    facts = review(plugin.manifests[0])
    actions = {a.name: a for a in facts.actions}
    assert actions["widget.add"].safety == "write"
    assert actions["widget.add"].capability_default == "everyone"
    assert actions["widget.reset"].capability_default == "admins"
    assert actions["widget.reset"].confirms is False
    assert facts.everyone == ("widget.use",)
    assert facts.secrets == ("api_token",)
    assert facts.intents == ("guilds", "message_content")
    text = "\n".join(
        distribution_lines(
            diff_distribution("gigi-widget", None, "1.1", [], plugin.manifests),
            {"widget": facts},
            plugin.sources,
        )
    )
    assert "gigi-widget 1.1 (new install)" in text
    assert "widget.add: write, needs widget.use (everyone by default); asks for confirmation" in (
        text
    )
    assert "stores: Stores the name of each widget." in text
    assert "config secrets it asks for: api_token" in text
    assert "Discord intents: guilds, message_content" in text


def test_upgrade_diff_marks_new_and_widened_actions_held_back(tmp_path: Path) -> None:
    [old] = staged(tmp_path, "1.0")
    [new] = staged(tmp_path, "1.1")
    change = diff(old.manifests[0], new.manifests[0])
    assert set(change.held_back) == {"widget.reset", "widget.add"}
    by_action = {a.action: a for a in change.actions}
    assert by_action["widget.reset"].changes == ("no longer asks for confirmation",)
    assert "widget.count" not in by_action  # unchanged actions are not listed
    assert "new Discord intent: message_content" in change.plugin_changes
    assert "new config secret: api_token" in change.plugin_changes
    assert any(c.startswith("data statement:") for c in change.plugin_changes)
    assert change.widens


def test_a_narrower_upgrade_holds_nothing_back(tmp_path: Path) -> None:
    [old] = staged(tmp_path, "1.0")
    [new] = staged(tmp_path, "1.1")
    change = diff(new.manifests[0], old.manifests[0])  # 1.1 -> 1.0: narrower
    assert change.held_back == ()
    assert change.removed == ("widget.add",)
    assert "now asks for confirmation" in {c for a in change.actions for c in a.changes}
    assert not any(c.startswith("new ") for c in change.plugin_changes)


def test_safety_raised_and_default_widened_are_widening() -> None:
    from gigi_core.manifest.models import Manifest

    def manifest(safety: str, default: str, confirm: str = "policy") -> Manifest:
        return Manifest.from_dict(
            {
                "manifest_version": 1,
                "plugin": {
                    "name": "p",
                    "version": "1",
                    "description": "d",
                    "data_statement": "s",
                    "capabilities": [{"name": "p.x", "description": "x", "default": default}],
                },
                "actions": [
                    {
                        "name": "p.a",
                        "description": "a",
                        "safety": safety,
                        "capability": "p.x",
                        "confirm": confirm,
                        "args": {"type": "object"},
                    }
                ],
            }
        )

    raised = diff(manifest("read_only", "admins"), manifest("destructive", "admins"))
    assert raised.actions[0].changes == (
        "safety raised: read_only -> destructive",
        "now asks for confirmation",
    )
    assert raised.held_back == ("p.a",)
    wider = diff(manifest("read_only", "admins"), manifest("read_only", "everyone"))
    assert wider.held_back == ("p.a",)
    assert "new capability granted to everyone: p.x" in wider.plugin_changes
    lowered = diff(
        manifest("external", "everyone", "never"), manifest("read_only", "admins", "never")
    )
    assert lowered.held_back == ()
    # Relabelled read-only, it would lose its confirmation: that is held back.
    relabelled = diff(manifest("external", "admins"), manifest("read_only", "admins"))
    assert relabelled.actions[0].changes == (
        "safety lowered: external -> read_only",
        "no longer asks for confirmation",
    )
    assert relabelled.held_back == ("p.a",)


def test_a_broken_candidate_manifest_names_file_line_and_field(tmp_path: Path) -> None:
    site = tmp_path / "site"
    unpack(build_wheel(tmp_path / "wheels", "broken"), site)
    with pytest.raises(ManifestError) as caught:
        plugin_distributions([site])
    [problem] = caught.value.problems
    assert f"{PACKAGE}/gigi.yaml:" in problem
    assert "actions[0].safety" in problem or "actions.0.safety" in problem


def test_what_an_upgrade_holds_back(tmp_path: Path) -> None:
    from gigi_core.cli.install_flow import holds_of

    [old] = staged(tmp_path, "1.0")
    [new] = staged(tmp_path, "1.1")
    holds = holds_of(diff(old.manifests[0], new.manifests[0]))
    assert holds == {
        "widget.reset": "no longer asks for confirmation",
        "widget.add": "new write action needing widget.use",
        "*": "the data statement changed",
    }
    assert holds_of(diff(None, new.manifests[0])) == {}  # new to the distribution: off anyway
    # Narrower actions hold nothing; any change of the data statement is for an admin to read.
    assert holds_of(diff(new.manifests[0], old.manifests[0])) == {"*": "the data statement changed"}
