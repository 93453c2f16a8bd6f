"""Plain-text rendering of replies and run traces, shared by `gigi` commands and the console.

One renderer keeps what an operator sees in `gigi ask`, `gigi agent trace` and the console
REPL the same; surfaces with richer widgets (Discord) render ``Reply`` themselves.
"""

from __future__ import annotations

import json
import re
import unicodedata
from typing import Any

ARG_VALUE_CHARS = 200  # one argument's rendered value in a confirmation prompt
ARG_BLOCK_CHARS = 900  # every argument together (a Discord message holds 2,000)
MASKED = "•••• (secret)"
MAX_DEPTH = 32  # nesting of a value; anything deeper is masked (too deep to tell)
MAX_HOPS = 32  # $ref and combinator steps from one subschema; past it the part is masked
MAX_BRANCHES = 256  # subschemas applying to one value; past it the part is masked
_PLAIN_KEY = re.compile(r"[A-Za-z0-9_.-]{1,64}")
_HIDDEN = frozenset({"Cc", "Cf", "Co", "Cs", "Cn", "Zl", "Zp"})


def reply_chunks(reply: Any) -> list[str]:
    """The reply's text, tool facts (verbatim) and confirmation prompts, in message chunks."""
    return list(reply.chunks())


def run_footer(reply: Any) -> str | None:
    """``(run ID: status)`` so a person can trace, confirm or cancel the run later."""
    return f"(run {reply.run_id}: {reply.status})" if reply.run_id else None


def trace_lines(data: dict[str, Any]) -> list[str]:
    """A run's steps and decisions (metadata only) as ``AgentRuntime.trace`` returns them."""
    used = data["budgets_used"]
    lines = [
        f"run {data['run_id']} [{data['kind']}] {data['status']}"
        f" ({data['termination_reason'] or 'in progress'}) guild {data['guild_id']}"
        f" actor {data['actor_id']}",
        f"  used: {used['steps']} steps, {used['tool_calls']} tool calls, "
        f"{used['llm_calls']} model calls, {used['tokens']} tokens",
    ]
    for step in data["steps"]:
        tokens = (
            f" tokens {step['input_tokens']}/{step['output_tokens']}"
            if step["input_tokens"] is not None
            else ""
        )
        tool = f" {step['tool']}" if step["tool"] else ""
        decision = f" {step['decision']}" if step["decision"] else ""
        why = f" ({step['reason']})" if step.get("reason") else ""
        lines.append(
            f"  {step['index']:>3} {step['kind']}{tool}{decision} -> {step['status']}{why}{tokens}"
        )
    for c in data["confirmations"]:
        lines.append(f"  confirmation {c['id']} {c['action']}: {c['state']}")
    if data.get("context"):
        lines += context_lines(data["context"])
    return lines


def context_lines(ctx: dict[str, Any]) -> list[str]:
    """What the context broker did for a run: paths, hits, what the pack kept (ids only)."""
    lines = [f"  context {ctx.get('mode')}: sources {', '.join(ctx.get('sources') or []) or '-'}"]
    channel = ctx.get("channel")
    if channel:
        why = f" ({channel['reason']})" if channel.get("reason") else ""
        lines.append(f"    channel: {channel.get('hits', 0)} messages{why}")
    for name, path in ((ctx.get("retrieval") or {}).get("paths") or {}).items():
        extra = "".join(
            f", {path[k]} {k.replace('_', ' ')}"
            for k in ("out_of_scope", "malformed")
            if path.get(k)
        )
        lines.append(f"    path {name}: {path.get('status')}, {path.get('hits', 0)} hits{extra}")
    tokens = ctx.get("tokens") or {}
    lines.append(
        f"    kept {len(ctx.get('kept') or [])}, dropped {len(ctx.get('dropped') or [])}, "
        f"unchanged {len(ctx.get('unchanged') or [])}, withdrawn {len(ctx.get('withdrawn') or [])}"
        f"; {tokens.get('used', 0)}/{tokens.get('budget', 0)} tokens"
    )
    if ctx.get("kept"):
        lines.append(f"    kept: {', '.join(ctx['kept'])}")
    if ctx.get("dropped"):
        lines.append(f"    dropped: {', '.join(ctx['dropped'])}")
    return lines


