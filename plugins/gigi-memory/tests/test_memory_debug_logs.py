"""``gigi --debug`` writes no message text to its log: the database drivers log statement
values and result rows at DEBUG, and they must not reach stderr (issue 28)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

from memory_helpers import enable

from gigi_core.testing import open_test_kernel

KEY = "a" * 43
CANARY = "canarydebugtext"


def gigi(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    code = "import sys; from gigi_core.cli import main; sys.argv = ['gigi', *sys.argv[1:]]; main()"
    return subprocess.run(
        [sys.executable, "-c", code, *args], env=env, capture_output=True, text=True, timeout=300
    )


def test_debug_logs_of_an_import_and_a_read_hold_no_message_text(
    database_url: str, tmp_path: Path
) -> None:
    async def prepare() -> None:
        async with open_test_kernel(
            tmp_path, plugins=["memory"], database_url=database_url, secret_key=KEY
        ) as k:
            await k.enable_plugin("g1", "memory")
            await enable(k)

    asyncio.run(prepare())
    when = (datetime.now(UTC) - timedelta(days=1)).isoformat()
    export = {
        "guild": {"id": "g1"},
        "channel": {"id": "c1", "type": "GuildTextChat"},
        "messages": [
            {
                "id": "501",
                "type": "Default",
                "timestamp": when,
                "content": f"the {CANARY} words",
                "author": {"id": "u1", "name": "someone", "isBot": False},
            }
        ],
    }
    path = tmp_path / "export.json"
    path.write_text(json.dumps(export))
    env = {
        **os.environ,
        "GIGI_HOME": str(tmp_path / "home"),
        "GIGI_DATABASE_URL": database_url,
        "GIGI_SECRET_KEY": KEY,
        "GIGI_LOAD_PLUGINS": "memory",
    }
    imported = gigi("--debug", "memory", "import", str(path), "--guild", "g1", env=env)
    assert imported.returncode == 0, imported.stderr[-3000:]
    assert "imported 1 of 1" in imported.stdout
    read = gigi(
        "--debug", "tools", "call", "memory.recent", "--guild", "g1", "--user", "admin",
        "--admin", "--channel", "c1", env=env,
    )  # fmt: skip
    assert read.returncode == 0, read.stderr[-3000:]
    assert CANARY in read.stdout  # the text was stored and read back...
    for run in (imported, read):
        assert "\nINFO " in f"\n{run.stderr}"  # ...with debug logging on (INFO shows)...
        assert CANARY not in run.stderr, [  # ...and never logged
            line for line in run.stderr.splitlines() if CANARY in line
        ][:5]
