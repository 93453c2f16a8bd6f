"""What an upgrade holds back when the installed version cannot be read: everything, said in
the review (an unreadable manifest must not turn the upgrade into a fresh install)."""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from gigi_core.cli import install_flow, pip_runner
from gigi_core.manifest.packaged import plugin_distributions
from gigi_core.policy.capabilities import KERNEL_CAPABILITY_NAMES
from tests.plugin_wheels import build_wheel, unpack


@pytest.fixture
def environment(tmp_path: Path) -> Iterator[Path]:
    """A folder on sys.path standing for the running environment's site-packages."""
    site = tmp_path / "site"
    site.mkdir()
    sys.path.insert(0, str(site))
    try:
        yield site
    finally:
        sys.path.remove(str(site))


def stage(tmp_path: Path, version: str) -> pip_runner.Staged:
    """A candidate as `gigi install` stages it (unpacked for review, never imported)."""
    folder = tempfile.TemporaryDirectory()
    wheel = build_wheel(tmp_path / f"wheels-{version}", version)
    unpack(wheel, Path(folder.name))
    plugins = plugin_distributions([folder.name], known_capabilities=KERNEL_CAPABILITY_NAMES)
    return pip_runner.Staged(
        folder, plugins, [pip_runner.Wheel("gigi-widget", version, wheel, True)]
    )


def test_an_invalid_installed_manifest_holds_every_action(
    tmp_path: Path, environment: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    unpack(build_wheel(tmp_path / "installed", "broken"), environment)  # 1.2, invalid now
    staged = stage(tmp_path, "1.1")
    try:
        [candidate] = install_flow.candidates(staged)
        install_flow._show([candidate], staged, pip_runner.Source(("gigi-widget==1.1",)))
    finally:
        staged.close()
    assert candidate.current is not None and candidate.current.version == "1.2"
    assert candidate.unreadable and any("safety" in p for p in candidate.unreadable)
    assert candidate.holds() == {"widget": {"*": install_flow.UNREADABLE}}
    shown = capsys.readouterr().out
    assert "gigi-widget 1.2 -> 1.1: the installed version's manifest does not validate" in shown
    assert "every action is HELD BACK until accepted per server" in shown
    assert candidate.as_dict()["installed_manifest_invalid"] == candidate.unreadable
    assert "  gigi-widget 1.1" in shown  # the wheel pip installs, listed


def test_a_readable_installed_version_holds_only_what_widened(
    tmp_path: Path, environment: Path
) -> None:
    unpack(build_wheel(tmp_path / "installed", "1.0"), environment)
    staged = stage(tmp_path, "1.1")
    try:
        [candidate] = install_flow.candidates(staged)
    finally:
        staged.close()
    assert candidate.unreadable is None
    assert set(candidate.holds()["widget"]) == {"*", "widget.add", "widget.reset"}


def test_a_broken_installed_plugin_can_still_be_found_to_uninstall(
    tmp_path: Path, environment: Path
) -> None:
    unpack(build_wheel(tmp_path / "installed", "broken"), environment)
    found = install_flow.find_installed("gigi-widget")  # `gigi uninstall gigi-widget`
    assert found.version == "1.2" and found.manifests == []
    assert found.problems and any("safety" in p for p in found.problems)
    assert "gigi-widget" in {p.distribution for p in install_flow.installed_plugins()}
    with pytest.raises(Exception, match="safety"):  # the review still reads it strictly
        plugin_distributions([environment], known_capabilities=KERNEL_CAPABILITY_NAMES)
