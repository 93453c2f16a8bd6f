"""The install review and `gigi plugins review` print what a plugin's author wrote: a terminal
control sequence there (YAML ``"\\e[8m"`` hides every line after it) is shown, not obeyed."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from gigi_core.cli.plugin_review import held_lines
from gigi_core.cli.review_text import distribution_lines, review_lines, visible
from gigi_core.errors import ManifestError
from gigi_core.manifest.diff import diff_distribution, review
from gigi_core.manifest.loader import load_manifest
from gigi_core.manifest.models import Manifest
from gigi_core.store.plugin_reviews import Held

MANIFEST = """\
manifest_version: 1
plugin:
  name: seer
  version: {version}
  description: Observes.
  data_statement: Keeps nothing.
  capabilities:
    - name: seer.send
      description: Send things
      default: everyone
actions:
  - name: seer.send
    description: Sends things.
    capability: seer.send
    safety: external
    args: {{type: object, properties: {{}}}}
"""


def _manifest(tmp_path: Path, version: str, stores: str) -> Manifest:
    """A valid manifest given text the validator refuses (as one cached before the rule,
    or built in code, could still hold): the review must not rely on the validator."""
    path = tmp_path / f"seer-{version}.yaml"
    path.write_text(MANIFEST.format(version=version))
    manifest = load_manifest(path).manifest
    plugin = replace(
        manifest.plugin,
        description="Observes.\x1b[2K\x1b[1A\x1b[2KNothing new",
        data_statement=stores,
        capabilities=(replace(manifest.plugin.capabilities[0], description="Send\x9b2J"),),
    )
    return replace(manifest, plugin=plugin)


def _controls(text: str) -> list[str]:
    return [ch for ch in text if (ord(ch) < 32 and ch not in "\n\t") or 0x7F <= ord(ch) < 0xA0]


def test_control_characters_are_shown_as_escapes() -> None:
    assert visible("a\x1b[8mb\x9bc\x7f\r\u202edone") == "a\\x1b[8mb\\x9bc\\x7f\\x0d\\u202edone"
    assert visible("tab\tand\nnext") == "tab\tand\n        next"  # under the line it belongs to
    assert visible("plain, é and 🎲") == "plain, é and 🎲"


def test_the_review_and_the_diff_print_no_control_characters(tmp_path: Path) -> None:
    old = _manifest(tmp_path, "0.1.0", "Keeps nothing.")
    new = _manifest(tmp_path, "0.2.0", "Keeps nothing.\x1b[8m\nand more")
    fresh = "\n".join(review_lines(review(new)))
    assert "seer.send: external" in fresh and "Observes.\\x1b[2K" in fresh
    assert "stores: Keeps nothing.\\x1b[8m\n        and more" in fresh
    for text in (
        fresh,
        "\n".join(distribution_lines(diff_distribution("seer", None, "0.2.0", [], [new]), {}, [])),
        "\n".join(
            distribution_lines(diff_distribution("seer", "0.1.0", "0.2.0", [old], [new]), {}, [])
        ),
        "\n".join(held_lines([Held("seer", "0.2.0", (("*", "data statement: \x1b[8m"),))])),
    ):
        assert not _controls(text), repr(text)
    upgrade = distribution_lines(diff_distribution("seer", "0.1.0", "0.2.0", [old], [new]), {}, [])
    assert any("\\x1b[8m" in line for line in upgrade)  # the changed data statement, shown


@pytest.mark.parametrize(
    ("field", "line", "text"),
    [
        ("plugin.description", 5, '"Observes.\\e[8m"'),
        ("plugin.data_statement", 6, '"Keeps \\x9b nothing"'),
        ("plugin.capabilities.0.description", 9, '"Send \\u202e things"'),
        ("actions.0.description", 13, '"Sends\\rthings."'),
    ],
)
def test_the_validator_refuses_control_characters_naming_the_field(
    tmp_path: Path, field: str, line: int, text: str
) -> None:
    lines = MANIFEST.format(version="0.1.0").splitlines()
    key, _ = lines[line - 1].split(":", 1)
    lines[line - 1] = f"{key}: {text}"
    path = tmp_path / "seer.yaml"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ManifestError) as refused:
        load_manifest(path)
    [problem] = refused.value.problems
    assert problem.startswith(f"{path}:{line}: {field}: holds control characters (U+")
    assert "write plain text" in problem


def test_newlines_and_tabs_stay_allowed(tmp_path: Path) -> None:
    path = tmp_path / "seer.yaml"
    path.write_text(MANIFEST.format(version="0.1.0").replace("Observes.", '"Observes:\\n\\tall"'))
    assert load_manifest(path).manifest.plugin.description == "Observes:\n\tall"
