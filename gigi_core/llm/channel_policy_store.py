"""Reading and changing the per-place and per-role LLM policies of a guild.

A guild's policies are read in two statements and handed out as one ``GuildPolicies``
fact, which the LLM cache keeps like the other facts resolution reads.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from sqlalchemy import delete, select

from gigi_core.llm.channel_policy import (
    CLEARABLE,
    PLACE_KINDS,
    GuildPolicies,
    ModelChoice,
    Place,
    PlacePolicy,
    RolePolicy,
    check_answer,
    check_choice,
    check_id,
    check_prompt,
    check_role_models,
    place_of,
    row_id,
)
from gigi_core.llm.records import LlmConfigError, check_purpose
from gigi_core.store.llm_policy_tables import LlmPlacePolicy, LlmRolePolicy
from gigi_core.store.tables import utcnow

if TYPE_CHECKING:
    from gigi_core.store.db import Database


def _place_policy(row: LlmPlacePolicy) -> PlacePolicy:
    models = {}
    for purpose, raw in (row.models or {}).items():
        choice = ModelChoice.from_json(raw)
        if choice is not None:
            models[purpose] = choice
    return PlacePolicy(
        guild_id=row.guild_id,
        place=place_of(row.guild_id, row.kind, row.place_id),
        models=models,
        prompt=row.prompt,
        answer=row.answer,  # type: ignore[arg-type]
        updated_by=row.updated_by,
    )


class ChannelPolicyStore:
    """Set, clear and read place and role policies."""

    def __init__(self, db: Database) -> None:
        self.db = db

    async def read(self, guild_id: str) -> GuildPolicies:
        async with self.db.session() as s:
            places = (
                await s.scalars(select(LlmPlacePolicy).where(LlmPlacePolicy.guild_id == guild_id))
            ).all()
            roles = (
                await s.scalars(select(LlmRolePolicy).where(LlmRolePolicy.guild_id == guild_id))
            ).all()
            return GuildPolicies(
                guild_id,
                {r.place_id: _place_policy(r) for r in places},
                {r.role_id: RolePolicy(guild_id, r.role_id, tuple(r.models or ())) for r in roles},
            )

    async def set_place(
        self,
        guild_id: str,
        place: Place,
        *,
        purpose: str | None = None,
        profile: str | None = None,
        model: str | None = None,
        prompt: str | None = None,
        answer: str | None = None,
        clear: str | None = None,
        by: str | None = None,
    ) -> PlacePolicy:
        """Change only what is given. ``clear`` (model, prompt, answer, all) goes back to
        inheriting; clearing ``model`` needs the ``purpose`` (every one without it)."""
        guild_id = check_id(guild_id, "guild id")
        if place.kind == "guild" and place.id != guild_id:
            raise LlmConfigError(
                f"the guild place must be this guild ({guild_id}), not {place.id}",
                hint=f"write guild:{guild_id}",
            )
        choice = check_choice(purpose, profile, model) if (profile or model) else None
        if choice is not None and choice.profile == purpose:
            raise LlmConfigError(
                f"purpose {purpose} already uses the guild's {purpose} profile",
                hint=f"name another purpose's profile, or clear the {purpose} override",
            )
        if purpose is not None and choice is None and clear not in ("model", "all"):
            raise LlmConfigError(
                f"purpose {purpose} was given without a profile or model",
                hint="add profile=<purpose> or model=<model id>, or clear=model",
            )
        if clear is not None and clear not in CLEARABLE:
            raise LlmConfigError(
                f"cannot clear {clear!r}", hint=f"clear one of {', '.join(CLEARABLE)}"
            )
        text = check_prompt(prompt) if prompt is not None else None
        mode = check_answer(answer) if answer is not None else None
        if choice is None and text is None and mode is None and clear is None:
            raise LlmConfigError(
                f"nothing to change for {place}",
                hint="give a purpose with a profile or model, a prompt, an answer mode or clear",
            )
        async with self.db.session() as s:
            key = row_id(guild_id, place)
            row = await s.get(LlmPlacePolicy, (guild_id, key))
            if row is None:
                row = LlmPlacePolicy(guild_id=guild_id, place_id=key, models={})
                s.add(row)
            row.kind = place.kind
            models = dict(row.models or {})
            if clear in ("model", "all"):
                if purpose is not None and clear == "model":
                    models.pop(check_purpose(purpose), None)
                else:
                    models = {}
            if clear in ("prompt", "all"):
                row.prompt = None
            if clear in ("answer", "all"):
                row.answer = None
            if choice is not None and purpose is not None:
                models[purpose] = choice.as_json()
            if text is not None:
                row.prompt = text or None
            if mode is not None:
                row.answer = mode
            row.models = models
            row.updated_by, row.updated_at = by, utcnow()
            return _place_policy(row)

    async def remove_place(self, guild_id: str, place_id: str) -> int:
        """A channel, category, forum or thread is gone: its row goes (never the guild's
        own defaults, even for a place that shares the guild's id)."""
        if place_id == guild_id:
            keys = [f"{kind}:{place_id}" for kind in PLACE_KINDS if kind != "guild"]
        else:
            keys = [place_id]
        async with self.db.session() as s:
            result = await s.execute(
                delete(LlmPlacePolicy).where(
                    LlmPlacePolicy.guild_id == guild_id,
                    LlmPlacePolicy.place_id.in_(keys),
                    LlmPlacePolicy.kind != "guild",
                )
            )
            return int(result.rowcount or 0)

    async def set_role(
        self, guild_id: str, role_id: str, models: Iterable[str] | None, *, by: str | None = None
    ) -> RolePolicy | None:
        """Replace a role's allowed models; ``None`` removes its policy (no limit again)."""
        guild_id, role_id = check_id(guild_id, "guild id"), check_id(role_id, "role id")
        async with self.db.session() as s:
            row = await s.get(LlmRolePolicy, (guild_id, role_id))
            if models is None:
                if row is not None:
                    await s.delete(row)
                return None
            allowed = check_role_models(models)
            if row is None:
                row = LlmRolePolicy(guild_id=guild_id, role_id=role_id)
                s.add(row)
            row.models = list(allowed)
            row.updated_by, row.updated_at = by, utcnow()
            return RolePolicy(guild_id, role_id, allowed)
