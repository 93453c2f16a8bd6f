"""``kernel.privacy``: a member's data across the kernel and every plugin, and guild purges.

Plugins answer through ``export_user_data`` / ``delete_user_data`` / ``purge_guild_data``;
one plugin that fails is reported by name (``errors``) and never stops the others.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from gigi_core.errors import ConfigError
from gigi_core.privacy.kernel_data import (
    delete_kernel,
    export_kernel,
    forget_run,
    purge_kernel_guild,
)

if TYPE_CHECKING:
    from gigi_core.kernel import Kernel

log = logging.getLogger(__name__)
PURGE_JOB = "gigi.guild_purge"
FORGET_RUN_JOB = "gigi.privacy_forget_run"


def purge_after_days() -> float:
    raw = os.environ.get("GIGI_GUILD_PURGE_AFTER_DAYS") or "30"
    try:
        days = float(raw)
    except ValueError:
        days = -1.0
    if not 0 <= days < 100_000:
        raise ConfigError(
            f"GIGI_GUILD_PURGE_AFTER_DAYS: {raw!r} is not a number of days (0 or more)"
        )
    return days


def hook_timeout() -> float:
    raw = os.environ.get("GIGI_PRIVACY_HOOK_TIMEOUT_SECONDS") or "120"
    try:
        seconds = float(raw)
    except ValueError:
        seconds = -1.0
    if not 0 < seconds < 86_400:
        raise ConfigError(
            f"GIGI_PRIVACY_HOOK_TIMEOUT_SECONDS: {raw!r} is not a number of seconds above 0"
        )
    return seconds


def check_settings() -> None:
    """Start-up check (``gigi run``): a bad value is refused before a guild is ever left."""
    purge_after_days()
    hook_timeout()


class PrivacyService:
    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel

    def pseudonym(self, user_id: str) -> str:
        """A stable keyed stand-in for a deleted member's id (same member, same pseudonym)."""
        return "anon:" + self.kernel.state_sealer.keyed_hash(f"user:{user_id}".encode())[:24]

    async def statements(self, guild_id: str) -> list[dict[str, str]]:
        """Each plugin enabled in the guild, with what it stores (its manifest's statement)."""
        enabled = await self.kernel.plugin_state.enabled_plugins(guild_id)
        out = []
        for name in enabled:
            manifest = self.kernel.registry.manifests.get(name)
            if manifest is not None:
                out.append(
                    {
                        "plugin": name,
                        "description": manifest.plugin.description,
                        "data_statement": manifest.plugin.data_statement,
                    }
                )
        return out

    async def export(self, user_id: str, guild_id: str | None = None) -> dict[str, Any]:
        """Everything held about ``user_id`` (in one guild, or everywhere), JSON-ready."""
        results, errors = await self._ask("export_user_data", user_id, guild_id)
        for name in list(results):  # one plugin's odd answer must not spoil the whole file
            try:
                json.dumps(results[name])
            except (TypeError, ValueError):
                log.error("plugin %s: export_user_data returned data that is not JSON", name)
                del results[name]
                errors[name] = "returned data that is not JSON (see the operator's log)"
        data = {
            "user_id": user_id,
            "guild_id": guild_id,
            "generated_at": datetime.now(UTC).isoformat(),
            "kernel": await export_kernel(self.kernel.db, user_id, guild_id),
            "plugins": {name: value for name, value in results.items() if value is not None},
        }
        if errors:
            data["errors"] = errors
        await self.kernel.track("privacy.export", guild_id=guild_id)
        return data

    async def delete(
        self,
        user_id: str,
        guild_id: str | None = None,
        *,
        by: str | None = None,
        keep_run: str | None = None,
    ) -> dict[str, Any]:
        """Delete across the kernel and every plugin; returns counts (empty when nothing).

        ``keep_run``: the agent run carrying out this deletion, which must be able to finish.
        A guild-scoped deletion keeps the member's personal LLM keys (``kept``).
        """
        from gigi_core.store.audit import AuditRecord

        results, errors = await self._ask("delete_user_data", user_id, guild_id)
        await self.kernel.llm.budgets.give_back()  # no share of a deleted window stays here
        kernel_counts = await delete_kernel(
            self.kernel.db, user_id, guild_id, self.pseudonym(user_id), keep_run=keep_run
        )
        kept_keys = kernel_counts.pop("personal_llm_keys_kept", 0)
        self.kernel.views.clear()  # grants naming the member are gone
        self.kernel.llm.forget()  # and so are their keys: none answers again, even here
        plugins = {name: c for name, value in results.items() if (c := _counts(name, value))}
        total = sum(kernel_counts.values()) + sum(sum(c.values()) for c in plugins.values())
        await self.kernel.audit.record(
            AuditRecord(
                kind="privacy.delete",
                status="ok" if not errors else "partial",
                actor_id=self.pseudonym(user_id) if by in (None, user_id) else by,
                guild_id=guild_id,
            )
        )
        if keep_run is not None:  # once it has finished, the deleting run forgets the member too
            await self.kernel.jobs.defer(FORGET_RUN_JOB, {"run_id": keep_run}, key=keep_run)
        out: dict[str, Any] = {"kernel": kernel_counts, "plugins": plugins, "total": total}
        if kept_keys:  # guild-scoped: personal keys serve the member in every server
            out["kept"] = {"personal_llm_keys": kept_keys}
        if errors:
            out["errors"] = errors
        return out

    async def forget_run(self, run_id: str) -> int:
        """The job ``delete`` queues for its own run: pseudonymise it once it has finished."""
        return await forget_run(self.kernel.db, run_id, self.pseudonym)

    async def purge_guild(self, guild_id: str) -> dict[str, Any]:
        """Everything the kernel and every plugin hold for a guild Gigi left."""
        results, errors = await self._ask("purge_guild_data", None, guild_id)
        await self.kernel.llm.budgets.give_back()
        counts = await purge_kernel_guild(self.kernel.db, guild_id)
        self.kernel.views.clear()
        self.kernel.llm.forget()  # the guild's keys, policies and budgets are gone
        self.kernel.events.invalidate(guild_id)
        out: dict[str, Any] = {
            "kernel": counts,
            "plugins": {n: c for n, v in results.items() if (c := _counts(n, v))},
        }
        if errors:
            out["errors"] = errors
        await self.kernel.track("guild.purged", guild_id=guild_id)
        return out

    async def on_lifecycle(self, event: Any) -> None:
        """GuildLeft schedules the purge after the grace period; GuildJoined cancels it;
        ChannelDeleted removes the place's LLM policy."""
        from gigi_core.events import ChannelDeleted, GuildJoined, GuildLeft

        if event.guild_id is None:
            return
        if isinstance(event, ChannelDeleted):
            await self._channel_deleted(event.guild_id, event.channel_id)
            return
        key = f"purge:{event.guild_id}"
        try:
            if isinstance(event, GuildLeft):
                run_at = datetime.now(UTC) + timedelta(days=purge_after_days())
                await self.kernel.jobs.defer(
                    PURGE_JOB, {"guild_id": event.guild_id}, key=key, run_at=run_at
                )
            elif isinstance(event, GuildJoined):
                await self.kernel.jobs.cancel_key(PURGE_JOB, key)
        except Exception as exc:  # the surface that published must never see this
            log.error(
                "could not %s the purge of guild %s: %s",
                "schedule" if isinstance(event, GuildLeft) else "cancel",
                event.guild_id,
                exc if isinstance(exc, ConfigError) else type(exc).__name__,
            )

    async def _channel_deleted(self, guild_id: str, channel_id: str) -> None:
        try:
            await self.kernel.llm.places.place_deleted(guild_id, channel_id)
        except Exception as exc:  # the surface that published must never see this
            log.error(
                "could not remove the LLM policy of deleted channel %s in guild %s: %s",
                channel_id,
                guild_id,
                type(exc).__name__,
            )

    async def _ask(
        self, hook: str, user_id: str | None, guild_id: str | None
    ) -> tuple[dict[str, Any], dict[str, str]]:
        """Call one privacy hook on every plugin, each isolated; results by plugin name."""
        import inspect

        results: dict[str, Any] = {}
        errors: dict[str, str] = {}
        kwargs: dict[str, Any] = {"guild_id": guild_id, "kernel": self.kernel}
        if user_id is not None:
            kwargs["user_id"] = user_id
        deadline = hook_timeout()
        for impl in getattr(self.kernel.pm.hook, hook).get_hookimpls():
            try:
                async with asyncio.timeout(deadline):
                    value = impl.function(**{n: kwargs[n] for n in impl.argnames})
                    if inspect.isawaitable(value):
                        value = await value
                results[impl.plugin_name] = value
            except TimeoutError:
                log.error("plugin %s: %s ran past %.0fs", impl.plugin_name, hook, deadline)
                errors[impl.plugin_name] = f"no answer within {deadline:g} s"
            except Exception as exc:
                log.error("plugin %s: %s raised %s", impl.plugin_name, hook, type(exc).__name__)
                errors[impl.plugin_name] = f"{type(exc).__name__} (see the operator's log)"
        return results, errors


def _counts(plugin: str, value: Any) -> dict[str, int]:
    """A plugin's answer to delete/purge must be counts; anything else is reported as such."""
    if isinstance(value, dict) and all(
        isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool)
        for k, v in value.items()
    ):
        return {k: v for k, v in value.items() if v}
    log.warning("plugin %s returned something other than counts from a privacy hook", plugin)
    return {"deleted": 1} if value else {}
