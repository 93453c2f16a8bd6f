"""The console surface: a local REPL where the operator is the admin of guild ``console``.

It is the embedded default of ``gigi run`` (no Discord token needed), so a fresh install can
talk to the agent, call tools directly and approve confirmations from a terminal. It uses only
public hooks and the surface-independent runtime (``Request`` in, ``Reply`` out).

In a terminal, lines are read with prompt_toolkit (``LineEditor``): arrow keys edit and
recall, the history is kept in ``GIGI_HOME/console_history`` (mode 0600), and Tab completes
``/`` commands, action names and plugin names. Piped input (and tests' streams) is read a
line at a time instead.
"""

from __future__ import annotations

import itertools
import os
import sys
from typing import TYPE_CHECKING, Any, TextIO

from gigi_core import hookimpl
from gigi_core.default_plugins import (
    console_budget,
    console_keys,
    console_plugins,
    console_runs,
)
from gigi_core.default_plugins.console_input import install_sigint, isatty, read_plain_line
from gigi_core.default_plugins.console_review import cmd_review

if TYPE_CHECKING:
    import asyncio

    from gigi_core import Actor
    from gigi_core.surfaces import Reply, Request

GUILD = "console"
CHANNEL = "console"
PROMPT = "gigi> "

HELP = """\
Type a message to talk to the agent, or a command:
  /call ACTION JSON   run one action directly, no model (e.g. /call dice.roll {"sides": 6})
  /confirm [RUN]      approve the waiting call of RUN (default: the last one waiting)
  /reject [RUN]       refuse it; it never runs
  /cancel RUN         stop a run
  /trace [RUN]        a run's steps and decisions (default: the last run here)
  /plugins            installed plugins and whether they are enabled here
  /status             event delivery to observing plugins (delivered, dropped, ...)
  /commands           every plugin command (run them as /ROOT SUB name=value ... or JSON)
  /gigi channel pause|resume|secure [channel=ID]   what plugins may observe here
  /gigi privacy info|export|delete                 your own data
  /llm budget set|show|reset|remove ...   model budgets here (/llm for the options)
  /llm policy channel|role|show ...       per-channel and per-role model policies here
  /llm models provider=LABEL              the models one of this guild's keys can call
  /llm failover set|show|clear ...        which keys a failing model call moves on to
  /quota              what you have left on every model budget here, and when it resets
  /llm key add|list|test|prefer|remove|disclose ...  your own API keys (you pay for them)
  /llm policy personal-keys value=off|dm-only|guild-allowed   may members' keys answer here
  /ask [billing=server|me] TEXT   ask, billed to the guild or to your own key (remembered)
  /enable NAME [--allow-external]   enable a plugin here (you are this guild's admin)
  /disable NAME       disable a plugin here
  /review [accept [PLUGIN]]  what plugin upgrades hold back here; accept them
  /json [on|off|LINE] results as raw JSON: switch it, or for one line (/json /memory status)
  /help               this text (`help` works too)
  /quit               leave (`quit`, `exit`, Ctrl-D too; Ctrl-C drops the line or request)
Up and down recall earlier lines (kept in GIGI_HOME/console_history); Tab completes."""

BARE_WORDS = {"exit": "quit", "quit": "quit", "help": "help"}  # need no slash


@hookimpl(trylast=True)
def register_surfaces(register: Any) -> None:
    register("console", ConsoleSurface)


def console_actor() -> Actor:
    """The operator at the terminal: ``$USER`` (or ``operator``), admin of the console guild."""
    from gigi_core import Actor

    name = os.environ.get("USER") or os.environ.get("USERNAME") or "operator"
    return Actor(id=name, is_admin=True, display_name=name)


