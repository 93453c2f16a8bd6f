"""``gigi install|uninstall|upgrade`` and ``gigi plugins outdated``: pip, after a review.

A candidate and its dependencies are resolved as wheels only and fetched into a throwaway
folder, where its packaged manifests are read (no package code is built or run); the
operator sees what it may do — or, for an upgrade, what it widens — and only then does pip
install exactly those wheel files into this environment. An upgrade's widened actions are
recorded as held back, so every server keeps them (and the plugin's event observers) off
until an admin accepts them (``gigi plugins review``). The work is in ``install_flow``, imported when one
of these commands runs.
"""

from __future__ import annotations

import click

from gigi_core.cli.common import CliState, echo_json, pass_state, table

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
    """Install plugins (NAME[==VERSION], a wheel file or URL, or -r FILE) after reviewing them.

    The review shows each action with its safety class and capability, what everyone may
    use by default, the data statement, the Discord intents and permissions and the config
    secrets it asks for, then every wheel pip installs. Installing over an older version
    shows what changed instead. Source (a folder, an sdist, a VCS link) is refused: building
    it would run its code before the review; build a wheel and install that.
    """
    from gigi_core.cli import install_flow as flow

    flow.install(state, flow.source(specs, requirements, require_hashes), yes, as_json, False)


@click.command("upgrade")
@click.argument("names", nargs=-1)
@_yes
@_json
@pass_state
def upgrade_command(state: CliState, names: tuple[str, ...], yes: bool, as_json: bool) -> None:
    """Upgrade plugins (all installed ones without NAME), showing what each new version widens.

    New or widened actions stay off in every server until an admin accepts them.
    """
    from gigi_core.cli import install_flow as flow
    from gigi_core.cli.pip_runner import Source

    if not names:  # only what the index has newer versions of (pip's own answer)
        names = tuple(row["distribution"] for row in flow.outdated_rows())
        if not names:
            if as_json:
                echo_json({"installed": False, "up_to_date": True, "distributions": []})
            else:
                click.echo("Every installed plugin is up to date.")
            return
    flow.install(state, Source(names), yes, as_json, upgrade=True)


@click.command("uninstall")
@click.argument("name")
@_yes
@pass_state
def uninstall_command(state: CliState, name: str, yes: bool) -> None:
    """Remove a plugin distribution (by its distribution or plugin name).

    Its per-server settings stay in the database, so installing it again restores them.
    """
    from gigi_core.cli import install_flow as flow
    from gigi_core.cli.pip_runner import uninstall

    dist = flow.find_installed(name)
    actions = [a.name for m in dist.manifests for a in m.actions]
    click.echo(f"{dist.distribution} {dist.version}: plugins {', '.join(dist.entry_points)}")
    click.echo(f"  actions that go away: {', '.join(actions) or 'none'}")
    if dist.problems:
        click.echo("  its manifest does not validate (so its actions are not listed):")
        for problem in dist.problems:
            click.echo(f"    {problem}")
    if not yes and not click.confirm(f"Uninstall {dist.distribution}?", default=False):
        raise click.ClickException("Nothing was removed (add --yes to skip the question).")
    uninstall(dist.distribution)
    click.echo(f"Uninstalled {dist.distribution}. Restart Gigi to unload it.")


@click.command("outdated")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def outdated_command(as_json: bool) -> None:
    """Plugin distributions the package index has a newer version of (pip's answer)."""
    from gigi_core.cli.install_flow import outdated_rows

    rows = outdated_rows()
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
