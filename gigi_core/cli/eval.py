"""``gigi eval run``: run golden cases with a line per case, a summary and a CI-friendly exit."""

from __future__ import annotations

import time

import click

from gigi_core.cli.common import echo_json, run


@click.group("eval")
def eval_group() -> None:
    """Golden cases for the agent runtime (see docs/evals.md)."""


@eval_group.command("run")
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True))
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON.")
@click.option(
    "--database-url",
    default=None,
    help="Run on this PostgreSQL database (one throwaway schema per case); default: SQLite.",
)
def run_command(paths: tuple[str, ...], as_json: bool, database_url: str | None) -> None:
    """Run every case in PATHS (YAML files, or folders searched for *.yaml); exit 1 on a failure.

    Cases never touch the database configured for Gigi itself: each gets a fresh SQLite file
    unless --database-url is given. What a case logs is kept with it: the warnings and errors
    of a failing case are printed under it (a passing case may log an error on purpose).
    """
    from gigi_core.evalharness import CaseResult, run_cases

    def progress(result: CaseResult) -> None:
        if result.known_bug and not result.passed:
            mark = click.style("!", fg="yellow")
            click.echo(f"{mark} {result.name}  {result.duration_ms:.0f} ms  known bug")
            click.echo(f"    {result.path}: {result.known_bug}")
            return
        mark = click.style("✓", fg="green") if result.ok else click.style("✗", fg="red")
        click.echo(f"{mark} {result.name}  {result.duration_ms:.0f} ms")
        if result.known_bug:
            click.echo(f"    {result.path}: passes now: remove known_bug ({result.known_bug})")
        for line in result.problems + result.leaks:
            click.echo(f"    {result.path}: {line}")
        if not result.ok:  # a passing case's log lines are expected (it may crash on purpose)
            for line in result.log:
                click.echo(f"    log: {line}")

    started = time.perf_counter()
    results = run(
        run_cases(paths, database_url=database_url, progress=None if as_json else progress)
    )
    failed = [r for r in results if not r.ok]
    known = [r for r in results if r.known_bug and not r.passed]
    if as_json:
        echo_json([r.to_json() for r in results])
    else:
        elapsed = time.perf_counter() - started
        passed = len(results) - len(failed) - len(known)
        summary = f"{passed} passed, {len(failed)} failed"
        summary += f", {len(known)} known bugs" if known else ""
        summary += f" in {elapsed:.1f}s"
        click.echo(click.style(summary, fg="red" if failed else "green", bold=True))
    if failed or not results:
        raise SystemExit(1)


COMMANDS = [eval_group]
