"""``gigi manifest``: the plugin author's validate and schema tools."""

from __future__ import annotations

import sys

import click

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


@manifest_group.command("schema")
def schema() -> None:
    """Print the manifest v1 JSON Schema."""
    from gigi_core.manifest.schema import render_schema

    click.echo(render_schema(), nl=False)


COMMANDS = [manifest_group]
