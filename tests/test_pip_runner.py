"""pip plumbing of `gigi install`: what is refused before pip runs (anything pip would build,
so no candidate code runs before its review), what pip's resolution may hand back, and the
tail of pip's output that an error shows."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

import pytest

from gigi_core.cli import pip_runner
from gigi_core.cli.install_screen import SourceBuildError, check, needs_build
from gigi_core.cli.pip_runner import PipError, Source, tail

BACKEND = """\
import pathlib
pathlib.Path({marker!r}).write_text("the candidate's build code ran\\n")
def get_requires_for_build_wheel(config_settings=None): return []
def prepare_metadata_for_build_wheel(d, config_settings=None): raise RuntimeError("stop")
def build_wheel(d, config_settings=None, metadata_directory=None): raise RuntimeError("stop")
"""
PYPROJECT = """\
[build-system]
requires = []
build-backend = "backend"
backend-path = ["."]
"""


def source_tree(tmp_path: Path) -> tuple[Path, Path]:
    """A source-only package whose build backend leaves a marker file when it runs."""
    tree, marker = tmp_path / "evilpkg", tmp_path / "BUILD_RAN"
    tree.mkdir()
    (tree / "backend.py").write_text(BACKEND.format(marker=str(marker)))
    (tree / "pyproject.toml").write_text(PYPROJECT)
    return tree, marker


@pytest.mark.parametrize(
    ("spec", "builds"),
    [
        ("gigi-widget", False),
        ("Gigi-Widget[extra]>=1.0", False),
        ("./dist/gigi_widget-1.1-py3-none-any.whl", False),
        ("https://example.org/gigi_widget-1.1-py3-none-any.whl", False),
        ("gigi-widget @ https://example.org/gigi_widget-1.1-py3-none-any.whl", False),
        ("./plugins/gigi-widget", True),
        ("gigi_widget-1.1.tar.gz", True),
        ("gigi_widget-1.1.zip", True),
        ("https://example.org/gigi_widget-1.1.tar.gz", True),
        ("git+https://example.org/gigi-widget.git", True),
        ("gigi-widget @ git+https://example.org/w.git@v1#egg=x.whl", True),
        ("gigi-widget @ file:///srv/src/gigi-widget", True),
    ],
)
def test_what_pip_would_build_is_told_apart_from_wheels_and_names(spec: str, builds: bool) -> None:
    assert needs_build(spec) is builds


def test_a_folder_named_like_a_wheel_is_still_a_source_tree(tmp_path: Path) -> None:
    folder = tmp_path / "fake-1.0-py3-none-any.whl"
    folder.mkdir()
    assert needs_build(str(folder))


def test_staging_a_source_tree_or_archive_refuses_before_its_code_runs(tmp_path: Path) -> None:
    tree, marker = source_tree(tmp_path)
    archive = tmp_path / "evilpkg-1.0.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(tree, arcname="evilpkg-1.0")
    for spec in (str(tree), str(archive), f"evilpkg @ {tree.as_uri()}"):
        with pytest.raises(SourceBuildError) as refused:
            pip_runner.stage(Source((spec,)), [])
        assert "not a wheel" in str(refused.value) and "nothing was installed" in str(refused.value)
        assert "pip wheel --no-deps" in str(refused.value.hint)
        assert "gigi install wheels/" in str(refused.value.hint)
        assert refused.value.exit_code == 2
    assert not marker.exists(), "the candidate's build backend ran before any review"


@pytest.mark.parametrize(
    ("line", "named"),
    [
        ("-e ./plugins/gigi-widget", "-e is not accepted"),
        ("--editable=./w", "--editable is not accepted"),
        ("-r other.txt", "-r is not accepted"),
        ("--no-binary :all:", "--no-binary is not accepted"),
        ("-c constraints.txt", "-c is not accepted"),
        ("./plugins/gigi-widget", "is not a wheel"),
        ("gigi-widget @ https://example.org/w-1.0.tar.gz --hash=sha256:00", "is not a wheel"),
        ("gigi-widget @ ${SOURCE}", "environment variables are not expanded"),
        ("--only-binary=:none:", "--only-binary is not accepted"),
        ("--only-binary :none:", "--only-binary is not accepted"),
        ("--pre --no-binary=:all:", "--no-binary is not accepted"),
        ("--find-links ./w -r other.txt", "-r is not accepted"),
        ("gigi-dice==1.0 --config-settings=x=y", "--config-settings is not accepted"),
        ("gigi-dice==1.0 --global-option=x", "--global-option is not accepted"),
        ("--index-url 'https://pypi.example.org", "cannot read its options"),
    ],
)
def test_a_requirements_file_is_refused_line_by_line(tmp_path: Path, line: str, named: str) -> None:
    req = tmp_path / "plugins.txt"
    req.write_text(f"# plugins\ngigi-dice==1.0 --hash=sha256:{'0' * 64}\n\n{line}  # why\n")
    with pytest.raises(SourceBuildError) as refused:
        check((), str(req))
    assert f"{req} line 4: " in str(refused.value) and named in str(refused.value)
    assert refused.value.hint


def test_a_requirements_file_of_names_wheels_and_index_options_passes(tmp_path: Path) -> None:
    req = tmp_path / "plugins.txt"
    req.write_text(
        "--index-url https://pypi.example.org/simple\n"
        "--find-links ./wheels\n"
        f"gigi-dice==1.0 \\\n    --hash=sha256:{'0' * 64}\n"
        "./wheels/gigi_widget-1.1-py3-none-any.whl\n"
    )
    check(("gigi-weather==2.0",), str(req))  # no error
    with pytest.raises(Exception, match="cannot read the requirements file"):
        check((), str(tmp_path / "missing.txt"))


def _report(tmp_path: Path, *entries: dict[str, object]) -> Path:
    path = tmp_path / "report.json"
    path.write_text(json.dumps({"version": "1", "install": list(entries)}))
    return path


def _entry(name: str, url: str, sha: str | None, requested: bool) -> dict[str, object]:
    info: dict[str, object] = {"url": url}
    if sha is not None:
        info["archive_info"] = {"hashes": {"sha256": sha}}
    meta = {"name": name, "version": "1.0"}
    return {"metadata": meta, "download_info": info, "requested": requested}


def test_the_resolution_must_be_wheels_with_hashes(tmp_path: Path) -> None:
    wheel = "https://files.example.org/gigi_widget-1.0-py3-none-any.whl"
    dep = "https://files.example.org/dep-1.0-py3-none-any.whl"
    items = pip_runner._report_items(
        _report(tmp_path, _entry("gigi-widget", wheel, "ab", True), _entry("dep", dep, "cd", False))
    )
    assert [(i.name, i.url, i.sha256, i.requested) for i in items] == [
        ("gigi-widget", wheel, "ab", True),
        ("dep", dep, "cd", False),
    ]
    for bad in (
        _entry("built", "file:///srv/src/built", None, True),  # a folder pip built
        _entry("sdist", "https://files.example.org/sdist-1.0.tar.gz", "ef", True),
        _entry("nohash", wheel, None, True),
    ):
        with pytest.raises(PipError, match="not a wheel"):
            pip_runner._report_items(_report(tmp_path, bad))


def test_tail_keeps_pips_last_lines() -> None:
    text = "\n".join(f"line {i}" for i in range(30)) + "\n\nERROR: the reason\n"
    shown = tail(text).splitlines()
    assert shown[-1] == "  ERROR: the reason"
    assert len(shown) == 12 and "line 0" not in shown[0]
    assert tail("") == "  (pip printed nothing)"


@pytest.mark.parametrize(
    "comment",
    ["# the folder below is built by pip \\", "   # indented \\", "#\\"],
)
def test_a_comment_ending_in_a_backslash_hides_no_line(tmp_path: Path, comment: str) -> None:
    """pip ends a continuation at a comment line and reads the next line on its own."""
    tree, _ = source_tree(tmp_path)
    req = tmp_path / "plugins.txt"
    req.write_text(f"gigi-dice==1.0\n{comment}\n{tree}\n")
    with pytest.raises(SourceBuildError) as refused:
        check((), str(req))
    assert f"{req} line 3: " in str(refused.value) and "is not a wheel" in str(refused.value)


def test_pip_reads_the_screened_lines_not_the_file(tmp_path: Path) -> None:
    """Comments, continuations and blank lines are gone; a --find-links folder beside the
    file is named absolutely (pip looks beside the file first)."""
    (tmp_path / "wheels").mkdir()
    req = tmp_path / "plugins.txt"
    req.write_text(
        "# plugins\n"
        "--find-links ./wheels   # beside the file\n"
        "--find-links=./elsewhere\n"
        f"gigi-dice==1.0 \\\n    --hash=sha256:{'0' * 64}  # pinned\n"
        "gigi-widget==1.1 # a comment \\\n"
        "./not-read-by-pip-either\n"
    )
    assert check((), str(req)) == (
        f"--find-links {tmp_path / 'wheels'}\n"
        "--find-links=./elsewhere\n"
        f"gigi-dice==1.0     --hash=sha256:{'0' * 64}\n"
        "gigi-widget==1.1\n"
    )
    assert check(("gigi-dice",), None) is None


@pytest.mark.slow
@pytest.mark.parametrize("trick", ["only_binary", "comment"])
def test_a_requirements_file_cannot_make_pip_build_at_review(tmp_path: Path, trick: str) -> None:
    """With the real pip: a source-only package on the find-links folder, or a folder on the
    line after a comment ending in a backslash, never has its build code run."""
    tree, marker = source_tree(tmp_path)
    links = tmp_path / "links"
    links.mkdir()
    with tarfile.open(links / "evilpkg-1.0.tar.gz", "w:gz") as tar:
        tar.add(tree, arcname="evilpkg-1.0")
    req = tmp_path / "plugins.txt"
    if trick == "only_binary":
        req.write_text(f"--only-binary=:none:\n--no-index\n--find-links {links}\nevilpkg==1.0\n")
    else:
        req.write_text(f"--no-index\n# the folder below \\\n{tree}\n")
    with pytest.raises(SourceBuildError):
        pip_runner.stage(Source(requirements=str(req)), [])
    assert not marker.exists(), "the candidate's build backend ran before any review"
