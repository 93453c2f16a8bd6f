"""Who is asking: identity and roles as the surface reports them, never as a model claims."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Actor:
    """A user acting in a guild; ``is_admin`` comes from the surface (e.g. Manage Server)."""

    id: str
    roles: frozenset[str] = field(default_factory=frozenset)
    is_admin: bool = False
    display_name: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.roles, frozenset):
            object.__setattr__(self, "roles", frozenset(self.roles))
