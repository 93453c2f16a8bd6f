"""`gigi install|upgrade|uninstall` and `gigi plugins outdated|review` with the real pip, in a
throwaway virtualenv, from locally built wheels (no network: ``--no-index``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.plugin_wheels import MANIFEST_11, PACKAGE, build_wheel, helper_wheel, plugin_files

pytestmark = pytest.mark.slow
TIMEOUT = 300


@dataclass
class Env:
    """A virtualenv that sees the outer one's packages (Gigi, pip) but installs into itself."""

    python: Path
    env: dict[str, str]
    wheels: Path
    cwd: Path

    def gigi(self, *args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
        code = "from gigi_core.cli import main; main()"
        return subprocess.run(
            [str(self.python), "-c", code, *args],
            env={**self.env},
            cwd=self.cwd,
            input=input,
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            check=False,
        )

    def widget_version(self) -> str | None:
        """The widget's version importable in the virtualenv now (None: not installed)."""
        code = f"import {PACKAGE}; print({PACKAGE}.VERSION)"
        done = subprocess.run(
            [str(self.python), "-c", code],
            env=self.env,
            cwd=self.cwd,
            capture_output=True,
            text=True,
            check=False,
        )
        return done.stdout.strip() if done.returncode == 0 else None


def _ok(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 0, f"exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done.stdout


@pytest.fixture
def venv(tmp_path: Path) -> Env:
    """SQLite only: what these tests add is pip and the review around it; the holds and
    accepts they record are tested on both backends in test_plugin_holds.py."""
    return make_env(tmp_path, f"sqlite+aiosqlite:///{tmp_path / 'gigi-test.db'}")


def make_env(tmp_path: Path, database_url: str) -> Env:
    root = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True)
    inner = root / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages"
    outer = sysconfig.get_paths()["purelib"]
    (inner / "_outer_env.pth").write_text(f"import site; site.addsitedir({outer!r})\n")
    wheels = tmp_path / "wheels"
    build_wheel(wheels, "1.0")
    build_wheel(wheels, "1.1")
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("GIGI_", "PYTEST_", "PYTHON", "VIRTUAL_ENV", "PIP_", "COV_"))
    }
    env.update(
        GIGI_HOME=str(tmp_path / "home"),
        GIGI_DATABASE_URL=database_url,
        GIGI_LOAD_PLUGINS="widget",
        PIP_NO_INDEX="1",
        PIP_FIND_LINKS=str(wheels),
    )
    return Env(root / "bin" / "python", env, wheels, tmp_path)


