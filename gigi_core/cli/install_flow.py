"""What ``gigi install|upgrade|uninstall`` do after parsing: stage, review, ask, install,
record held-back actions. Kept apart from the command definitions so that every other
``gigi`` command starts without loading pip plumbing, manifests or the store.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

import click

from gigi_core.cli import pip_runner
from gigi_core.cli.common import CliState, echo_json, run
from gigi_core.cli.review_text import distribution_lines
from gigi_core.errors import GigiError, ManifestError
from gigi_core.manifest.diff import DistributionDiff, PluginReview, diff_distribution, review
from gigi_core.manifest.packaged import PackagedPlugin, canonical, installed, plugin_distributions
from gigi_core.policy.capabilities import KERNEL_CAPABILITY_NAMES
from gigi_core.store.plugin_reviews import EVERY_ACTION


@dataclass
class Candidate:
    """One staged distribution, against what is installed now."""

    staged: PackagedPlugin
    current: PackagedPlugin | None
    diff: DistributionDiff
    reviews: dict[str, PluginReview]

    def as_dict(self) -> dict[str, Any]:
        data = self.diff.as_dict()
        data["upgrade"] = self.current is not None
        data["review"] = [r.as_dict() for _, r in sorted(self.reviews.items())]
        data["manifests"] = list(self.staged.sources)
        return data


def _current(name: str) -> PackagedPlugin | None:
    """The installed distribution; one whose own manifest no longer validates counts as
    declaring nothing, so every action of the candidate shows as new."""
    importlib.invalidate_caches()
    try:
        return installed(name, known_capabilities=KERNEL_CAPABILITY_NAMES)
    except ManifestError:
        return None


def candidates(staged: pip_runner.Staged) -> list[Candidate]:
    found = []
    for plugin in staged.plugins:
        current = _current(plugin.distribution)
        diff = diff_distribution(
            plugin.distribution,
            current.version if current else None,
            plugin.version,
            current.manifests if current else [],
            plugin.manifests,
        )
        reviews = {m.plugin.name: review(m) for m in plugin.manifests}
        found.append(Candidate(plugin, current, diff, reviews))
    return found


def _show(found: list[Candidate], source: pip_runner.Source) -> None:
    if not found:
        click.echo(
            f"{source.describe()}: no Gigi plugin among what pip fetched (nothing to review)."
        )
    for c in found:
        for line in distribution_lines(c.diff, c.reviews, c.staged.sources):
            click.echo(line)


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


async def _record_holds(state: CliState, found: list[Candidate]) -> dict[str, list[str]]:
    """Hold back, per upgraded plugin version, the actions it added or widened."""
    todo = [
        (str(c.diff.new_version), p.name, holds)
        for c in found
        if c.current is not None
        for p in c.diff.plugins
        if (holds := holds_of(p))
    ]
    if not todo:
        return {}
    kernel = await state.open_kernel()
    try:
        for version, name, holds in todo:
            await kernel.reviews.record(name, version, holds)
    finally:
        await kernel.close()
    return {name: sorted(holds) for _, name, holds in todo}


def install(
    state: CliState, source: pip_runner.Source, yes: bool, as_json: bool, upgrade: bool
) -> None:
    staged = pip_runner.stage(source, KERNEL_CAPABILITY_NAMES)
    try:
        found = candidates(staged)
        exact = pip_runner.pinned(source, staged)
    finally:
        staged.close()
    if not as_json:
        _show(found, source)
    same = [c for c in found if c.current is not None and c.current.version == c.staged.version]
    if found and len(same) == len(found) and upgrade:
        if as_json:
            echo_json({"installed": False, "up_to_date": True, "distributions": []})
        else:
            click.echo("Already up to date; nothing to do.")
        return
    verb = "Upgrade" if any(c.current for c in found) else "Install"
    if not _proceed(f"{verb} {source.describe()}?", yes, as_json):
        if as_json:
            echo_json({"installed": False, "distributions": [c.as_dict() for c in found]})
            return
        raise click.ClickException(
            "Nothing was installed: you declined the review (add --yes to skip the question)."
        )
    # Holds first: they name the new version, so they are inert until it is installed and
    # loaded, and an unreachable database stops the upgrade instead of leaving it unguarded.
    held = run(_record_holds(state, found), state)
    pip_runner.install(exact, upgrade=upgrade or any(c.current for c in found))
    if as_json:
        out = {"installed": True, "held_back": held, "distributions": [c.as_dict() for c in found]}
        echo_json(out)
        return
    click.echo(f"Installed {source.describe()}. Restart Gigi to load it.")
    for plugin, actions in sorted(held.items()):
        shown = [
            "every action (its data statement changed)" if a == EVERY_ACTION else a for a in actions
        ]
        click.echo(
            f"Held back in every server until accepted: {plugin}: {', '.join(shown)} "
            f"(gigi plugins review {plugin} --guild G --accept)"
        )


def installed_plugins() -> list[PackagedPlugin]:
    importlib.invalidate_caches()
    plugins = []
    for plugin in plugin_distributions(known_capabilities=KERNEL_CAPABILITY_NAMES):
        plugins.append(plugin)
    return plugins


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
        raise click.UsageError("name what to install: NAME[==VERSION], a path, a URL, or -r FILE")
    return pip_runner.Source(specs, requirements, hashes)
