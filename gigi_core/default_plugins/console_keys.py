"""The console's personal keys: ``/llm key add|list|test|prefer|remove|disclose`` for the
person at the terminal's own keys (no capability needed), ``/llm policy personal-keys
value=off|dm-only|guild-allowed`` (``llm.provider.write``), and ``/ask [billing=server|me]
TEXT``, whose choice is remembered for later lines here.

The key is never a command word (those land in the history file): ``/llm key add`` asks
for it on a line of its own, hidden in a terminal. Other ``/llm`` lines go on to the
model, policy and budget commands.
"""

from __future__ import annotations

from typing import Any

from gigi_core import GigiError
from gigi_core.default_plugins import console_models
from gigi_core.default_plugins.console_input import read_plain_line

ConsoleSurface = Any  # typed loosely, as in ``console_budget``

WRITE = "llm.provider.write"
OPTIONS = {
    "add": {"provider", "label", "model", "base_url"},
    "list": set(),
    "test": {"label", "model"},
    "prefer": {"label", "model"},
    "remove": {"label"},
    "disclose": set(),
}
USAGE = (
    "Usage: /llm key add provider=P label=L [model=M] [base_url=URL] (then paste the key); "
    "/llm key list; /llm key test label=L [model=M]; /llm key prefer label=L model=M; "
    "/llm key remove label=L; /llm key disclose; "
    "/llm policy personal-keys value=off|dm-only|guild-allowed"
)
ASK_USAGE = "Usage: /ask [billing=server|me] TEXT (the choice is remembered here)"


class KeyUsage(GigiError):
    """A personal-key command the console cannot read; says what to type."""