class ConsoleSurface:
    """``await ConsoleSurface(kernel).run()``; streams and runtime are injectable for tests."""

    def __init__(
        self,
        kernel: Any,
        *,
        runtime: Any = None,
        stdin: TextIO | None = None,
        stdout: TextIO | None = None,
        actor: Actor | None = None,
        interactive: bool | None = None,
        editor: Any = None,  # a console_editing.LineEditor; tests pass one on a pipe
    ) -> None:
        self.kernel = kernel
        self._runtime = runtime
        self.stdin = stdin if stdin is not None else sys.stdin
        self.stdout = stdout if stdout is not None else sys.stdout
        self.actor = actor or console_actor()
        self.guild_id, self.channel_id = GUILD, CHANNEL
        if interactive is None:
            interactive = editor is not None or (stdin is None and isatty(self.stdin))
        self.interactive = interactive
        if editor is None and interactive and stdin is None and isatty(self.stdout):
            from gigi_core.default_plugins.console_editing import terminal_editor

            editor = terminal_editor(kernel)
        self.editor = editor  # None: plain line reads (pipes, tests' streams)
        self.waiting: str | None = None  # the last run that waits for a confirmation
        self._task: asyncio.Task[bool] | None = None
        self._interrupted = False
        self._seq = itertools.count(1)
        self.raw_json = False  # /json: results as one line of JSON instead of tables

    @property
    def runtime(self) -> Any:
        return self._runtime if self._runtime is not None else self.kernel.agent

    # -- the loop ------------------------------------------------------------------------

    async def run(self) -> None:
        """Read and handle lines until /quit or end of input."""
        import asyncio

        from gigi_core.default_plugins.console_outbox import ConsolePoster

        unregister = self.kernel.outbox.register("console", ConsolePoster(self))
        await self._banner()
        loop = asyncio.get_running_loop()
        handles_sigint = self.interactive and install_sigint(loop, self._on_interrupt)
        try:
            while True:
                line = await self._readline()
                if line is None:
                    self.say("" if self.interactive else "Bye.")
                    return
                self._interrupted = False
                self._task = asyncio.ensure_future(self.handle_line(line))
                try:
                    keep_going = await self._task
                except asyncio.CancelledError:
                    if not self._interrupted:
                        raise
                    self.say("(interrupted)")
                    await self._cancel_interrupted_run()
                    continue
                finally:
                    self._task = None
                if not keep_going:
                    self.say("Bye.")
                    return
        finally:
            unregister()
            if handles_sigint:
                import signal

                loop.remove_signal_handler(signal.SIGINT)

    async def handle_line(self, line: str) -> bool:
        """One line: plain text to the agent, ``/command`` to a command; False means quit."""
        from gigi_core import GigiError

        text = line.strip()
        if not text:
            return True
        bare = BARE_WORDS.get(text.lower())
        if bare is not None:
            text = "/" + bare
        try:
            if not text.startswith("/"):
                await self._ask(text)
                return True
            name, _, rest = text[1:].partition(" ")
            if name in ("quit", "exit", "q"):
                return False
            command = COMMANDS.get(name)
            if command is None:
                await self._plugin_command(text[1:])
                return True
            await command(self, rest.strip())
        except GigiError as exc:
            self.say(f"Error: {exc.text_for('console')}")
        except Exception as exc:  # keep the REPL alive; the detail goes to the log
            import logging

            logging.getLogger(__name__).exception("console command failed")
            self.say(f"Error: something went wrong ({type(exc).__name__}); see the log.")
        return True

    # -- commands ------------------------------------------------------------------------

    async def _ask(self, text: str) -> None:
        await self._publish(text)
        self.show(await self.runtime.handle(self.request("console", text)))

    async def _publish(self, text: str) -> None:
        """Every chat line is a MessageCreated, so observers work on the embedded default."""
        from gigi_core.default_plugins.console_events import chat_line

        line = chat_line(self.guild_id, self.channel_id, self.actor.id, text, next(self._seq))
        await self.kernel.publish(line)

    async def _plugin_command(self, line: str) -> None:
        """``/memory enable channel=general`` (or JSON) runs a manifest command directly."""
        from gigi_core.commands import parse_arguments, usage

        words = line.split()
        spec, _ = self.kernel.commands.find(words)
        if spec is None:
            import difflib

            typed = words[0] if words else ""
            known = [*COMMANDS, *(c.root for c in self.kernel.commands.sorted())]
            close = difflib.get_close_matches(typed, known, n=1)
            guess = f" Did you mean /{close[0]}?" if close else ""
            self.say(f"Unknown command /{typed}.{guess} /help lists the commands.")
            return
        parts = line.split(None, len(spec.words))
        rest = parts[len(spec.words)] if len(parts) > len(spec.words) else ""
        args = parse_arguments(spec, rest)
        if any(o.name == "channel" and o.type == "channel" for o in spec.options):
            args.setdefault("channel", self.channel_id)
        missing = [o.name for o in spec.options if o.required and o.name not in args]
        if missing:
            self.say(f"Missing {', '.join(missing)}. Usage: {usage(spec)}")
            return
        self.show(await self.runtime.direct(self.request("slash", ""), spec.action, args))

    async def cmd_json(self, rest: str) -> None:
        """``/json`` toggles raw JSON results; ``/json on|off`` sets it; ``/json LINE`` once."""
        if rest.lower() in ("", "on", "off"):
            self.raw_json = rest.lower() == "on" if rest else not self.raw_json
            form = "raw JSON" if self.raw_json else "tables and lists"
            self.say(f"Results now print as {form}; /json switches back.")
            return
        before, self.raw_json = self.raw_json, True
        try:
            await self.handle_line(rest)
        finally:
            self.raw_json = before

    async def cmd_help(self, rest: str) -> None:
        self.say(HELP)

    # -- output --------------------------------------------------------------------------

    def say(self, text: str) -> None:
        self.stdout.write(text + "\n")
        self.stdout.flush()

    def show(self, reply: Reply) -> None:
        """Tool results, the model's text, confirmation prompts, then the run id and status."""
        from gigi_core.default_plugins.console_render import reply_lines
        from gigi_core.surfaces import followed_job, run_footer

        for line in reply_lines(reply, raw=self.raw_json):
            self.say(line)
        footer = run_footer(reply)
        if footer:
            self.say(footer)
        job = followed_job(reply)
        if job is not None:
            self.say(f"Job {job} is queued; `gigi jobs wait {job}` follows its progress.")
        if reply.status == "awaiting_confirmation":
            self.waiting = reply.run_id
        elif self.waiting == reply.run_id:
            self.waiting = None

    # -- helpers -------------------------------------------------------------------------

    def request(self, kind: Any, text: str) -> Request:
        """A runtime request from the operator in the console's guild and channel."""
        from gigi_core.surfaces import Request

        return Request(
            actor=self.actor,
            guild_id=self.guild_id,
            channel_id=self.channel_id,
            kind=kind,
            text=text,
            channel_visible=_operator_sees,
            surface="console",
        )

    async def _banner(self) -> None:
        self.say(
            f"Gigi console: guild {self.guild_id}, channel {self.channel_id}, "
            f"you are {self.actor.id} (admin). /help lists the commands."
        )
        state = self.kernel.plugin_state
        if set(await state.enabled_plugins(self.guild_id)) <= state.on_by_default:
            self.say(
                "No plugins are enabled here yet (Gigi's native tools always are): "
                "/plugins shows the installed ones, /enable NAME turns one on."
            )

    async def _readline(self) -> str | None:
        """The editor's line in a terminal, else one line of the plain stream."""
        if self.editor is not None:
            try:
                return await self.editor.readline()
            except Exception as exc:  # a terminal prompt_toolkit cannot drive: read plainly
                import logging

                logging.getLogger(__name__).warning("console line editing is off: %s", exc)
                self.editor = None
        if self.interactive:
            self.stdout.write(PROMPT)
            self.stdout.flush()
        return await read_plain_line(self.stdin)

    async def _cancel_interrupted_run(self) -> None:
        """A request stopped with Ctrl-C ends its run in the store too (nothing resumes it)."""
        from gigi_core import GigiError

        try:
            run = await self.runtime.runs.last(guild_id=self.guild_id, actor_id=self.actor.id)
        except GigiError:
            return
        if run.status == "running":
            await self.runtime.runs.cancel(run.id)

    def _on_interrupt(self) -> None:
        """Ctrl-C: drop the running request, or the half-typed line (the tty discards it)."""
        if self._task is not None and not self._task.done():
            self._interrupted = True
            self._task.cancel()
            self.stdout.write("\n")
        else:
            self.stdout.write("\n" + PROMPT)
        self.stdout.flush()


COMMANDS = {
    "call": console_runs.cmd_call,
    "confirm": console_runs.cmd_confirm,
    "reject": console_runs.cmd_reject,
    "cancel": console_runs.cmd_cancel,
    "trace": console_runs.cmd_trace,
    "plugins": console_plugins.cmd_plugins,
    "commands": console_plugins.cmd_commands,
    "status": console_plugins.cmd_status,
    "enable": console_plugins.cmd_enable,
    "disable": console_plugins.cmd_disable,
    "help": ConsoleSurface.cmd_help,
    "json": ConsoleSurface.cmd_json,
    "llm": console_keys.cmd_llm,  # your keys, then models, failover, policy, budgets
    "ask": console_keys.cmd_ask,
    "quota": console_budget.cmd_quota,
    "review": cmd_review,
}


async def _operator_sees(channel_id: str) -> bool:
    """The console's guild is local: its operator may name any channel id in it."""
    return True
