"""`gigi dev postgres`: the embedded PostgreSQL of the test extras, started for a person to
try Gigi on, printing the GIGI_DATABASE_URL that works; Ctrl-C stops it, data kept."""

from __future__ import annotations

import asyncio
import os
import shlex
import signal
import subprocess
import sys

import pytest

from gigi_core.cli.dev_postgres import sqlalchemy_url
from gigi_core.testing import open_test_kernel

GIGI = [sys.executable, "-c", "from gigi_core.cli import main; main()"]


def test_the_url_names_the_gigi_database_on_the_servers_socket() -> None:
    uri = "postgresql://postgres@/postgres?host=/tmp/pg&port=5433"
    assert (
        sqlalchemy_url(uri, "gigi") == "postgresql+psycopg://postgres@/gigi?host=/tmp/pg&port=5433"
    )
    assert (
        sqlalchemy_url("postgresql://u@h:5/postgres", "gigi") == "postgresql+psycopg://u@h:5/gigi"
    )


async def _use(url: str, tmp_path) -> list[str]:
    async with open_test_kernel(tmp_path, plugins=["dice"], database_url=url) as kernel:
        await kernel.enable_plugin("g1", "dice")
        return await kernel.plugin_state.enabled_plugins("g1")


@pytest.mark.slow
def test_it_prints_a_url_gigi_opens_and_stops_on_ctrl_c(tmp_path) -> None:
    data = tmp_path / "pg"
    env = {**os.environ, "GIGI_HOME": str(tmp_path / "home")}
    proc = subprocess.Popen(
        [*GIGI, "dev", "postgres", "--data", str(data)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        url = None
        assert proc.stdout is not None
        for line in proc.stdout:
            if "export GIGI_DATABASE_URL=" in line:
                url = shlex.split(line.split("=", 1)[1])[0]
                break
        assert url is not None and url.startswith("postgresql+psycopg://"), proc.stderr.read()
        assert "dice" in asyncio.run(_use(url, tmp_path))
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert "Stopped." in out and (data / "PG_VERSION").exists()  # kept for the next run