def _options(verb: str, words: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for word in words:
        name, eq, value = word.partition("=")
        if not eq or not value:
            raise KeyUsage(f"{word!r} is not name=value", hint=USAGE)
        if name not in OPTIONS[verb]:
            known = ", ".join(sorted(OPTIONS[verb])) or "none"
            raise KeyUsage(f"/llm key {verb} has no option {name!r} (options: {known})")
        out[name] = value
    return out


def _need(opts: dict[str, str], name: str, verb: str) -> str:
    if name not in opts:
        raise KeyUsage(f"/llm key {verb} needs {name}=...", hint=USAGE)
    return opts[name]


async def cmd_llm(console: ConsoleSurface, rest: str) -> None:
    """``/llm key ...`` and ``/llm policy personal-keys ...`` here; the rest goes on."""
    words = rest.split()
    if words[:2] == ["policy", "personal-keys"]:
        await _policy(console, words[2:])
        return
    if not words or words[0] != "key":
        await console_models.cmd_llm(console, rest)
        return
    if len(words) < 2 or words[1] not in OPTIONS:
        console.say(USAGE)
        return
    verb, opts = words[1], _options(words[1], words[2:])
    personal, me = console.kernel.llm.personal, console.actor.id
    if verb == "add":
        await _add(console, opts)
    elif verb == "list":
        views = await personal.keys(me)
        if not views:
            console.say("You have no keys yet: /llm key add provider=P label=L.")
        for v in views:
            c = v.credential
            used = ", answers for you" if v.preferred_for else ""
            tested = f", last test {c.last_test_status}" if c.last_test_status else ""
            console.say(
                f"  {c.label}: {c.provider}, fingerprint …{c.fingerprint_suffix}, "
                f"{c.status}{tested}{used}"
            )
    elif verb == "test":
        label = _need(opts, "label", verb)
        result = await personal.test(me, label, model=opts.get("model"))
        if result.ok:
            console.say(f"{label} works with {result.model} ({result.latency_ms:.0f} ms).")
        else:
            console.say(
                f"{label} failed with {result.model} ({result.error_class}): {result.message}"
            )
    elif verb == "prefer":
        label, model = _need(opts, "label", verb), _need(opts, "model", verb)
        await personal.prefer(me, label, model)
        console.say(f"Your key {label} now answers for you with {model} where keys are allowed.")
    elif verb == "remove":
        label = _need(opts, "label", verb)
        purposes = await personal.remove(me, label)
        console.say(f"Removed your key {label}; the sealed key is destroyed.")
        if purposes:
            console.say("Pick another with /llm key prefer, or the guild's models answer you.")
    else:
        await _disclose(console)


async def _secret_line(console: ConsoleSurface, prompt: str) -> str | None:
    """One line the terminal does not echo and no history keeps (a plain line on a pipe)."""
    editor = console.editor
    if editor is not None:
        from prompt_toolkit import PromptSession

        session = editor.session
        try:
            line: str = await PromptSession(
                input=session.input, output=session.output
            ).prompt_async(prompt, is_password=True, handle_sigint=False)
        except (KeyboardInterrupt, EOFError):
            return None
        return line
    if console.interactive:
        import asyncio
        import getpass

        try:
            return await asyncio.to_thread(getpass.getpass, prompt)
        except (KeyboardInterrupt, EOFError):
            return None
    return await read_plain_line(console.stdin)


async def _add(console: ConsoleSurface, opts: dict[str, str]) -> None:
    provider, label = _need(opts, "provider", "add"), _need(opts, "label", "add")
    llm = console.kernel.llm
    chosen = llm.provider(provider)  # unknown providers are refused before the key is asked
    if chosen.requires_base_url and "base_url" not in opts:
        raise KeyUsage(f"{provider} needs base_url=URL (the API's base URL)")
    console.kernel.sealer.require_key()
    if any(v.credential.label == label for v in await llm.personal.keys(console.actor.id)):
        raise KeyUsage(
            f"you already have a key labelled {label!r}",
            hint="pick another label=, or /llm key remove label=... first",
        )
    secret = await _secret_line(console, f"{provider} API key (hidden, never stored in history): ")
    if not secret or not secret.strip():
        console.say("No key given; nothing was saved.")
        return
    try:
        cred = await llm.personal.add(
            console.actor.id,
            provider,
            label,
            secret,
            base_url=opts.get("base_url"),
            model=opts.get("model"),
        )
    finally:
        del secret
    then = (
        f" It answers for you with {opts['model']} where keys are allowed."
        if "model" in opts
        else f" Next: /llm key prefer label={cred.label} model=M."
    )
    console.say(
        f"Saved your key {cred.label} for {cred.provider} (fingerprint …"
        f"{cred.fingerprint_suffix}).{then}"
    )


async def _disclose(console: ConsoleSurface) -> None:
    personal, me, guild = console.kernel.llm.personal, console.actor.id, console.guild_id
    if await personal.acknowledged(guild, me):
        console.say("You already confirmed this for this guild.")
        return
    preferred = await personal.preferred(me)
    console.say(personal.disclosure(preferred.provider if preferred else None))
    console.say("Type yes to confirm for this guild (anything else leaves it as it is):")
    answer = await read_plain_line(console.stdin) if console.editor is None else None
    if answer is None and console.editor is not None:
        answer = await console.editor.readline()
    if (answer or "").strip().lower() != "yes":
        console.say("Not confirmed; the guild's context stays out of answers billed to you.")
        return
    await personal.acknowledge(guild, me)
    console.say("Confirmed: answers billed to your key here now include this guild's context.")


async def _policy(console: ConsoleSurface, words: list[str]) -> None:
    value = next((w.partition("=")[2] for w in words if w.startswith("value=")), None)
    if value is None or len(words) != 1:
        raise KeyUsage("/llm policy personal-keys needs value=off|dm-only|guild-allowed")
    decision = await console.kernel.policy.capability(console.actor, WRITE, console.guild_id)
    if not decision.allowed:
        console.say(f"Not allowed: {decision.reason}.")
        return
    policy = await console.kernel.llm.set_policy(
        console.guild_id, personal_keys=value, by=console.actor.id
    )
    console.say(f"Personal keys here: {policy.personal_keys}.")


async def cmd_ask(console: ConsoleSurface, rest: str) -> None:
    """``/ask [billing=server|me] TEXT``: one request, billed as chosen; remembered here."""
    from dataclasses import replace

    words = rest.split(maxsplit=1)
    billing = None
    if words and words[0].startswith("billing="):
        billing = words[0].partition("=")[2]
        if billing not in ("server", "me"):
            raise KeyUsage(f"billing={billing!r}: use billing=server or billing=me", hint=ASK_USAGE)
        words = words[1:]
    text = words[0].strip() if words else ""
    if not text:
        console.say(ASK_USAGE)
        return
    personal, me = console.kernel.llm.personal, console.actor.id
    if billing == "me":
        paying = await personal.decide(
            console.guild_id, console.actor, dm=False, in_guild=True, billing="me"
        )
        if not paying.personal:
            policy = (await console.kernel.llm.policy(console.guild_id)).personal_keys
            if policy != "guild-allowed":
                console.say(
                    f"Your own key cannot answer here (personal keys: {policy}): ask with "
                    "billing=server, or an admin runs /llm policy personal-keys "
                    "value=guild-allowed."
                )
            else:
                console.say("You have no key that answers for you yet: /llm key add.")
            return
    if billing is not None:
        await personal.remember_billing(console.guild_id, me, billing)
    request = replace(console.request("console", text), billing=billing)
    console.show(await console.runtime.handle(request))
