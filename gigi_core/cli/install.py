"""``gigi install|uninstall|upgrade`` and ``gigi plugins outdated``: pip, after a review.

A candidate is fetched into a throwaway folder first and its packaged manifests are read
from there (no plugin code runs); the operator sees what it may do — or, for an upgrade,
what it widens — and only then does pip install it into this environment. An upgrade's
widened actions are recorded as held back, so every server keeps them off until an admin
accepts them (``gigi plugins review``).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

import click

from gigi_core.cli import pip_runner
from gigi_core.cli.common import CliState, echo_json, pass_state, run, table
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


async def _record_holds(state: CliState, found: list[Candidate]) -> dict[str, list[str]]:
    """Hold back, per upgraded plugin version, the actions it added or widened."""
    held: dict[str, list[str]] = {}
    todo = [(c, p) for c in found if c.current is not None for p in c.diff.plugins]
    todo = [(c, p) for c, p in todo if p.widens and p.new_version is not None]
    if not todo:
        return held
    kernel = await state.open_kernel()
    try:
        for c, plugin in todo:
            holds = {a.action: "; ".join(a.changes) for a in plugin.actions if a.widened}
            if any(ch.startswith("data statement") for ch in plugin.plugin_changes):
                holds[EVERY_ACTION] = "the data statement changed"
            if plugin.old_version is None:  # a plugin new to this distribution: off anyway
                continue
            version = str(c.diff.new_version)
            await kernel.reviews.record(plugin.name, version, holds)
            held[plugin.name] = sorted(holds)
    finally:
        await kernel.close()
    return held


def _install(
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
    pip_runner.install(exact, upgrade=upgrade or any(c.current for c in found))
    held = run(_record_holds(state, found), state)
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


def _source(specs: tuple[str, ...], requirements: str | None, hashes: bool) -> pip_runner.Source:
    if hashes and requirements is None:
        raise click.UsageError("--require-hashes needs -r FILE (a requirements file with hashes)")
    if not specs and requirements is None:
        raise click.UsageError("name what to install: NAME[==VERSION], a path, a URL, or -r FILE")
    return pip_runner.Source(specs, requirements, hashes)


_yes = click.option("--yes", "-y", is_flag=True, help="Do not ask; install after the review.")
_json = click.option(
    "--json", "as_json", is_flag=True, help="Print the review as JSON; installs only with --yes."
)


@click.command("install")
@click.argument("specs", nargs=-1)
@click.option("-r", "--requirement", "requirements", help="Install from a requirements file.")
@click.option("--require-hashes", is_flag=True, help="Refuse anything without a matching hash.")
@_yes
@_json
@pass_state
def install_command(
    state: CliState,
    specs: tuple[str, ...],
    requirements: str | None,
    require_hashes: bool,
    yes: bool,
    as_json: bool,
) -> None:
    """Install plugins (NAME[==VERSION], a path, a URL, or -r FILE) after reviewing them.

    The review shows each action with its safety class and capability, what everyone may
    use by default, the data statement, the Discord intents and permissions and the config
    secrets it asks for. Installing over an older version shows what changed instead.
    """
    _install(state, _source(specs, requirements, require_hashes), yes, as_json, upgrade=False)


@click.command("upgrade")
@click.argument("names", nargs=-1)
@_yes
@_json
@pass_state
def upgrade_command(state: CliState, names: tuple[str, ...], yes: bool, as_json: bool) -> None:
    """Upgrade plugins (all installed ones without NAME), showing what each new version widens.

    New or widened actions stay off in every server until an admin accepts them.
    """
    if not names:  # only what the index has newer versions of (pip's own answer)
        names = tuple(row["distribution"] for row in _outdated_rows())
        if not names:
            echo_json({"installed": False, "up_to_date": True, "distributions": []}) if (
                as_json
            ) else click.echo("Every installed plugin is up to date.")
            return
    _install(state, pip_runner.Source(names), yes, as_json, upgrade=True)


@click.command("uninstall")
@click.argument("name")
@_yes
@pass_state
def uninstall_command(state: CliState, name: str, yes: bool) -> None:
    """Remove a plugin distribution (by its distribution or plugin name).

    Its per-server settings stay in the database, so installing it again restores them.
    """
    dist = _find_installed(name)
    actions = [a.name for m in dist.manifests for a in m.actions]
    click.echo(f"{dist.distribution} {dist.version}: plugins {', '.join(dist.entry_points)}")
    click.echo(f"  actions that go away: {', '.join(actions) or 'none'}")
    if not yes and not click.confirm(f"Uninstall {dist.distribution}?", default=False):
        raise click.ClickException("Nothing was removed (add --yes to skip the question).")
    pip_runner.uninstall(dist.distribution)
    click.echo(f"Uninstalled {dist.distribution}. Restart Gigi to unload it.")


def _installed_plugins() -> list[PackagedPlugin]:
    importlib.invalidate_caches()
    plugins = []
    for plugin in plugin_distributions(known_capabilities=KERNEL_CAPABILITY_NAMES):
        plugins.append(plugin)
    return plugins


def _find_installed(name: str) -> PackagedPlugin:
    wanted = canonical(name)
    for plugin in _installed_plugins():
        names = {plugin.key, *map(canonical, plugin.entry_points)}
        names |= {canonical(m.plugin.name) for m in plugin.manifests}
        if wanted in names:
            return plugin
    known = ", ".join(p.distribution for p in _installed_plugins()) or "none"
    raise GigiError(
        f"no installed plugin distribution is called {name!r}",
        hint=f"installed: {known}; `gigi plugins list` shows plugin names",
    )


def _outdated_rows() -> list[dict[str, str]]:
    newer = {canonical(k): v for k, v in pip_runner.outdated().items()}
    return [
        {"distribution": p.distribution, "installed": p.version, "latest": newer[p.key]}
        for p in _installed_plugins()
        if p.key in newer
    ]


@click.command("outdated")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def outdated_command(as_json: bool) -> None:
    """Plugin distributions the package index has a newer version of (pip's answer)."""
    rows = _outdated_rows()
    if as_json:
        echo_json(rows)
    elif rows:
        table(rows, ["distribution", "installed", "latest"])
        click.echo("Review and install with: gigi upgrade NAME")
    else:
        click.echo("Every installed plugin is up to date.")


def register(cli: click.Group, plugins_group: click.Group) -> None:
    """The top-level lifecycle commands, and ``outdated`` / ``review`` under ``gigi plugins``."""
    from gigi_core.cli.plugin_review import review_command

    for command in (install_command, uninstall_command, upgrade_command):
        cli.add_command(command)
    plugins_group.add_command(outdated_command)
    plugins_group.add_command(review_command)
