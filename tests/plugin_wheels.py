"""Tiny throwaway plugin distributions: wheels built by hand (no build backend, no network).

Version 1.0 of ``gigi-widget`` offers a read-only action; 1.1 adds a write action, drops the
confirmation of another and changes its data statement. ``broken`` ships a manifest with
an unknown safety class.
"""

from __future__ import annotations

import base64
import hashlib
import zipfile
from pathlib import Path

DIST = "gigi-widget"
PACKAGE = "gigi_widget"

MANIFEST_10 = """\
manifest_version: 1
plugin:
  name: widget
  version: "{version}"
  description: Counts widgets.
  data_statement: Stores nothing.
  intents: [guilds]
  capabilities:
    - {{name: widget.use, description: Use widgets, default: everyone}}
    - {{name: widget.admin, description: Manage widgets}}
actions:
  - name: widget.count
    description: Count the widgets.
    safety: read_only
    capability: widget.use
    args: {{type: object, properties: {{}}, additionalProperties: false}}
  - name: widget.reset
    description: Reset the count.
    safety: write
    capability: widget.admin
    confirm: always
    args: {{type: object, properties: {{}}, additionalProperties: false}}
"""

MANIFEST_11 = """\
manifest_version: 1
plugin:
  name: widget
  version: "{version}"
  description: Counts widgets.
  data_statement: Stores the name of each widget.
  intents: [guilds, message_content]
  config_schema:
    type: object
    properties:
      api_token: {{type: string, x-gigi-secret: true}}
    additionalProperties: false
  capabilities:
    - {{name: widget.use, description: Use widgets, default: everyone}}
    - {{name: widget.admin, description: Manage widgets}}
actions:
  - name: widget.count
    description: Count the widgets.
    safety: read_only
    capability: widget.use
    args: {{type: object, properties: {{}}, additionalProperties: false}}
  - name: widget.reset
    description: Reset the count.
    safety: write
    capability: widget.admin
    confirm: never
    args: {{type: object, properties: {{}}, additionalProperties: false}}
  - name: widget.add
    description: Add a widget.
    safety: write
    capability: widget.use
    args: {{type: object, properties: {{}}, additionalProperties: false}}
"""

HELPER = """\
manifest_version: 1
plugin:
  name: helper
  version: "{version}"
  description: Helps other plugins.
  data_statement: Stores nothing.
"""

BROKEN = MANIFEST_10.replace("safety: read_only", "safety: harmless")

MODULE = """\
from importlib.resources import files
from gigi_core import hookimpl

VERSION = "{version}"

@hookimpl
def register_manifests(register):
    register(files(__name__) / "gigi.yaml")

@hookimpl
def register_tools(register):
    for name in {actions!r}:
        register(name, lambda ctx, _n=name: {{"ran": _n}})
"""


def plugin_files(version: str, manifest: str, actions: list[str]) -> dict[str, str]:
    return {
        f"{PACKAGE}/__init__.py": MODULE.format(version=version, actions=actions),
        f"{PACKAGE}/gigi.yaml": manifest.format(version=version),
    }


def widget(version: str) -> dict[str, str]:
    """The widget plugin's files at 1.0 (or any version with 1.0's manifest) or 1.1."""
    if version == "1.1":
        return plugin_files(version, MANIFEST_11, ["widget.count", "widget.reset", "widget.add"])
    if version == "broken":
        return plugin_files("1.2", BROKEN, ["widget.count", "widget.reset"])
    return plugin_files(version, MANIFEST_10, ["widget.count", "widget.reset"])


def helper_wheel(folder: Path, version: str = "1.0") -> Path:
    """``gigi-helper``: a second plugin (no actions), for a plugin that depends on it."""
    files = {
        "gigi_helper/__init__.py": MODULE.format(version=version, actions=[]),
        "gigi_helper/gigi.yaml": HELPER.format(version=version),
    }
    return build_wheel(
        folder, version, dist="gigi-helper", files=files, entry_points={"helper": "gigi_helper"}
    )


def _dist_info(
    dist: str, version: str, entry_points: dict[str, str], requires: tuple[str, ...]
) -> dict[str, str]:
    info = f"{dist.replace('-', '_')}-{version}.dist-info"
    eps = "[gigi]\n" + "".join(f"{k} = {v}\n" for k, v in entry_points.items())
    needs = "".join(f"Requires-Dist: {r}\n" for r in requires)
    return {
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n{needs}",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\n"
        "Tag: py3-none-any\n",
        f"{info}/entry_points.txt": eps,
    }


def _record(files: dict[str, str], record_path: str) -> str:
    lines = []
    for path, text in files.items():
        data = text.encode()
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        lines.append(f"{path},sha256={digest},{len(data)}")
    lines.append(f"{record_path},,")
    return "\n".join(lines) + "\n"


def build_wheel(
    folder: Path,
    version: str,
    *,
    dist: str = DIST,
    files: dict[str, str] | None = None,
    requires: tuple[str, ...] = (),
    entry_points: dict[str, str] | None = None,
) -> Path:
    """A wheel of the widget plugin (or of ``files``) in ``folder``; returns its path."""
    files = dict(files if files is not None else widget(version))
    wheel_version = "1.2" if version == "broken" else version
    points = {"widget": PACKAGE} if entry_points is None else entry_points
    files.update(_dist_info(dist, wheel_version, points, requires))
    record = f"{dist.replace('-', '_')}-{wheel_version}.dist-info/RECORD"
    files[record] = _record(files, record)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{dist.replace('-', '_')}-{wheel_version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as zf:
        for name, text in files.items():
            zf.writestr(name, text)
    return path


def unpack(wheel: Path, site: Path) -> None:
    """What pip's ``--target`` would leave: the wheel's files laid out in ``site``."""
    with zipfile.ZipFile(wheel) as zf:
        zf.extractall(site)
