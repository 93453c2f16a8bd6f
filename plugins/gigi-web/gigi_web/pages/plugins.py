"""Plugins in a server: what each stores and may do, on or off; enabling shows that first."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from gigi_core import ConfigError
from gigi_web.access import Refused
from gigi_web.guards import checked_form
from gigi_web.pages.common import back, member_for, show


def _manifest(kernel: Any, name: str) -> Any:
    manifest = kernel.registry.manifests.get(name)
    if manifest is None or not manifest.plugin.per_server:
        raise Refused(404, "No plugin of that name is installed; pick one from the list.")
    return manifest


def describe(manifest: Any) -> dict[str, Any]:
    spec = manifest.plugin
    return {
        "name": spec.name,
        "version": spec.version,
        "description": spec.description,
        "data_statement": spec.data_statement,
        "capabilities": [(c.name, c.description, c.default) for c in spec.capabilities],
        "actions": [
            (a.name, a.description, str(getattr(a.safety, "value", a.safety)), a.capability)
            for a in manifest.actions
        ],
        "external": any(
            str(getattr(a.safety, "value", "")) == "external" for a in manifest.actions
        ),
        "has_config": bool(spec.config_schema.get("properties") or {}),
    }


async def plugin_list(request: Request) -> Response:
    web, member = await member_for(request, "plugins")
    kernel = web.kernel
    enabled = set(await kernel.plugin_state.enabled_plugins(member.guild.id))
    manifests = sorted(kernel.registry.manifests.items())
    rows = [{**describe(m), "enabled": n in enabled} for n, m in manifests if m.plugin.per_server]
    whole_bot = [describe(m) for _, m in manifests if not m.plugin.per_server]
    failed = sorted(r.name for r in kernel.registry.records.values() if r.status == "failed")
    return await show(
        request, web, member, "plugins.html", plugins=rows, whole_bot=whole_bot, failed=failed
    )


async def enable(request: Request) -> Response:
    web, member = await member_for(request, "plugins")
    manifest = _manifest(web.kernel, request.path_params["plugin"])
    info = describe(manifest)
    if request.method == "GET":
        return await show(request, web, member, "enable.html", plugin=info, error=None)
    form = await checked_form(request)
    allow_external = form.get("allow_external") == "on" if info["external"] else None
    try:
        await web.kernel.enable_plugin(
            member.guild.id, info["name"], allow_external=allow_external, by=member.actor.id
        )
    except ConfigError as exc:
        return await show(
            request, web, member, "enable.html", status=400, plugin=info, error=str(exc)
        )
    return back(request, f"/g/{member.guild.id}/plugins", f"Enabled {info['name']}.")


async def disable(request: Request) -> Response:
    web, member = await member_for(request, "plugins")
    name = _manifest(web.kernel, request.path_params["plugin"]).plugin.name
    await checked_form(request)
    changed = await web.kernel.disable_plugin(member.guild.id, name, by=member.actor.id)
    notice = f"Disabled {name}; its settings are kept." if changed else f"{name} was not on."
    return back(request, f"/g/{member.guild.id}/plugins", notice)
