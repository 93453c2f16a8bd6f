"""``gigi jobs``: list, show, cancel, retry, wait for and defer background jobs."""

from __future__ import annotations

import sys
from typing import Any

import click

from gigi_core.cli.common import echo_json, parse_json_option, table, with_kernel
from gigi_core.jobs import STATUSES, JobError, JobInfo


@click.group("jobs")
def jobs_group() -> None:
    """Background jobs: what is queued, running, done or failed (metadata only)."""


def _progress(info: JobInfo) -> str:
    p = info.progress
    if p is None:
        return ""
    return f"{p.done}/{p.total}" if p.total is not None else str(p.done)


@jobs_group.command("list")
@click.option("--status", type=click.Choice(STATUSES), help="Only jobs with this status.")
@click.option("--name", help="Only jobs with this name.")
@click.option("--limit", default=50, show_default=True, help="At most this many, newest first.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@with_kernel
async def list_jobs(
    kernel: Any, status: str | None, name: str | None, limit: int, as_json: bool
) -> None:
    """Recent jobs, newest first."""
    infos = await kernel.jobs.list(status, limit, name=name)
    if as_json:
        echo_json([i.as_dict() for i in infos])
        return
    rows = [
        {
            "id": i.id[:12],
            "name": i.name,
            "status": i.status + (" (cancel asked)" if i.cancel_requested else ""),
            "attempts": f"{i.attempts}/{i.retries + 1}",
            "progress": _progress(i),
            "run_at": i.run_at.isoformat(timespec="seconds"),
            "error": i.error_class,
        }
        for i in infos
    ]
    table(rows, ["id", "name", "status", "attempts", "progress", "run_at", "error"])


@jobs_group.command("show")
@click.argument("job_id")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@with_kernel
async def show(kernel: Any, job_id: str, as_json: bool) -> None:
    """One job's metadata; the payload is shown by its keys only."""
    info = await kernel.jobs.get(await kernel.jobs.resolve(job_id))
    data = info.as_dict(payload_keys=True)
    if as_json:
        echo_json(data)
        return
    data["progress"] = _progress(info) + (
        f" {info.progress.note}" if info.progress and info.progress.note else ""
    )
    data["payload_keys"] = ", ".join(info.payload_keys)
    width = max(len(k) for k in data)
    for field, value in data.items():
        click.echo(f"{field.ljust(width)}  {'' if value is None else value}")


@jobs_group.command("cancel")
@click.argument("job_id")
@with_kernel
async def cancel(kernel: Any, job_id: str) -> None:
    """Cancel a queued job, or ask a running one to stop."""
    full = await kernel.jobs.resolve(job_id)
    if not await kernel.jobs.cancel(full):
        info = await kernel.jobs.get(full)
        raise JobError(f"job {full} is {info.status}: nothing to cancel")
    info = await kernel.jobs.get(full)
    if info.status == "cancelled":
        click.echo(f"Cancelled job {full} ({info.name}).")
    else:
        click.echo(f"Asked running job {full} ({info.name}) to stop; it ends cancelled.")


@jobs_group.command("retry")
@click.argument("job_id")
@click.option("--wait", "wait_", is_flag=True, help="Wait until it ends (a worker must run).")
@with_kernel
async def retry(kernel: Any, job_id: str, wait_: bool) -> None:
    """Queue a failed or cancelled job again."""
    full = await kernel.jobs.resolve(job_id)
    await kernel.jobs.retry(full)
    click.echo(f"Queued job {full} again.")
    if wait_:
        await _wait(kernel, full, None)


@jobs_group.command("wait")
@click.argument("job_id")
@click.option("--timeout", "timeout_s", type=float, help="Give up after this many seconds.")
@with_kernel
async def wait(kernel: Any, job_id: str, timeout_s: float | None) -> None:
    """Wait for a job to end, with a progress bar in a terminal; exit 1 unless it is done."""
    await _wait(kernel, await kernel.jobs.resolve(job_id), timeout_s)


@jobs_group.command("defer")
@click.argument("name")
@click.option("--payload", help="The job's arguments as a JSON object.")
@click.option("--key", help="At most one queued job per key: repeating it returns that job.")
@click.option("--wait", "wait_", is_flag=True, help="Wait until it ends (a worker must run).")
@with_kernel
async def defer(kernel: Any, name: str, payload: str | None, key: str | None, wait_: bool) -> None:
    """Queue a registered job by hand (for example a periodic one, now)."""
    job_id = await kernel.jobs.defer(name, parse_json_option(payload, "--payload"), key=key)
    click.echo(job_id)
    if wait_:
        await _wait(kernel, job_id, None)


async def _wait(kernel: Any, job_id: str, timeout_s: float | None) -> None:
    info = await kernel.jobs.get(job_id)
    if info.status == "queued":
        click.echo("Waiting for a worker (gigi run or gigi worker) to run it.", err=True)
    bar: Any = None

    def update(info: JobInfo) -> None:
        nonlocal bar
        p = info.progress
        if not sys.stdout.isatty() or p is None or not p.total:
            return
        if bar is None:
            bar = click.progressbar(length=p.total, label=f"{info.name} {info.id[:12]}")
            bar.__enter__()
        bar.length = p.total
        if p.done > bar.pos:
            bar.update(p.done - bar.pos)

    try:
        info = await kernel.jobs.wait(job_id, timeout_s=timeout_s, on_update=update)
    finally:
        if bar is not None:
            bar.__exit__(None, None, None)
    if info.status == "done":
        click.echo(f"Job {job_id} ({info.name}) done after {info.attempts} attempt(s).")
        return
    detail = f" ({info.error_class})" if info.error_class else ""
    click.echo(f"Job {job_id} ({info.name}) {info.status}{detail}.", err=True)
    sys.exit(1)


COMMANDS = [jobs_group]