def followed_job(reply: Any) -> str | None:
    """The job a command's result asks the surface to follow (``{"job": {"id", "follow"}}``)."""
    for citation in reply.citations:
        result = citation.result
        job = result.get("job") if isinstance(result, dict) else None
        if isinstance(job, dict) and job.get("follow") is True and isinstance(job.get("id"), str):
            return job["id"]
    return None


def confirmation_arguments(
    schema: dict[str, Any],
    args: dict[str, Any],
    *,
    value_chars: int = ARG_VALUE_CHARS,
    block_chars: int = ARG_BLOCK_CHARS,
) -> str:
    """The validated arguments a person approves, one ``name: value`` line each.

    Plain text for every surface: values are JSON (strings quoted), fields the schema marks
    secret (``x-gigi-secret``, ``writeOnly``, ``format: password``) are masked, control and format characters (bidi overrides, ANSI
    escapes) are escaped, and each value and the whole block are capped with an ellipsis.
    A surface with markup still escapes it (Discord: ``gigi_discord.render``).
    """
    lines: list[str] = []
    for key, value in _masked(schema, args, schema, 0).items():
        name = key if _PLAIN_KEY.fullmatch(key) else _cap(_visible(json.dumps(key)), 66)
        text = MASKED if value is _SECRET else _cap(_dump(value), value_chars)
        lines.append(f"{name}: {text}")
    kept: list[str] = []
    size = 0
    for index, line in enumerate(lines):
        if size + len(line) + 1 > block_chars:
            kept.append(f"… ({len(lines) - index} more not shown)")
            break
        kept.append(line)
        size += len(line) + 1
    return "\n".join(kept)


class _Secret:
    """Stands for a masked value until it is rendered."""

    def __repr__(self) -> str:
        return MASKED


_SECRET = _Secret()
_SECRET_SCHEMA: dict[str, Any] = {"x-gigi-secret": True}


def _dump(value: Any) -> str:
    text = json.dumps(
        value,
        ensure_ascii=False,
        default=lambda v: MASKED if v is _SECRET else repr(type(v)),
    )
    return _visible(text)


def _visible(text: str) -> str:
    """Characters a terminal or chat client would act on or hide become ``\\uXXXX``."""
    if text.isprintable():
        return text
    return "".join(
        (f"\\u{ord(c):04x}" if ord(c) <= 0xFFFF else f"\\U{ord(c):08x}")
        if unicodedata.category(c) in _HIDDEN
        else c
        for c in text
    )


def _cap(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: max(limit - 1, 0)] + "…"


def declared_path(schema: dict[str, Any], field: str) -> str:
    """``field`` (a dotted argument path) with every object key the schema does not declare
    replaced by ``?``: a trace keeps the schema's own words and array indexes, never a key
    the model chose (consecutive unknown parts become one ``?``)."""
    nodes: list[Any] = [schema]
    out: list[str] = []
    for part in field.split(".") if field else ():
        branches = [b for node in nodes for b in _branches(node, schema)]
        names = {
            name
            for b in branches
            for words in (b.get("properties"), b.get("required"))
            if isinstance(words, dict | list)
            for name in words
        }
        arrays = any(
            b.get("type") == "array" or "items" in b or "prefixItems" in b for b in branches
        )
        if part in names or (part.isdigit() and arrays):
            out.append(part)
        elif not out or out[-1] != "?":
            out.append("?")
        if part.isdigit() and arrays:
            nodes = [s for b in branches for s in _item_schemas(b, int(part))]
        else:
            nodes = [s for b in branches for s in _property_schemas(b, part)]
    return ".".join(out)


def _is_secret(schema: dict[str, Any]) -> bool:
    """Gigi's mark, or JSON Schema's own words for a secret (what MCP servers send)."""
    return bool(schema.get("x-gigi-secret")) or (
        schema.get("writeOnly") is True or schema.get("format") == "password"
    )


