"""Commands that never call a model must not pay for pydantic, SQLAlchemy or httpx; with a
warm manifest cache they parse no YAML and compile no schema either."""

from __future__ import annotations

import json
import os
import subprocess
import sys


def test_plugins_list_imports_no_heavy_modules(tmp_path) -> None:
    script = (
        "import sys\n"
        "from gigi_core.cli import main\n"
        "sys.argv = ['gigi', 'plugins', 'list', '--json']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "heavy = sorted(m for m in ('pydantic', 'sqlalchemy', 'httpx', 'discord', 'asyncio',"
        " 'ruamel.yaml', 'jsonschema_rs') if m in sys.modules)\n"
        "print('HEAVY=' + ','.join(heavy))\n"
    )
    env = {**os.environ, "GIGI_HOME": str(tmp_path)}
    env.pop("GIGI_LOAD_PLUGINS", None)
    for _ in range(2):  # the second start reads validated manifests from the cache
        out = subprocess.run(
            [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True
        )
    listed = json.loads(out.stdout[: out.stdout.rindex("HEAVY=")])
    assert all(p["status"] == "ok" for p in listed), listed
    assert out.stdout.strip().rsplit("HEAVY=", 1)[1] == ""
