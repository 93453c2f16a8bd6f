"""Cold start of `gigi plugins list` in a fresh process (target <= 0.5 s on 2 cores)."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time


def measure(runs: int = 15) -> list[float]:
    env = {**os.environ, "GIGI_HOME": tempfile.mkdtemp(prefix="gigi-bench-")}
    env.pop("GIGI_LOAD_PLUGINS", None)
    cmd = [
        sys.executable,
        "-c",
        "from gigi_core.cli import main; main()",
        "plugins",
        "list",
        "--json",
    ]
    subprocess.run(cmd, env=env, check=True, capture_output=True)  # warm the OS file cache
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(cmd, env=env, check=True, capture_output=True)
        times.append(time.perf_counter() - started)
    return times


def main() -> None:
    import json

    env = {**os.environ, "GIGI_HOME": tempfile.mkdtemp(prefix="gigi-bench-")}
    listed = subprocess.run(
        [
            sys.executable,
            "-c",
            "from gigi_core.cli import main; main()",
            "plugins",
            "list",
            "--json",
        ],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    plugins = [f"{p['name']}({p['status']})" for p in json.loads(listed.stdout)]
    times = measure()
    print(f"cold start: gigi plugins list --json with {len(plugins)} plugins: {', '.join(plugins)}")
    print(
        f"  median {statistics.median(times) * 1000:.0f} ms, min {min(times) * 1000:.0f} ms, "
        f"max {max(times) * 1000:.0f} ms over {len(times)} runs (target <= 500 ms)"
    )


if __name__ == "__main__":
    main()