def test_install_review_refusal_failures_upgrade_hold_accept_uninstall(
    venv: Env, tmp_path: Path
) -> None:
    # --json without --yes: the review only, nothing installed.
    review = json.loads(_ok(venv.gigi("install", "gigi-widget==1.0", "--json")))
    assert review["installed"] is False
    [dist] = review["distributions"]
    assert (dist["distribution"], dist["new_version"], dist["upgrade"]) == (
        "gigi-widget",
        "1.0",
        False,
    )
    [plugin] = dist["review"]
    assert {a["name"]: a["safety"] for a in plugin["actions"]} == {
        "widget.count": "read_only",
        "widget.reset": "write",
    }
    assert plugin["everyone"] == ["widget.use"]
    assert plugin["intents"] == ["guilds"]
    assert venv.widget_version() is None

    # Saying no installs nothing, and says how to skip the question.
    declined = venv.gigi("install", "gigi-widget==1.0", input="n\n")
    assert declined.returncode == 1
    assert "widget.reset: write, needs widget.admin (admins unless granted)" in declined.stdout
    assert "stores: Stores nothing." in declined.stdout
    assert "you declined the review (add --yes" in declined.stderr
    assert venv.widget_version() is None

    out = _ok(venv.gigi("install", "gigi-widget==1.0", "--yes"))
    assert "Installed gigi-widget==1.0" in out
    assert venv.widget_version() == "1.0"
    _ok(venv.gigi("plugins", "enable", "widget", "--guild", "g1"))
    count = ["tools", "call", "widget.count", "--guild", "g1", "--user", "u1"]
    assert json.loads(_ok(venv.gigi(*count))) == {"ran": "widget.count"}

    # The index knows 1.1.
    outdated = json.loads(_ok(venv.gigi("plugins", "outdated", "--json")))
    assert outdated == [{"distribution": "gigi-widget", "installed": "1.0", "latest": "1.1"}]

    # A candidate with a broken manifest: named by file, line and field; 1.0 stays.
    broken = build_wheel(tmp_path / "broken", "broken")
    failed = venv.gigi("install", str(broken), "--yes")
    assert failed.returncode == 1
    assert f"{PACKAGE}/gigi.yaml:" in failed.stderr and "safety" in failed.stderr
    assert "/tmp" not in failed.stderr.split("gigi.yaml")[0].rsplit("\n", 1)[-1]
    assert venv.widget_version() == "1.0"

    # pip cannot resolve it (a dependency nobody has): what pip said, once, before the
    # review; the installed 1.0 keeps working.
    bad = build_wheel(tmp_path / "bad", "1.5", requires=("gigi-no-such-dependency>=1",))
    failed = venv.gigi("install", str(bad), "--yes")
    assert failed.returncode == 1
    assert failed.stderr.count("pip could not fetch") == 1
    assert failed.stderr.count("gigi-no-such-dependency") >= 1
    assert "Traceback" not in failed.stderr
    assert venv.widget_version() == "1.0"
    assert json.loads(_ok(venv.gigi(*count))) == {"ran": "widget.count"}

    # Upgrade: the review is a diff; the widened actions are held back in every server.
    upgraded = venv.gigi("upgrade", "gigi-widget", input="y\n")
    text = _ok(upgraded)
    assert "gigi-widget 1.0 -> 1.1" in text
    assert "widget.add (HELD BACK until accepted per server):" in text
    assert "no longer asks for confirmation" in text
    assert "new Discord intent: message_content" in text
    assert "new config secret: api_token" in text
    assert "data statement: 'Stores nothing.' -> 'Stores the name of each widget.'" in text
    assert "Held back in every server until accepted: widget:" in text
    assert venv.widget_version() == "1.1"

    denied = venv.gigi(*count)
    assert denied.returncode == 3, denied
    assert "gigi plugins review widget --guild <server id> --accept" in denied.stderr

    pending = json.loads(_ok(venv.gigi("plugins", "review", "--guild", "g1", "--json")))
    [held] = pending["pending"]
    assert (held["plugin"], held["version"]) == ("widget", "1.1")
    assert {a["action"] for a in held["actions"]} == {"*", "widget.add", "widget.reset"}

    everywhere = json.loads(_ok(venv.gigi("plugins", "review", "--json")))
    assert list(everywhere) == ["g1"] and everywhere["g1"][0]["version"] == "1.1"
    unknown = venv.gigi("plugins", "review", "widgit", "--guild", "g1")
    assert unknown.returncode == 1 and "no plugin named 'widgit' is loaded" in unknown.stderr
    unnamed = venv.gigi("plugins", "review", "--accept")
    assert unnamed.returncode == 2 and "--accept needs --guild G" in unnamed.stderr
    both = venv.gigi("plugins", "review", "--guild", "g1", "--dm")
    assert both.returncode == 2 and "--guild G or --dm, not both" in both.stderr
    in_dms = json.loads(_ok(venv.gigi("plugins", "review", "widget", "--dm", "--json")))
    assert [p["version"] for p in in_dms["pending"]] == ["1.1"]  # no guild accepts for DMs
    dms = _ok(venv.gigi("plugins", "review", "widget", "--dm", "--accept", "--yes"))
    assert "Accepted in direct messages: widget 1.1." in dms
    assert venv.gigi(*count).returncode == 3  # g1 still decides for itself

    no = venv.gigi("plugins", "review", "widget", "--guild", "g1", "--accept", input="n\n")
    assert no.returncode == 1 and "Nothing was accepted" in no.stderr
    assert venv.gigi(*count).returncode == 3

    out = _ok(venv.gigi("plugins", "review", "widget", "--guild", "g1", "--accept", "--yes"))
    assert "Accepted in server g1: widget 1.1." in out
    assert json.loads(_ok(venv.gigi(*count))) == {"ran": "widget.count"}
    assert venv.gigi("tools", "call", "widget.count", "--guild", "g2", "--user", "u1").returncode

    # Up to date now; then uninstall by plugin name.
    assert "Already up to date" in _ok(venv.gigi("upgrade", "gigi-widget", "--yes"))
    gone = _ok(venv.gigi("uninstall", "widget", "--yes"))
    assert "actions that go away: widget.count, widget.reset, widget.add" in gone
    assert venv.widget_version() is None


def test_requirements_file_with_hashes(tmp_path: Path) -> None:
    import hashlib

    venv = make_env(tmp_path, f"sqlite+aiosqlite:///{tmp_path / 'gigi.db'}")  # pip only
    wheel = venv.wheels / "gigi_widget-1.0-py3-none-any.whl"
    good = hashlib.sha256(wheel.read_bytes()).hexdigest()
    wrong = tmp_path / "wrong.txt"
    wrong.write_text(f"gigi-widget==1.0 --hash=sha256:{'0' * 64}\n")
    failed = venv.gigi("install", "-r", str(wrong), "--require-hashes", "--yes")
    assert failed.returncode == 1
    assert failed.stderr.count("pip could not fetch") == 1
    assert "HASHES" in failed.stderr.upper()  # pip's own words: what it expected and got
    assert venv.widget_version() is None

    pinned = tmp_path / "requirements.txt"
    pinned.write_text(f"gigi-widget==1.0 --hash=sha256:{good}\n")
    no_file = venv.gigi("install", "--require-hashes", "--yes")
    assert no_file.returncode == 2 and "--require-hashes needs -r FILE" in no_file.stderr
    out = _ok(venv.gigi("install", "-r", str(pinned), "--require-hashes", "--yes"))
    assert "Installed -r " in out
    assert venv.widget_version() == "1.0"


