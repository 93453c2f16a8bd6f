"""``gigi dev``: tools for trying Gigi locally: a fake model to talk to, and a local
PostgreSQL (``gigi dev postgres``, in ``dev_postgres``).

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
from gigi_core.cli.fake_model import MODEL, FakeModel, echo_text

__all__ = ["MODEL", "FakeModel", "echo_text", "parse_call", "parse_turn", "start_server"]

DEFAULT_PORT = 8799
LABEL = "fake"


@click.group("dev")
def dev_group() -> None:
    """Try Gigi locally: a fake model server and a local PostgreSQL, no account needed."""


def parse_turn(raw: Any, where: str) -> dict[str, Any]:
    """One scripted turn: ``{"text": ...}`` or ``{"tool_calls": [{"name", "args"}]}`` for
    the agent, ``{"structured": {...}}`` for a schema-bound call without tools."""
    if isinstance(raw, str):
        return {"text": raw}
    if isinstance(raw, dict) and "structured" in raw:
        if set(raw) != {"structured"}:
            raise click.BadParameter(f'{where}: a {{"structured": ...}} turn has no other keys')
        return {"purpose": "structured", "text": json.dumps(raw["structured"])}
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
        f'{where}: a turn is a string, {{"text": ...}}, {{"tool_calls": [{{"name": ..., '
        '"args": {...}}]} or {"structured": {...}}'
    )


def parse_structured(raw: str) -> dict[str, Any]:
    """``--structured '{"answer_needed": false}'``: a schema-bound call's answer."""
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise click.BadParameter(f"--structured: not JSON ({exc.msg}): {raw!r}") from None
    return parse_turn({"structured": value}, "--structured")


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
@click.option(
    "--structured",
    "structured",
    multiple=True,
    metavar="JSON",
    help="The answer to a schema-bound call without tools (routing, classify; repeatable).",
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
    structured: tuple[str, ...],
) -> None:
    """Serve a fake OpenAI-compatible model until Ctrl-C.

    The agent's calls (tools offered, or plain text) get the scripted turns (--script,
    then each --call, then each --reply), then an echo of the last message. A schema-bound
    call without tools (a routing, classify or query-analysis profile) gets each
    --structured answer, then the smallest answer its schema accepts: it never takes a
    turn meant for the agent. It prints its base URL and the two commands that make a
    guild's chat profile use it.
    """
    turns = load_script(script) if script is not None else []
    turns += [parse_call(c) for c in calls] + [parse_turn(r, "--reply") for r in replies]
    turns += [parse_structured(s) for s in structured]
    model = FakeModel(turns, echo=click.echo)
    server = start_server(host, port, model)
    base_url = server.base_url
    click.echo(f"Fake OpenAI-compatible model on {base_url} (model {MODEL}; any key works).")
    chat = len(model.queues["chat"])
    plan = f"{chat} scripted turn(s), then echo" if chat else "echo"
    click.echo(f"It answers the agent: {plan} (it repeats the last message it gets).")
    shaped = len(model.queues["structured"])
    click.echo(
        "Schema-bound calls without tools (routing, classify): "
        + (f"{shaped} scripted answer(s), then " if shaped else "")
        + "the smallest answer the schema accepts."
    )
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


def _add_postgres() -> None:
    from gigi_core.cli.dev_postgres import dev_postgres

    dev_group.add_command(dev_postgres)


_add_postgres()
COMMANDS = [dev_group]
