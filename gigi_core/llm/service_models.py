"""``kernel.llm``'s model discovery and failover lists (mixed into ``LlmService``).

Kept apart so the service module stays the list of calls; the work is in ``catalogue``,
``failover_store`` and ``failover``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from gigi_core.llm import catalogue
from gigi_core.llm.failover_store import FailoverPlan, parse_on, parse_order
from gigi_core.llm.records import LlmConfigError, Owner, check_purpose

if TYPE_CHECKING:
    from gigi_core.llm.catalogue import Catalogue
    from gigi_core.llm.service import LlmService


def _owner(owner: Owner | str) -> Owner:
    return owner if isinstance(owner, Owner) else Owner.parse(owner)


class ModelAdmin:
    """Which models a credential can call; what a failing call moves on to."""

    async def list_models(
        self, owner: Owner | str, which: str, *, refresh: bool = False
    ) -> Catalogue:
        """The models of ``owner``'s credential ``which`` (a label, or a provider name
        when the owner has a single credential for it), cached per key."""
        return await catalogue.list_models(self._llm, _owner(owner), which, refresh=refresh)

    async def model_warning(
        self, owner: Owner | str, label: str, model: str, *, see: str | None = None
    ) -> str | None:
        """A warning (never a refusal) when ``model`` is not in ``label``'s cached listing."""
        return await catalogue.model_warning(self._llm, _owner(owner), label, model, see=see)

    async def set_failover(
        self,
        owner: Owner | str,
        purpose: str,
        order: str,
        on: str | None = None,
        *,
        by: str | None = None,
    ) -> FailoverPlan:
        """Replace ``owner``'s failover list for ``purpose``: ``order`` is
        ``LABEL[:MODEL],...`` of the owner's own credentials, ``on`` the error classes."""
        llm = self._llm
        owner = _owner(owner)
        plan = await llm.failovers.set(owner, purpose, parse_order(order), parse_on(on), by=by)
        llm._changed()
        await llm._audit("llm.failover.set", owner, by, purpose)
        return plan

    async def failover(self, owner: Owner | str, purpose: str | None = None) -> list[FailoverPlan]:
        """The owner's failover lists (one purpose's, when given)."""
        owner = _owner(owner)
        if purpose is None:
            return await self._llm.failovers.find(owner)
        found = await self._llm.failovers.get(owner, check_purpose(purpose))
        return [found] if found is not None else []

    async def clear_failover(
        self, owner: Owner | str, purpose: str, *, by: str | None = None
    ) -> None:
        """Remove the list; an error naming the lists there are when there is none."""
        llm = self._llm
        owner = _owner(owner)
        if not await llm.failovers.clear(owner, purpose):
            have = ", ".join(p.purpose for p in await llm.failovers.find(owner)) or "none"
            raise LlmConfigError(
                f"{owner} has no failover list for {purpose} (lists: {have})",
                hint="see them with `failover show`",
            )
        llm._changed()
        await llm._audit("llm.failover.clear", owner, by, purpose)

    @property
    def _llm(self) -> LlmService:
        return cast("LlmService", self)
