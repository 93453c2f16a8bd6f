"""Files in ``kernel.outbox`` posts: capped when built, saved under GIGI_HOME on the console."""

from __future__ import annotations

import asyncio
import io
from pathlib import Path

import pytest

from gigi_core import Actor
from gigi_core.default_plugins.console import ConsoleSurface
from gigi_core.default_plugins.console_outbox import ConsolePoster
from gigi_core.events import OutboundFile, OutboundMessage
from gigi_core.outbox_files import MAX_FILE_BYTES, FileRefused
from gigi_core.testing import open_test_kernel
from gigi_core.testing.fake_providers import png_bytes
from tests.commands.plugins import CommandPlugin

ALICE = Actor(id="alice", is_admin=True)


def test_caps_and_names_are_checked_when_the_post_is_built() -> None:
    with pytest.raises(FileRefused, match="at most 4 files, not 5"):
        OutboundMessage(
            "g", "c", "x", files=tuple(OutboundFile(f"{i}.png", b"x") for i in range(5))
        )
    with pytest.raises(FileRefused, match="big.png is 8,388,609 bytes"):
        OutboundFile("big.png", b"x" * (MAX_FILE_BYTES + 1))
    with pytest.raises(FileRefused, match="not a plain file name") as err:
        OutboundFile("../../etc/passwd", b"x")
    assert "picture.png" in (err.value.hint or "")


async def test_the_console_saves_each_file_and_prints_its_path(tmp_path: Path) -> None:
    plugin = CommandPlugin(tmp_path, "task", [])
    async with open_test_kernel(tmp_path, plugins=[], extra_plugins=[("task", plugin)]) as kernel:
        await kernel.enable_plugin("console", "task")
        out = io.StringIO()
        console = ConsoleSurface(kernel, stdin=io.StringIO(""), stdout=out, actor=ALICE)
        kernel.outbox.register("console", ConsolePoster(console))
        picture = png_bytes(3, 3)
        files = (OutboundFile("cat.png", picture, "image/png"),)
        await kernel.outbox.post(
            OutboundMessage("console", "console", "A cat.", files=files), plugin="task"
        )
        [line] = [ln for ln in out.getvalue().splitlines() if "[file]" in ln]
        path = Path(line.split("[file] ", 1)[1])
        assert path.parent == kernel.settings.home / "outbox" and path.name.endswith("cat.png")
        assert await asyncio.to_thread(path.read_bytes) == picture
