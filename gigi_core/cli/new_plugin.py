"""`gigi new-plugin NAME`: render the plugin template into a new pip-installable package.

copier is an optional dependency (the ``author`` extra) and is imported only when the
command runs, so it costs nothing to the rest of the CLI.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import click

import gigi_core

PLUGIN_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


def template_path() -> Path:
    """Where the plugin template lives: bundled in the wheel, else the source checkout's."""
    package_dir = Path(gigi_core.__file__).resolve().parent
    for candidate in (package_dir / "_plugin_template", package_dir.parent / "plugin-template"):
        if (candidate / "copier.yml").is_file():
            return candidate
    raise click.ClickException(
        f"the plugin template is missing: looked in {package_dir / '_plugin_template'} "
        f"and {package_dir.parent / 'plugin-template'}; reinstall gigi"
    )


def _source(template: str | None) -> str:
    """The copier source: the bundled template, or the given one (local folders made absolute)."""
    if template is None:
        return str(template_path())
    local = Path(template).expanduser()
    return str(local.resolve()) if local.is_dir() else template


def _git_config(key: str) -> str | None:
    """One value of the user's git configuration, or None (no git, unset, slow)."""
    try:
        done = subprocess.run(
            ["git", "config", "--get", key], capture_output=True, text=True, timeout=5
        )
    except (OSError, subprocess.SubprocessError):
        return None
    value = done.stdout.strip()
    return value if done.returncode == 0 and value else None


def _author_defaults() -> dict[str, str]:
    """Suggest the author from git so `--defaults` renders something sensible."""
    found = {"author_name": _git_config("user.name"), "author_email": _git_config("user.email")}
    return {key: value for key, value in found.items() if value}


def _validate_name(_ctx: click.Context, _param: click.Parameter, value: str) -> str:
    if not PLUGIN_NAME.match(value):
        raise click.BadParameter(
            f"{value!r} must match ^[a-z][a-z0-9_]*$ (lowercase letters, digits, underscores)"
        )
    return value


@click.command(name="new-plugin")
@click.argument("name", callback=_validate_name)
@click.option(
    "--dest",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Folder to create (default: ./gigi-NAME with _ as -).",
)
@click.option("--description", default=None, help="One sentence saying what the plugin does.")
@click.option(
    "--defaults", is_flag=True, help="Ask nothing: take the default for every other question."
)
@click.option(
    "--template",
    "template",
    default=None,
    metavar="SRC",
    help="Render from this copier template (a git URL or folder) instead of the bundled one; "
    "a tagged git template lets `copier update` merge later template changes.",
)
def new_plugin_command(
    name: str, dest: Path | None, description: str | None, defaults: bool, template: str | None
) -> None:
    """Render a new plugin package NAME from Gigi's copier template."""
    target = dest if dest is not None else Path.cwd() / f"gigi-{name.replace('_', '-')}"
    if target.exists() and any(target.iterdir()):
        raise click.ClickException(
            f"{target} already exists and is not empty; choose another --dest "
            "(to refresh a rendered plugin, run `copier update` or `copier recopy` there)"
        )

    try:
        import copier
        from copier.errors import CopierError
    except ImportError as exc:
        raise click.ClickException(
            'gigi new-plugin needs copier: pip install "gigi[author]"'
        ) from exc

    data: dict[str, Any] = {"plugin_name": name}
    if description is not None:
        data["description"] = description
    try:
        worker = copier.run_copy(
            _source(template),
            target,
            data=data,
            user_defaults=_author_defaults(),
            defaults=defaults,
            unsafe=False,
            quiet=True,
        )
    except KeyboardInterrupt as exc:  # copier's answer interrupt is also a CopierError
        raise click.Abort() from exc
    except (ValueError, CopierError) as exc:
        raise click.ClickException(str(exc)) from exc

    package = worker.answers.combined.get("package_name", f"gigi_{name}")
    click.echo(f"Created plugin {name!r} in {target}")
    click.echo("Next:")
    click.echo(f"  cd {target}")
    click.echo('  pip install -e ".[test]" && pytest')
    click.echo(f"  gigi manifest validate {package}/gigi.yaml")
    click.echo("  gigi plugins list")
