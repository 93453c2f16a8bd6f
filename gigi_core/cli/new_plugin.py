"""`gigi new-plugin NAME`: render the plugin template into a new pip-installable package.

copier is an optional dependency (the ``author`` extra) and is imported only when the
command runs, so it costs nothing to the rest of the CLI.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import click

import gigi_core

PLUGIN_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
MAX_NAME = 32  # the root of the plugin's commands (the template's copier.yml says the same)


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


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def _validate_name(_ctx: click.Context, _param: click.Parameter, value: str) -> str:
    if not PLUGIN_NAME.match(value):
        raise click.BadParameter(
            f"{value!r} must match ^[a-z][a-z0-9_]*$ (lowercase letters, digits, underscores)"
        )
    if len(value) > MAX_NAME:
        raise click.BadParameter(
            f"{value!r} has {len(value)} characters; a plugin name must be at most {MAX_NAME} "
            "characters (it is the root of the plugin's commands)"
        )
    return value


def _parse_data(_ctx: click.Context, _param: click.Parameter, values: tuple[str, ...]) -> Any:
    data: dict[str, str] = {}
    for item in values:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise click.BadParameter(f"{item!r} is not KEY=VALUE (e.g. author_name='Ada')")
        if key.strip() == "plugin_name":
            raise click.BadParameter("give the plugin name as NAME, not as --data plugin_name=")
        data[key.strip()] = value
    return data


def questions(source: str) -> list[str] | None:
    """The template's questions (copier.yml keys that are asked), or None if unreadable."""
    from ruamel.yaml import YAML

    path = Path(source) / "copier.yml"
    try:
        loaded = YAML(typ="safe").load(path.read_text())
    except Exception:  # a remote template, or YAML that is not copier's: let copier judge
        return None
    if not isinstance(loaded, dict):
        return None
    return [
        key
        for key, spec in loaded.items()
        if not str(key).startswith("_")
        and not (isinstance(spec, dict) and spec.get("when") is False)
    ]


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
    "--defaults",
    is_flag=True,
    help="Ask nothing: take the default for every question not answered otherwise.",
)
@click.option(
    "--data",
    "data_items",
    multiple=True,
    metavar="KEY=VALUE",
    callback=_parse_data,
    help="Answer one template question (repeatable), e.g. --data author_name='Ada'.",
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
    name: str,
    dest: Path | None,
    description: str | None,
    defaults: bool,
    data_items: dict[str, str],
    template: str | None,
) -> None:
    """Render a new plugin package NAME from Gigi's copier template.

    Without a terminal nobody can answer its questions: pass --defaults (and --data
    KEY=VALUE for any answer you want to give).
    """
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
            "gigi new-plugin needs copier: pip install copier, or from a checkout "
            'pip install -e ".[author]" (once Gigi is published: pip install "gigi[author]")'
        ) from exc

    source = _source(template)
    asked = questions(source)
    unknown = sorted(set(data_items) - set(asked)) if asked is not None else []
    if unknown:
        raise click.BadParameter(
            f"unknown question {unknown[0]!r} (the template asks: {', '.join(asked or [])})",
            param_hint="'--data'",
        )
    if not defaults and not _isatty(sys.stdin):
        left = [q for q in asked or [] if q not in data_items and q != "plugin_name"]
        raise click.ClickException(
            "there is no terminal to ask the template's questions"
            + (f" ({', '.join(left)})" if left else "")
            + ": add --defaults to take the default answers, and --data KEY=VALUE for each "
            "answer you want to give, e.g. --defaults --data author_name='Ada Lovelace'"
        )
    data: dict[str, Any] = {**data_items, "plugin_name": name}
    if description is not None:
        data["description"] = description
    try:
        worker = copier.run_copy(
            source,
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
