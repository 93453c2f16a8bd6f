"""pip plumbing of `gigi install` that needs no pip run: pinning to the reviewed version and
the tail of pip's output that an error shows."""

from __future__ import annotations

import tempfile

from gigi_core.cli.pip_runner import Source, Staged, pinned, tail
from gigi_core.manifest.packaged import PackagedPlugin


def test_requirements_by_name_are_pinned_to_the_reviewed_version() -> None:
    folder = tempfile.TemporaryDirectory()
    staged = Staged(folder, [PackagedPlugin("gigi-widget", "1.1", ("widget",))])
    try:
        source = Source(
            ("gigi_widget", "Gigi-Widget[extra]>=1.0", "./dist/gigi_widget-1.1-py3-none-any.whl",
             "https://example.org/w.whl", "other-package"),
            requirements="req.txt",
        )  # fmt: skip
        exact = pinned(source, staged)
    finally:
        staged.close()
    assert exact.specs == (
        "gigi_widget==1.1",
        "Gigi-Widget[extra]==1.1",
        "./dist/gigi_widget-1.1-py3-none-any.whl",
        "https://example.org/w.whl",
        "other-package",  # not a reviewed plugin: pip resolves it as asked
    )
    assert exact.requirements == "req.txt"


def test_tail_keeps_pips_last_lines() -> None:
    text = "\n".join(f"line {i}" for i in range(30)) + "\n\nERROR: the reason\n"
    shown = tail(text).splitlines()
    assert shown[-1] == "  ERROR: the reason"
    assert len(shown) == 12 and "line 0" not in shown[0]
    assert tail("") == "  (pip printed nothing)"
