"""What ``gigi install|upgrade|uninstall`` do after parsing: stage, review, ask, install,
record held-back actions. An installed version whose manifest no longer validates is still
an upgrade: nothing counts as unchanged, so every action of the candidate is held. Kept apart from the command definitions so that every other
``gigi`` command starts without loading pip plumbing, manifests or the store.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

import click

from gigi_core.cli import pip_runner
from gigi_core.cli.common import CliState, echo_json, run
from gigi_core.cli.review_text import distribution_lines, visible
from gigi_core.errors import GigiError, ManifestError
from gigi_core.manifest.diff import DistributionDiff, PluginReview, diff_distribution, review
from gigi_core.manifest.packaged import PackagedPlugin, canonical, installed, plugin_distributions
from gigi_core.policy.capabilities import KERNEL_CAPABILITY_NAMES
from gigi_core.store.plugin_reviews import EVERY_ACTION

UNREADABLE = "the installed version's manifest does not validate, so nothing counts as unchanged"


@dataclass
class Candidate:
    """One staged distribution, against what is installed now."""

    staged: PackagedPlugin
    current: PackagedPlugin | None
    diff: DistributionDiff
    reviews: dict[str, PluginReview]
    unreadable: list[str] | None = None  # the installed manifest's problems, when invalid

    def as_dict(self) -> dict[str, Any]:
        data = self.diff.as_dict()
        data["upgrade"] = self.current is not None
        data["installed_manifest_invalid"] = self.unreadable
        data["review"] = [r.as_dict() for _, r in sorted(self.reviews.items())]
        data["manifests"] = list(self.staged.sources)
        return data

    def holds(self) -> dict[str, dict[str, str]]:
        """Plugin -> held-back action -> why, for an upgrade (a fresh install holds none:
        its plugins are off until enabled)."""
        if self.current is None:
            return {}
        if self.unreadable is not None:
            return {p.name: {EVERY_ACTION: UNREADABLE} for p in self.diff.plugins if p.new_version}
        return {p.name: held for p in self.diff.plugins if (held := holds_of(p))}


def _current(name: str) -> tuple[PackagedPlugin | None, list[str] | None]:
    """The installed distribution and, when its own manifest no longer validates, the
    problems: it is still installed (and may be enabled), so the upgrade holds everything."""
    importlib.invalidate_caches()
    try:
        return installed(name, known_capabilities=KERNEL_CAPABILITY_NAMES), None
    except ManifestError as exc:
        from importlib import metadata

        dist = metadata.distribution(name)
        names = tuple(sorted(ep.name for ep in dist.entry_points if ep.group == "gigi"))
        return PackagedPlugin(dist.metadata["Name"], dist.version, names), list(exc.problems)


def candidates(staged: pip_runner.Staged) -> list[Candidate]:
    found = []
    for plugin in staged.plugins:
        current, unreadable = _current(plugin.distribution)
        diff = diff_distribution(
            plugin.distribution,
            current.version if current else None,
            plugin.version,
            current.manifests if current else [],
            plugin.manifests,
        )
        reviews = {m.plugin.name: review(m) for m in plugin.manifests}
        found.append(Candidate(plugin, current, diff, reviews, unreadable))
    return found


def _show(found: list[Candidate], staged: pip_runner.Staged, source: pip_runner.Source) -> None:
    if not found:
        click.echo(
            f"{source.describe()}: no Gigi plugin among what pip fetched (nothing to review)."
        )
    for c in found:
        if c.unreadable is not None and c.current is not None:
            click.echo(
                f"{c.staged.distribution} {c.current.version} -> {c.staged.version}: "
                f"{UNREADABLE}; every action is HELD BACK until accepted per server. "
                "What the installed manifest fails on:"
            )
            for problem in c.unreadable:
                click.echo(visible(f"    {problem}"))
        for line in distribution_lines(c.diff, c.reviews, c.staged.sources):
            click.echo(line)
    plugins = {p.key for p in staged.plugins}
    if staged.wheels:
        click.echo("pip installs exactly these wheels, and nothing else:")
    for wheel in staged.wheels:
        what = [] if wheel.requested else ["a dependency"]
        if canonical(wheel.name) in plugins:
            what.append("a Gigi plugin, reviewed above")
        shown = f"  {wheel.name} {wheel.version}" + (f" ({', '.join(what)})" if what else "")
        click.echo(visible(shown))


def _proceed(question: str, yes: bool, as_json: bool) -> bool:
    if yes:
        return True
    if as_json:
        return False  # a tool reads the review; it proceeds with --yes
    return click.confirm(question, default=False)


def holds_of(plugin: Any) -> dict[str, str]:
    """Held-back action -> what widened it, for one upgraded plugin (``*``: all of them)."""
    if plugin.old_version is None or plugin.new_version is None:
        return {}  # a plugin new to the distribution is off until enabled; a gone one is gone
    holds = {a.action: "; ".join(a.changes) for a in plugin.actions if a.widened}
    if any(change.startswith("data statement") for change in plugin.plugin_changes):
        holds[EVERY_ACTION] = "the data statement changed"
    return holds


Carried = dict[str, dict[str, list[str]]]  # plugin -> earlier version -> actions still held


async def _record_holds(
    state: CliState, found: list[Candidate]
) -> tuple[dict[str, list[str]], Carried]:
    """Hold back, per upgraded plugin version, the actions it added or widened; and read
    what earlier versions hold where they were not accepted (those holds carry on)."""
    todo = [(str(c.diff.new_version), n, holds) for c in found for n, holds in c.holds().items()]
    upgraded = [
        (str(c.diff.new_version), p.name)
        for c in found
        if c.current is not None
        for p in c.diff.plugins
        if p.new_version is not None
    ]
    if not upgraded:
        return {}, {}
    kernel = await state.open_kernel()
    try:
        for version, name, holds in todo:
            await kernel.reviews.record(name, version, holds)
        carried: Carried = {}
        for version, name in upgraded:
            if earlier := await kernel.reviews.earlier(name, version):
                carried[name] = earlier
    finally:
        await kernel.close()
    return {name: sorted(holds) for _, name, holds in todo}, carried


def _shown(actions: list[str]) -> str:
    every = "every action (its data statement changed, or the installed manifest was invalid)"
    return ", ".join(every if a == EVERY_ACTION else a for a in actions)


def install(
    state: CliState, source: pip_runner.Source, yes: bool, as_json: bool, upgrade: bool
) -> None:
    staged = pip_runner.stage(source, KERNEL_CAPABILITY_NAMES)
    try:
        _review_and_install(state, staged, source, yes, as_json, upgrade)
    finally:
        staged.close()  # the reviewed wheel files: installed from here, then gone


def _review_and_install(
    state: CliState,
    staged: pip_runner.Staged,
    source: pip_runner.Source,
    yes: bool,
    as_json: bool,
    upgrade: bool,
) -> None:
    found = candidates(staged)
    if not staged.wheels:  # pip found everything asked for installed already
        if as_json:
            echo_json({"installed": False, "up_to_date": True, "distributions": []})
        elif upgrade:
            click.echo("Already up to date; nothing to do.")
        else:
            click.echo(f"{source.describe()}: already installed; nothing to do.")
        return
    if not as_json:
        _show(found, staged, source)
    verb = "Upgrade" if any(c.current for c in found) else "Install"
    if not _proceed(f"{verb} {source.describe()}?", yes, as_json):
        if as_json:
            echo_json({"installed": False, **_as_json(found, staged)})
            return
        raise click.ClickException(
            "Nothing was installed: you declined the review (add --yes to skip the question)."
        )
    # Holds first: they name the new version, so they are inert until it is installed and
    # loaded, and an unreachable database stops the upgrade instead of leaving it unguarded.
    held, carried = run(_record_holds(state, found), state)
    pip_runner.install(staged)
    if as_json:
        out = {"installed": True, "held_back": held, "still_held": carried}
        echo_json(out | _as_json(found, staged))
        return
    click.echo(f"Installed {source.describe()}. Restart Gigi to load it.")
    for plugin, actions in sorted(held.items()):
        click.echo(
            f"Held back in every server until accepted: {plugin}: {_shown(actions)} "
            f"(gigi plugins review {plugin} --guild G --accept; direct messages: --dm)"
        )
    for plugin, versions in sorted(carried.items()):
        for version, actions in versions.items():
            click.echo(
                f"Still held in each server that has not accepted {plugin} {version}: "
                f"{_shown(actions)} (gigi plugins review {plugin} --guild G)"
            )


def _as_json(found: list[Candidate], staged: pip_runner.Staged) -> dict[str, Any]:
    return {
        "distributions": [c.as_dict() for c in found],
        "wheels": [w.as_dict() for w in staged.wheels],
    }


def installed_plugins() -> list[PackagedPlugin]:
    """Installed plugin distributions, a broken manifest included (with its problems)."""
    importlib.invalidate_caches()
    return plugin_distributions(known_capabilities=KERNEL_CAPABILITY_NAMES, strict=False)


def find_installed(name: str) -> PackagedPlugin:
    wanted = canonical(name)
    for plugin in installed_plugins():
        names = {plugin.key, *map(canonical, plugin.entry_points)}
        names |= {canonical(m.plugin.name) for m in plugin.manifests}
        if wanted in names:
            return plugin
    known = ", ".join(p.distribution for p in installed_plugins()) or "none"
    raise GigiError(
        f"no installed plugin distribution is called {name!r}",
        hint=f"installed: {known}; `gigi plugins list` shows plugin names",
    )


def outdated_rows() -> list[dict[str, str]]:
    newer = {canonical(k): v for k, v in pip_runner.outdated().items()}
    return [
        {"distribution": p.distribution, "installed": p.version, "latest": newer[p.key]}
        for p in installed_plugins()
        if p.key in newer
    ]


def source(specs: tuple[str, ...], requirements: str | None, hashes: bool) -> pip_runner.Source:
    """What to hand pip, or a usage error naming the option to fix."""
    if hashes and requirements is None:
        raise click.UsageError("--require-hashes needs -r FILE (a requirements file with hashes)")
    if not specs and requirements is None:
        raise click.UsageError(
            "name what to install: NAME[==VERSION], a wheel file or URL, or -r FILE"
        )
    return pip_runner.Source(specs, requirements, hashes)
