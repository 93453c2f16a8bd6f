"""A plugin's settings in a server, as a form generated from its JSON Schema."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from gigi_core import ConfigError
from gigi_web.config_form import Field, error_by_field, fields_of, parse
from gigi_web.guards import checked_form
from gigi_web.pages.common import back, member_for, show
from gigi_web.pages.plugins import _manifest


async def _current(kernel: Any, guild_id: str, plugin: str) -> tuple[dict[str, Any], set[str]]:
    state = await kernel.plugin_state.get(guild_id, plugin)
    if state is None:
        return {}, set()
    return dict(state.config), set(state.secret_fields)


async def config_page(request: Request) -> Response:
    web, member = await member_for(request, "plugins")
    kernel, guild_id = web.kernel, member.guild.id
    manifest = _manifest(kernel, request.path_params["plugin"])
    name = manifest.plugin.name
    plain, secrets_set = await _current(kernel, guild_id, name)
    fields = fields_of(manifest.plugin.config_schema, plain, secrets_set)
    if request.method == "GET":
        return await show(
            request, web, member, "config.html", plugin=name, fields=fields, errors={}, error=None
        )
    form = await checked_form(request)
    config, errors, keep = parse(fields, form)
    error = None
    if not errors:
        try:
            if keep:  # a blank secret field keeps the stored value (never shown here)
                config.update(await _kept_secrets(kernel, guild_id, name, keep))
            await kernel.configure_plugin(guild_id, name, config, by=member.actor.id)
            return back(request, f"/g/{guild_id}/plugins/{name}/config", "Settings saved.")
        except ConfigError as exc:
            field, rule = error_by_field(name, str(exc), {f.name for f in fields})
            if field is not None:
                errors[field] = rule
            else:
                error = rule
    shown = _refilled(fields, form)
    return await show(
        request, web, member, "config.html", status=400, plugin=name, fields=shown,
        errors=errors, error=error,
    )  # fmt: skip


async def _kept_secrets(kernel: Any, guild_id: str, plugin: str, names: set[str]) -> dict[str, Any]:
    current = await kernel.plugin_config(guild_id, plugin)
    values = current.model_dump() if hasattr(current, "model_dump") else dict(current)
    return {k: values[k] for k in names if k in values}


def _refilled(fields: list[Field], form: Any) -> list[Field]:
    """The form as submitted, so a fix is one edit: plain values back, secrets never."""
    from dataclasses import replace

    out = []
    for f in fields:
        if f.secret:
            out.append(f)
            continue
        raw = form.get(f.name)
        out.append(replace(f, value=raw if isinstance(raw, str) else ""))
    return out
