"""``gigi dev``: tools for trying Gigi locally, such as a fake model to talk to.

``gigi dev fake-provider`` serves the OpenAI chat-completions format on 127.0.0.1 from
``gigi_core.testing.fake_providers.FakeOpenAI``: it answers with scripted turns (text or
tool calls), then echoes what it was sent, so a full agent turn (the model proposing a
call, Gigi validating and running it, the model answering) works without an account, a
key or the network.
"""

from __future__ import annotations

import json
import shlex
import time
from pathlib import Path
from typing import Any

import click

from gigi_core.cli.common import CliState, pass_state

DEFAULT_PORT = 8799
MODEL = "fake-model"
LABEL = "fake"


@click.group("dev")
def dev_group() -> None:
    """Try Gigi locally: a fake model server, no account or network needed."""


def parse_turn(raw: Any, where: str) -> dict[str, Any]:
    """One scripted turn: ``{"text": ...}`` or ``{"tool_calls": [{"name", "args"}]}``."""
    if isinstance(raw, str):
        return {"text": raw}
    if isinstance(raw, dict) and isinstance(raw.get("text"), str) and "tool_calls" not in raw:
        return {"text": raw["text"]}
    if isinstance(raw, dict) and isinstance(raw.get("tool_calls"), list) and raw["tool_calls"]:
        calls = []
        for call in raw["tool_calls"]:
            if not (isinstance(call, dict) and isinstance(call.get("name"), str)):
                raise click.BadParameter(f"{where}: each tool call needs a name")
            args = call.get("args", {})
            if not isinstance(args, dict):
                raise click.BadParameter(f"{where}: the args of {call['name']} must be an object")
            calls.append({"name": call["name"], "args": args})
        return {"tool_calls": calls, "text": raw.get("text")}
    raise click.BadParameter(
        f'{where}: a turn is a string, {{"text": ...}} or {{"tool_calls": [{{"name": ..., '
        '"args": {...}}]}'
    )


def parse_call(raw: str) -> dict[str, Any]:
    """``--call 'dice.roll {"sides": 6}'``: an action name, then its arguments as JSON."""
    name, _, args_text = raw.strip().partition(" ")
    if not name:
        raise click.BadParameter("give an action name, e.g. --call 'dice.roll {\"sides\": 6}'")
    try:
        args = json.loads(args_text) if args_text.strip() else {}
    except json.JSONDecodeError as exc:
        raise click.BadParameter(f"--call {name}: the arguments are not JSON ({exc.msg})") from None
    return parse_turn({"tool_calls": [{"name": name, "args": args}]}, f"--call {name}")


def load_script(path: Path) -> list[dict[str, Any]]:
    """A JSON or YAML list of turns."""
    from ruamel.yaml import YAML
    from ruamel.yaml.error import YAMLError

    try:
        data = YAML(typ="safe").load(path.read_text())
    except (OSError, YAMLError) as exc:
        raise click.BadParameter(f"cannot read {path}: {exc}") from None
    if not isinstance(data, list):
        raise click.BadParameter(f"{path}: the script must be a list of turns")
    return [parse_turn(turn, f"{path} turn {i + 1}") for i, turn in enumerate(data)]


class FakeModel:
    """Answers chat requests: the scripted turns in order, then an echo of the last message."""

    def __init__(self, turns: list[dict[str, Any]], echo: Any = None) -> None:
        self.turns = list(turns)
        self.echo = echo  # called with a line per request (the CLI prints them)
        self.answered = 0

    def __call__(self, request: Any) -> Any:
        from gigi_core.testing.fake_providers import FakeToolCall, Reply, chat_completion

        if request.route != "chat" or not isinstance(request.json, dict):
            return None  # embeddings get deterministic vectors; anything else an error
        self.answered += 1
        messages = request.json.get("messages") or []
        offered = len(request.json.get("tools") or [])
        model = str(request.json.get("model") or MODEL)
        if self.turns:
            turn = self.turns.pop(0)
            calls = [FakeToolCall(_wire(c["name"]), c["args"]) for c in turn.get("tool_calls", [])]
            body = chat_completion(
                text=turn.get("text"),
                tool_calls=calls,
                finish_reason="tool_calls" if calls else "stop",
                model=model,
            )
            said = ", ".join(c.name for c in calls) if calls else "scripted text"
        else:
            body = chat_completion(text=echo_text(messages), model=model)
            said = "echo"
        if self.echo is not None:
            self.echo(
                f"request {self.answered}: {len(messages)} messages, {offered} tools offered "
                f"-> {said}"
            )
        return Reply(200, body, route="chat")


