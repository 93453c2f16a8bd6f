"""`gigi new-plugin` without a terminal: Gigi's own --defaults and --data KEY=VALUE."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from gigi_core.cli.new_plugin import new_plugin_command

pytest.importorskip("copier")


def render(*args: str):
    return CliRunner().invoke(new_plugin_command, list(args), catch_exceptions=False)


def test_without_a_terminal_it_names_its_own_flags(tmp_path) -> None:
    result = render("weather", "--dest", str(tmp_path / "w"))
    assert result.exit_code == 1
    assert "--defaults" in result.output and "--data KEY=VALUE" in result.output
    assert "--data-file" not in result.output and "Interactive session" not in result.output
    assert "author_name" in result.output  # the questions it would have asked
    assert not (tmp_path / "w").exists()


def test_data_answers_questions_and_defaults_take_the_rest(tmp_path) -> None:
    dest = tmp_path / "w"
    result = render(
        "weather",
        "--dest",
        str(dest),
        "--defaults",
        "--data",
        "author_name=Ada Lovelace",
        "--data",
        "description=Forecasts, by the hour.",
    )
    assert result.exit_code == 0, result.output
    pyproject = (dest / "pyproject.toml").read_text()
    assert "Ada Lovelace" in pyproject and "Forecasts, by the hour." in pyproject
    assert 'name = "gigi-weather"' in pyproject  # a default


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ("oops", "KEY=VALUE"),
        ("=x", "KEY=VALUE"),
        ("plugin_name=other", "give the plugin name as NAME"),
        ("colour=blue", "unknown question 'colour'"),
    ],
)
def test_bad_data_is_refused(tmp_path, data, message) -> None:
    result = render("weather", "--dest", str(tmp_path / "w"), "--defaults", "--data", data)
    assert result.exit_code == 2 and message in result.output
    assert not (tmp_path / "w").exists()


def test_a_name_over_32_characters_is_refused_before_rendering(tmp_path) -> None:
    result = render("a" * 33, "--dest", str(tmp_path / "w"), "--defaults")
    assert result.exit_code == 2 and "at most 32 characters" in result.output
    assert not (tmp_path / "w").exists()
    assert render("a" * 32, "--dest", str(tmp_path / "ok"), "--defaults").exit_code == 0