def _branches(schema: Any, root: dict[str, Any]) -> list[dict[str, Any]]:
    """The schema and what it applies through ``$ref`` (local), ``allOf/anyOf/oneOf``,
    ``then/else`` and ``dependentSchemas``: each subschema once, however often it is reached
    (a reference cycle ends); past ``MAX_HOPS`` the secret mark stands for the rest."""
    found: list[dict[str, Any]] = []
    seen: set[int] = set()
    todo: list[tuple[Any, int]] = [(schema, 0)]
    while todo:
        node, hops = todo.pop()
        if not isinstance(node, dict) or id(node) in seen:
            continue
        if hops > MAX_HOPS or len(seen) >= MAX_BRANCHES:
            return [*found, _SECRET_SCHEMA]  # too deep to tell: fail closed
        seen.add(id(node))
        found.append(node)
        for word in ("$ref", "$dynamicRef"):
            if word in node:
                target = _resolve(node[word], root)
                if not isinstance(target, dict | bool):
                    return [*found, _SECRET_SCHEMA]  # a reference it cannot follow: masked
                todo.append((target, hops + 1))
        for word in ("allOf", "anyOf", "oneOf"):
            subs = node.get(word)
            todo += [(b, hops + 1) for b in subs] if isinstance(subs, list) else []
        todo += [(node.get(word), hops + 1) for word in ("then", "else")]
        dependent = node.get("dependentSchemas")
        if isinstance(dependent, dict):
            todo += [(b, hops + 1) for b in dependent.values()]
    return found


def _resolve(ref: Any, root: dict[str, Any]) -> Any:
    """A local JSON pointer (``#``, ``#/$defs/x``); None for anything else."""
    if not isinstance(ref, str) or not (ref == "#" or ref.startswith("#/")):
        return None
    target: Any = root
    for part in ref[2:].split("/") if ref != "#" else ():
        key = part.replace("~1", "/").replace("~0", "~")
        target = target.get(key) if isinstance(target, dict) else None
    return target


def _masked(schema: Any, value: Any, root: dict[str, Any], depth: int) -> Any:
    """``value`` with every part a (sub)schema marks secret replaced; when any branch of a
    combinator marks it, it is masked (a secret is never guessed to be plain), and so is
    anything nested deeper than ``MAX_DEPTH``."""
    if depth > MAX_DEPTH:
        return _SECRET
    branches = _branches(schema, root)
    if any(_is_secret(b) for b in branches):
        return _SECRET
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            subs = [s for b in branches for s in _property_schemas(b, str(key))]
            out[str(key)] = _masked({"allOf": subs}, item, root, depth + 1) if subs else item
        return out
    if isinstance(value, list):
        items = []
        for index, item in enumerate(value):
            subs = [s for b in branches for s in _item_schemas(b, index)]
            items.append(_masked({"allOf": subs}, item, root, depth + 1) if subs else item)
        return items
    return value


def _property_schemas(schema: dict[str, Any], key: str) -> list[Any]:
    found = []
    props = schema.get("properties")
    if isinstance(props, dict) and key in props:
        found.append(props[key])
    patterns = schema.get("patternProperties")
    for pattern, sub in (patterns if isinstance(patterns, dict) else {}).items():
        try:
            if re.search(pattern, key):
                found.append(sub)
        except re.error:
            found.append(sub)  # unreadable pattern: apply it, so a secret stays masked
    if not found:
        found += [
            extra
            for extra in (schema.get("additionalProperties"), schema.get("unevaluatedProperties"))
            if isinstance(extra, dict)
        ]
    return found


def _item_schemas(schema: dict[str, Any], index: int) -> list[Any]:
    """The subschema for one position: ``prefixItems`` then ``items`` (2020-12), or the
    older tuple form, ``items: [...]`` then ``additionalItems``."""
    items = schema.get("items")
    prefix = schema.get("prefixItems")
    if isinstance(items, list):
        prefix, items = items, schema.get("additionalItems")
    if isinstance(prefix, list) and index < len(prefix):
        return [prefix[index]]
    return [rest for rest in (items, schema.get("unevaluatedItems")) if isinstance(rest, dict)][:1]
