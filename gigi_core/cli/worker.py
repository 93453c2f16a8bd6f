"""``gigi worker``: a worker process without a surface (several may share PostgreSQL)."""

from __future__ import annotations

import click

from gigi_core.cli.common import CliState, freeze_startup_heap, pass_state, run


@click.command("worker")
@click.option("--until-idle", is_flag=True, help="Run every job that is due, then exit.")
@pass_state
def worker_command(state: CliState, until_idle: bool) -> None:
    """Run background jobs until stopped (SIGINT or SIGTERM: running jobs get a grace period)."""
    import asyncio
    import contextlib
    import signal

    from gigi_core.store.db import redact_url

    async def body() -> None:
        kernel = await state.open_kernel()
        try:
            names = sorted(kernel.registry.jobs)
            click.echo(
                f"Gigi worker on {redact_url(kernel.db.url)} ({kernel.jobs.backend.name}); "
                f"jobs: {', '.join(names) or 'none registered'}"
            )
            if until_idle:
                await kernel.jobs.run_until_idle()
                click.echo("Nothing left to run.")
                return
            if not names:
                click.echo("No plugin registers a job; nothing to run.")
                return
            freeze_startup_heap()  # no full-collection pause rescans what start-up built
            stop = asyncio.Event()
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGINT, signal.SIGTERM):
                with contextlib.suppress(NotImplementedError, RuntimeError):
                    loop.add_signal_handler(sig, stop.set)
            await kernel.jobs.start()
            await kernel.changes.listen()
            click.echo(f"Worker {kernel.jobs.worker_id} running; Ctrl-C stops it.")
            await stop.wait()
            click.echo("Stopping: running jobs are asked to stop.")
        finally:
            await kernel.close()

    run(body())


COMMANDS = [worker_command]
