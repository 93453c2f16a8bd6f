"""The console's line editing (prompt_toolkit, driven through a pipe), history and bare words."""

from __future__ import annotations

import asyncio
import io
import stat

import pytest
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output import DummyOutput

from gigi_core.default_plugins.console import ConsoleSurface
from gigi_core.default_plugins.console_editing import LineEditor
from gigi_core.testing import open_test_kernel

UP = "\x1b[A"
TAB = "\t"


@pytest.fixture
async def kernel(tmp_path, monkeypatch):
    monkeypatch.setenv("USER", "alice")
    async with open_test_kernel(tmp_path, plugins=["dice"]) as kernel:
        yield kernel


async def until(condition, what: str) -> None:
    for _ in range(400):
        if condition():
            return
        await asyncio.sleep(0.025)
    raise AssertionError(f"timed out waiting for {what}")


class Typist:
    """Types into a running console the way a person does: one key group at a time."""

    def __init__(self, kernel, home) -> None:
        self.kernel, self.home, self.out = kernel, home, io.StringIO()

    async def __aenter__(self) -> Typist:
        self._pipe_cm = create_pipe_input()
        self.pipe = self._pipe_cm.__enter__()
        self.editor = LineEditor(self.kernel, home=self.home, input=self.pipe, output=DummyOutput())
        self.console = ConsoleSurface(self.kernel, stdout=self.out, editor=self.editor)
        self.task = asyncio.ensure_future(self.console.run())
        await self.ready()
        return self

    async def __aexit__(self, *exc) -> None:
        self.pipe.close()
        await asyncio.wait_for(self.task, 30)
        self._pipe_cm.__exit__(*exc)

    @property
    def buffer(self):
        return self.editor.session.default_buffer

    async def ready(self, history: int = 0) -> None:
        """The prompt is up, with ``history`` earlier lines loaded (they load in the background)."""
        app = self.editor.session.app
        await until(lambda: app.is_running and self.buffer.working_index >= history, "the prompt")

    async def type(self, keys: str, *, shows: str | None = None) -> None:
        self.pipe.send_text(keys)
        if shows is not None:
            await until(lambda: self.buffer.text == shows, repr(shows))

    async def enter(self, *, then: str, times: int = 1) -> None:
        self.pipe.send_text("\r")
        await until(lambda: self.out.getvalue().count(then) >= times, repr(then))

    @property
    def output(self) -> str:
        return self.out.getvalue()


@pytest.mark.parametrize("word", ["exit", "quit", "QUIT", " exit "])
async def test_exit_and_quit_without_a_slash_leave(kernel, word) -> None:
    out = io.StringIO()
    console = ConsoleSurface(kernel, stdin=io.StringIO(f"{word}\n/help\n"), stdout=out)
    await asyncio.wait_for(console.run(), 30)
    text = out.getvalue()
    assert text.rstrip().endswith("Bye.") and "/call ACTION JSON" not in text  # /help never ran
    assert "no chat model" not in text  # it did not go to the agent


async def test_help_without_a_slash_shows_the_commands(kernel) -> None:
    out = io.StringIO()
    console = ConsoleSurface(kernel, stdin=io.StringIO("help\n"), stdout=out)
    await asyncio.wait_for(console.run(), 30)
    assert "/call ACTION JSON" in out.getvalue() and "no chat model" not in out.getvalue()


ROLL = '/call dice.roll {"sides": 6}'
FACES = "dice.roll →\n  faces"


async def test_arrow_keys_recall_history_instead_of_typing_escapes(kernel, tmp_path) -> None:
    home = tmp_path / "home"
    async with Typist(kernel, home) as t:
        await t.type("/enable dice")
        await t.enter(then="Enabled dice")
        await t.ready(history=1)
        await t.type(ROLL)
        await t.enter(then=FACES)
        await t.ready(history=2)
        await t.type(UP, shows=ROLL)  # the arrow recalls the line; it types no escape code
        await t.enter(then=FACES, times=2)
    assert "^[[A" not in t.output and "\x1b" not in t.output
    history = home / "console_history"
    assert ROLL in history.read_text()
    assert stat.S_IMODE(history.stat().st_mode) == 0o600
    async with Typist(kernel, home) as again:  # a new session starts with the old lines
        await again.ready(history=1)  # the newest line is loaded first
        await again.type(UP, shows=ROLL)


async def test_tab_completes_commands_and_action_names(kernel, tmp_path) -> None:
    await kernel.enable_plugin("console", "dice")
    async with Typist(kernel, tmp_path) as t:
        await t.type("/he", shows="/he")
        await t.type(TAB, shows="/help ")  # a space after the completed word
        await t.enter(then="/call ACTION JSON")
        await t.type("/call dice.r", shows="/call dice.r")
        await t.type(TAB, shows="/call dice.roll ")
        await t.type('{"sides": 4}')
        await t.enter(then=FACES)


def test_completion_candidates(kernel) -> None:
    from prompt_toolkit.document import Document

    with create_pipe_input() as pipe:
        editor = LineEditor(kernel, home=None, input=pipe, output=DummyOutput())

    def complete(text: str) -> list[str]:
        found = [c.text for c in editor.completer.get_completions(Document(text), None)]
        assert all(c.endswith(" ") for c in found)  # the next word follows a space
        return [c.rstrip() for c in found]

    assert {"call", "confirm", "help", "quit", "exit", "gigi"} <= set(complete("/"))
    assert complete("/con") == ["confirm"]
    assert complete("/call dice") == ["dice.roll"]
    assert "dice" in complete("/enable d") and complete("/disable di") == ["dice"]
    assert complete("/gigi channel p") == ["pause"]
    assert complete("hello") == []  # plain text is for the agent


async def test_ctrl_c_drops_the_line_and_ctrl_d_leaves(kernel, tmp_path) -> None:
    async with Typist(kernel, tmp_path) as t:
        await t.type("half a line", shows="half a line")
        await t.type("\x03", shows="")  # Ctrl-C: the line is dropped, nothing is sent
        await t.type("/help")
        await t.enter(then="/call ACTION JSON")
        await t.type("\x04")  # Ctrl-D on an empty line leaves
        await asyncio.wait_for(asyncio.shield(t.task), 10)
    assert "no chat model" not in t.output