def _wire(name: str) -> str:
    """Action names may be given dotted (``dice.roll``): the model speaks wire names."""
    from gigi_core.testing import wire_name

    return wire_name(name) if "." in name else name


def echo_text(messages: list[Any]) -> str:
    """What the echo model says: the last message back, as plain text."""
    last = messages[-1] if messages else {}
    content = last.get("content") if isinstance(last, dict) else None
    if isinstance(content, list):  # content parts
        content = " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    text = str(content or "").strip()
    if isinstance(last, dict) and last.get("role") == "tool":
        return f"The tool answered: {text}"
    return f"You said: {text}" if text else "(fake model: nothing to echo)"


def start_server(host: str, port: int, model: FakeModel) -> Any:
    """A started ``FakeOpenAI`` bound to ``host:port`` (0: a free port), answering ``model``."""
    from http.server import ThreadingHTTPServer
    from threading import Thread

    from gigi_core.testing.fake_providers import FakeOpenAI
    from gigi_core.testing.fake_providers.server import _make_handler

    class DevServer(FakeOpenAI):
        def start(self) -> DevServer:
            self._httpd = ThreadingHTTPServer((host, port), _make_handler(self))
            self._httpd.daemon_threads = True
            self._thread = Thread(
                target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
            )
            self._thread.start()
            return self

        def _next_reply(self, request: Any) -> Any:
            reply = super()._next_reply(request)
            self.requests.clear()  # a long session must not keep every request in memory
            return reply

    server = DevServer()
    server.respond_with(model)
    try:
        return server.start()
    except OSError as exc:
        raise click.ClickException(
            f"cannot listen on {host}:{port}: {exc.strerror or exc} "
            "(choose another --port, or --port 0 for any free one)"
        ) from None


def configure_commands(state: CliState, base_url: str, guild: str) -> list[str]:
    """The two commands that point GUILD's chat profile at the fake server."""
    prefix = ["gigi"]
    if state.home:
        prefix += ["--home", state.home]
    if state.database_url:
        prefix += ["--database-url", state.database_url]
    gigi = shlex.join(prefix)
    owner = f"guild:{guild}"
    return [
        f"echo fake-key | {gigi} llm credential add --owner {shlex.quote(owner)} "
        f"--provider openai-compatible --label {LABEL} --base-url {base_url} --api-key-stdin",
        f"{gigi} llm profile set --owner {shlex.quote(owner)} --purpose chat "
        f"--credential {LABEL} --model {MODEL}",
    ]


@dev_group.command("fake-provider")
@click.option("--port", default=DEFAULT_PORT, show_default=True, help="0 picks a free port.")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option(
    "--guild",
    default="console",
    show_default=True,
    help="The guild the printed commands configure (the console's is `console`).",
)
@click.option(
    "--script",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help='A JSON or YAML list of turns: "text", {"text": ...} or {"tool_calls": [...]}.',
)
@click.option(
    "--call",
    "calls",
    multiple=True,
    metavar="'ACTION JSON'",
    help="A turn that calls ACTION with these arguments (repeatable; after --script).",
)
@click.option(
    "--reply", "replies", multiple=True, help="A turn that answers TEXT (repeatable; last)."
)
@pass_state
def fake_provider(
    state: CliState,
    port: int,
    host: str,
    guild: str,
    script: Path | None,
    calls: tuple[str, ...],
    replies: tuple[str, ...],
) -> None:
    """Serve a fake OpenAI-compatible model until Ctrl-C.

    It answers with the scripted turns (--script, then each --call, then each --reply) and
    then echoes the last message it was sent. It prints its base URL and the two commands
    that make a guild's chat profile use it.
    """
    turns = load_script(script) if script is not None else []
    turns += [parse_call(c) for c in calls] + [parse_turn(r, "--reply") for r in replies]
    model = FakeModel(turns, echo=click.echo)
    server = start_server(host, port, model)
    base_url = server.base_url
    click.echo(f"Fake OpenAI-compatible model on {base_url} (model {MODEL}; any key works).")
    plan = f"{len(turns)} scripted turn(s), then echo" if turns else "echo"
    click.echo(f"It answers: {plan} (it repeats the last message it gets).")
    click.echo(f"Point guild {guild} at it (once; the port must stay the same):")
    for line in configure_commands(state, base_url, guild):
        click.echo(f"  {line}")
    click.echo('Then, in another terminal: gigi run (plain text goes to it), or gigi ask "hello".')
    click.echo("Ctrl-C stops the server.")
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    click.echo("Stopped.")


COMMANDS = [dev_group]
