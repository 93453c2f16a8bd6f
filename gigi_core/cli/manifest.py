"""``gigi manifest``: validate and schema for plugin authors; show what a loaded plugin declares."""

from __future__ import annotations

import sys

import click

from gigi_core.cli.common import complete_manifest_names, echo_json, pass_state
from gigi_core.errors import ManifestError


@click.group("manifest")
def manifest_group() -> None:
    """Validate manifests and print the manifest JSON Schema."""


@manifest_group.command("validate")
@click.argument("paths", nargs=-1, required=True, type=click.Path(dir_okay=False))
def validate(paths: tuple[str, ...]) -> None:
    """Exit 0 when every PATH is valid; otherwise print one line per problem and exit 1."""
    from gigi_core.manifest.loader import load_manifest
    from gigi_core.policy.capabilities import KERNEL_CAPABILITY_NAMES

    problems: list[str] = []
    for path in paths:
        try:
            loaded = load_manifest(path, known_capabilities=KERNEL_CAPABILITY_NAMES)
        except ManifestError as exc:
            problems.extend(exc.problems)
        else:
            click.echo(
                f"{path}: ok ({loaded.manifest.plugin.name}, {len(loaded.manifest.actions)} actions)"
            )
    for problem in problems:
        click.echo(problem, err=True)
    sys.exit(1 if problems else 0)


@manifest_group.command("show")
@click.argument("name", shell_complete=complete_manifest_names)
@click.option("--json", "as_json", is_flag=True, help="Print it as JSON.")
@pass_state
def show(state: object, name: str, as_json: bool) -> None:
    """Print the validated manifest of the loaded plugin NAME (generated ones included).

    What the kernel actually uses, after validation: a plugin that builds its manifest at
    start-up (gigi-mcp's servers) shows the generated file, its source and every action.
    """
    registry = state.plugins().registry  # type: ignore[attr-defined]
    manifest = registry.manifests.get(name)
    if manifest is None:
        import difflib

        known = ", ".join(sorted(registry.manifests)) or "none"
        close = difflib.get_close_matches(name, list(registry.manifests), n=3)
        guess = f"; did you mean {', '.join(close)}?" if close else ""
        raise click.ClickException(f"no loaded plugin declares {name!r} (loaded: {known}){guess}")
    import json

    data = json.loads(json.dumps(manifest.to_dict(), default=list))  # tuples -> lists
    sources = [
        m.source
        for record in registry.records.values()
        for m in record.contributions.manifests
        if m.manifest.plugin.name == name
    ]
    if as_json:
        echo_json({"source": sources[0] if sources else None, **data})
        return
    from ruamel.yaml import YAML

    if sources:
        click.echo(f"# {sources[0]}")
    yaml = YAML(typ="safe", pure=True)
    yaml.default_flow_style = False
    yaml.dump(data, sys.stdout)


@manifest_group.command("schema")
def schema() -> None:
    """Print the manifest v1 JSON Schema."""
    from gigi_core.manifest.schema import render_schema

    click.echo(render_schema(), nl=False)


COMMANDS = [manifest_group]
