"""Start-up with 1, 100 and 300 plugins: `gigi plugins list` and `Kernel.open`, empty and warm cache.

Each synthetic plugin is a real installed-looking distribution (a package, a dist-info with a
``gigi`` entry point) in a temporary folder put on ``PYTHONPATH``, with a manifest of ten
actions. Every figure is a fresh process, as a user's command is: "empty" starts with no
validated manifests under ``GIGI_HOME/cache``, "warm" after one run filled it. The anchors
in the same run: the interpreter starting and `gigi plugins list` with the installed plugins
only. Target: `gigi plugins list` with 300 plugins <= 0.5 s warm (2 cores).
"""

from __future__ import annotations

import compileall
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

COUNTS = (1, 100, 300)
ACTIONS = 10  # per synthetic manifest
RUNS = 5  # fresh processes per figure
TARGET = 0.5  # seconds: `gigi plugins list` with 300 plugins, warm

_ACTION = """\
  - name: {name}.a{i}
    description: Action {i} of {name}, which does one small thing.
    safety: {safety}
    capability: {name}.use
    args:
      type: object
      properties:
        text: {{type: string, description: What to work on, maxLength: 200}}
        count: {{type: integer, minimum: 1, maximum: 10, default: 1}}
      required: [text]
      additionalProperties: false
"""
_MANIFEST = """\
manifest_version: 1
plugin:
  name: {name}
  version: 1.0.0
  description: Synthetic plugin {name} for the start-up benchmark.
  data_statement: Stores nothing.
  capabilities:
    - {{name: {name}.use, description: Use it, default: everyone}}
actions:
{actions}"""
_MODULE = """\
from pathlib import Path
from gigi_core import hookimpl

@hookimpl
def register_manifests(register):
    register(Path(__file__).parent / "gigi.yaml")

@hookimpl
def register_tools(register):
    for i in range({actions}):
        register(f"{name}.a{{i}}", handler)

def handler(ctx, text, count=1):
    return {{"text": text * count}}
"""
_OPEN = """\
import asyncio, json, sys, time
started = time.perf_counter()
from gigi_core.kernel import Kernel

async def main():
    kernel = await Kernel.open(sys.argv[1], sys.argv[2])
    first = time.perf_counter() - started
    loaded = len(kernel.registry.manifests)
    await kernel.close()
    again = time.perf_counter()
    kernel = await Kernel.open(sys.argv[1], sys.argv[2])
    await kernel.close()
    print(json.dumps({"first": first, "again": time.perf_counter() - again, "loaded": loaded}))

asyncio.run(main())
"""


def make_site(root: Path, count: int) -> Path:
    """``count`` plugin distributions under ``root``; returns the folder to put on sys.path."""
    site = root / f"site-{count}"
    site.mkdir(parents=True)
    for n in range(count):
        name = f"bench{n:03d}"
        package = site / f"gigi_bench_{name}"
        package.mkdir()
        safeties = ("read_only", "write")
        actions = "".join(
            _ACTION.format(name=name, i=i, safety=safeties[i % 2]) for i in range(ACTIONS)
        )
        (package / "gigi.yaml").write_text(_MANIFEST.format(name=name, actions=actions))
        (package / "__init__.py").write_text(_MODULE.format(name=name, actions=ACTIONS))
        dist = site / f"gigi_bench_{name}-1.0.0.dist-info"
        dist.mkdir()
        (dist / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: gigi-bench-{name}\nVersion: 1.0.0\n"
        )
        (dist / "entry_points.txt").write_text(f"[gigi]\n{name} = gigi_bench_{name}\n")
    compileall.compile_dir(site, quiet=1)  # as pip does when it installs a wheel
    return site


def _env(site: Path | None, home: Path) -> dict[str, str]:
    env = {**os.environ, "GIGI_HOME": str(home)}
    env.pop("GIGI_LOAD_PLUGINS", None)
    env.pop("GIGI_DATABASE_URL", None)
    if site is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(site), env.get("PYTHONPATH")]))
    return env


def _timed(cmd: list[str], env: dict[str, str]) -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True)
    return time.perf_counter() - started, done.stdout


LIST = [sys.executable, "-c", "from gigi_core.cli import main; main()", "plugins", "list", "--json"]


def plugins_list(site: Path | None, scratch: Path, expect: int | None) -> dict[str, list[float]]:
    """Empty cache: a new GIGI_HOME per run; warm: one home, filled by a first run."""
    empty, warm = [], []
    for run in range(RUNS):
        home = scratch / f"home-list-{run}"
        seconds, out = _timed(LIST, _env(site, home))
        empty.append(seconds)
        ok = [p for p in json.loads(out) if p["status"] == "ok"]
        if expect is not None:
            bench = [p for p in ok if p["name"].startswith("bench")]
            assert len(bench) == expect, f"{len(bench)} of {expect} synthetic plugins loaded"
        shutil.rmtree(home)
    home = scratch / "home-list-warm"
    _timed(LIST, _env(site, home))
    for _ in range(RUNS):
        warm.append(_timed(LIST, _env(site, home))[0])
    shutil.rmtree(home)
    return {"empty": empty, "warm": warm}


def kernel_open(site: Path | None, scratch: Path, expect: int) -> dict[str, list[float]]:
    """``Kernel.open`` in a fresh process (imports included), then again in that process."""
    figures: dict[str, list[float]] = {"empty": [], "warm": [], "again": []}
    home = scratch / "home-open"
    url = f"sqlite:///{home / 'gigi.db'}"
    for run in range(RUNS + 1):
        shutil.rmtree(home / "cache", ignore_errors=True)  # empty: no validated manifests
        cmd = [sys.executable, "-c", _OPEN, url, str(home)]
        empty = json.loads(_timed(cmd, _env(site, home))[1])
        warm = json.loads(_timed(cmd, _env(site, home))[1])  # the first run filled the cache
        if run == 0:
            continue  # the database was created and migrated: not start-up
        assert warm["loaded"] >= expect, warm
        figures["empty"].append(empty["first"])
        figures["warm"].append(warm["first"])
        figures["again"].append(warm["again"])
    shutil.rmtree(home)
    return figures


def _ms(values: list[float]) -> str:
    return f"median {statistics.median(values) * 1000:.0f} ms (min {min(values) * 1000:.0f})"


def main() -> None:
    scratch = Path(tempfile.mkdtemp(prefix="gigi-bench-cold-"))
    try:
        python = [_timed([sys.executable, "-c", "pass"], os.environ)[0] for _ in range(RUNS)]
        print(f"cold start, {RUNS} fresh processes per figure, {ACTIONS} actions per plugin")
        print(f"  anchor: python -c pass                      {_ms(python)}")
        base = plugins_list(None, scratch, None)
        print(f"  anchor: gigi plugins list, installed only   warm {_ms(base['warm'])}")
        for count in COUNTS:
            site = make_site(scratch, count)
            listed = plugins_list(site, scratch, count)
            opened = kernel_open(site, scratch, count)
            verdict = ""
            if count == 300:
                met = statistics.median(listed["warm"]) <= TARGET
                verdict = f"  (target <= {TARGET * 1000:.0f} ms warm: {'met' if met else 'MISSED'})"
            print(f"  {count:>3} plugins: gigi plugins list  empty {_ms(listed['empty'])}")
            print(f"               gigi plugins list  warm  {_ms(listed['warm'])}{verdict}")
            print(f"               Kernel.open        empty {_ms(opened['empty'])}")
            print(f"               Kernel.open        warm  {_ms(opened['warm'])}")
            print(f"               Kernel.open again in the process {_ms(opened['again'])}")
            shutil.rmtree(site)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