def test_an_upgrade_over_an_unaccepted_one_keeps_its_holds(venv: Env, tmp_path: Path) -> None:
    """1.2 widens nothing over 1.1, but nobody accepted 1.1: its holds stay until accepted."""
    _ok(venv.gigi("install", "gigi-widget==1.0", "--yes"))
    _ok(venv.gigi("plugins", "enable", "widget", "--guild", "g1"))
    add = ["tools", "call", "widget.add", "--guild", "g1", "--user", "u1"]
    _ok(venv.gigi("upgrade", "gigi-widget", "--yes"))
    assert venv.gigi(*add).returncode == 3

    acts = ["widget.count", "widget.reset", "widget.add"]
    v12 = build_wheel(tmp_path / "v12", "1.2", files=plugin_files("1.2", MANIFEST_11, acts))
    out = _ok(venv.gigi("install", str(v12), "--yes"))
    assert "plugin widget: 1.1 -> 1.2: nothing it may do changed" in out
    assert "Still held in each server that has not accepted widget 1.1:" in out
    assert "widget.add" in out.split("Still held")[1]
    assert venv.widget_version() == "1.2"
    denied = venv.gigi(*add)
    assert denied.returncode == 3 and "gigi plugins review widget" in denied.stderr

    pending = json.loads(_ok(venv.gigi("plugins", "review", "--guild", "g1", "--json")))
    [held] = pending["pending"]
    assert held["version"] == "1.2"
    changes = {a["action"]: a["change"] for a in held["actions"]}
    assert changes["widget.add"].endswith("(held since 1.1)")
    _ok(venv.gigi("plugins", "review", "widget", "--guild", "g1", "--accept", "--yes"))
    count = ["tools", "call", "widget.count", "--guild", "g1", "--user", "u1"]
    assert json.loads(_ok(venv.gigi(*count))) == {"ran": "widget.count"}
    asks = venv.gigi(*add)  # allowed now: a write action, so it asks for confirmation
    assert asks.returncode == 4 and "needs your confirmation" in asks.stdout + asks.stderr


def test_dependencies_are_reviewed_and_installed_from_the_reviewed_files(tmp_path: Path) -> None:
    venv = make_env(tmp_path, f"sqlite+aiosqlite:///{tmp_path / 'gigi.db'}")
    helper_wheel(venv.wheels)
    build_wheel(venv.wheels, "3.0", requires=("gigi-helper>=1",))
    review = venv.gigi("install", "gigi-widget==3.0", input="n\n")
    assert review.returncode == 1
    assert "gigi-helper 1.0 (new install)" in review.stdout  # a plugin it pulls: reviewed too
    assert "plugin helper 1.0: Helps other plugins." in review.stdout
    assert "pip installs exactly these wheels, and nothing else:" in review.stdout
    assert "  gigi-widget 3.0 (a Gigi plugin, reviewed above)\n" in review.stdout
    assert "  gigi-helper 1.0 (a dependency, a Gigi plugin, reviewed above)" in review.stdout
    as_json = json.loads(_ok(venv.gigi("install", "gigi-widget==3.0", "--json")))
    assert as_json["wheels"] == [
        {"name": "gigi-widget", "version": "3.0", "file": "gigi_widget-3.0-py3-none-any.whl",
         "dependency": False},
        {"name": "gigi-helper", "version": "1.0", "file": "gigi_helper-1.0-py3-none-any.whl",
         "dependency": True},
    ]  # fmt: skip
    _ok(venv.gigi("install", "gigi-widget==3.0", "--yes"))
    assert venv.widget_version() == "3.0"
    helper = subprocess.run(
        [str(venv.python), "-c", "import gigi_helper"], env=venv.env, cwd=venv.cwd, check=False
    )
    assert helper.returncode == 0  # the dependency came from the reviewed wheel
    again = _ok(venv.gigi("install", "gigi-widget==3.0", "--yes"))
    assert "already installed; nothing to do" in again


def test_source_only_candidates_are_refused_without_running_their_code(tmp_path: Path) -> None:
    import tarfile

    from tests.test_pip_runner import source_tree

    venv = make_env(tmp_path, f"sqlite+aiosqlite:///{tmp_path / 'gigi.db'}")
    tree, marker = source_tree(tmp_path)
    with tarfile.open(venv.wheels / "evilpkg-1.0.tar.gz", "w:gz") as tar:
        tar.add(tree, arcname="evilpkg-1.0")  # on the index as source only

    by_path = venv.gigi("install", str(tree), "--yes")
    assert by_path.returncode == 2
    assert "is not a wheel" in by_path.stderr and "pip wheel --no-deps" in by_path.stderr
    by_name = venv.gigi("install", "evilpkg", "--yes")
    assert by_name.returncode == 1
    assert "pip takes wheels only here" in by_name.stderr
    assert "gigi install wheels/NAME-VERSION-*.whl" in by_name.stderr
    assert not marker.exists(), "the candidate's build backend ran before any review"
