"""Owners, purposes, policies and the plain records the LLM service hands out.

Records never carry a secret: a credential is described by label, provider, the last six
characters of its fingerprint and its status.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any, Literal, get_args

from gigi_core.errors import ConfigError, GigiError

OwnerType = Literal["guild", "user", "tenant"]
Purpose = Literal[
    "chat",
    "reasoning",
    "embedding",
    "routing",
    # the model slots: an owner with no profile for one serves it with a general one
    "classify",
    "extract",
    "summarise",
    "query_analyse",
    "respond",
    "complex",
    # pictures: image input (falls back to the chat profile) and image generation (no fallback)
    "vision",
    "image",
]
PersonalKeys = Literal["off", "dm-only", "guild-allowed"]

OWNER_TYPES: tuple[str, ...] = ("guild", "user", "tenant")
PURPOSES: tuple[str, ...] = get_args(Purpose)
PERSONAL_KEYS: tuple[str, ...] = ("off", "dm-only", "guild-allowed")
# the purpose an owner's profile for it stands in for, when the owner has none for a slot
GENERAL_PURPOSE: dict[str, str] = {
    "classify": "routing",
    "query_analyse": "routing",
    "extract": "chat",
    "summarise": "chat",
    "respond": "chat",
    "reasoning": "respond",  # planning: the reasoning profile, else the answering one
    "complex": "extract",
    "vision": "chat",
}
TENANT_ID = "tenant"  # the single operator owner; the tenant has no external id


class LlmConfigError(ConfigError):
    """An LLM credential, profile or policy request names something wrong or missing."""


class NothingToResolve(LlmConfigError):
    """No owner has a usable model profile for this request; says what an admin must add."""


class CredentialUnusable(GigiError):
    """The resolved profile's credential cannot be used (revoked, or its secret cannot open)."""


@dataclass(frozen=True)
class Owner:
    """Who owns (and pays for) a credential or profile: ``tenant``, ``guild:ID`` or ``user:ID``."""

    type: OwnerType
    id: str

    @classmethod
    def parse(cls, text: str) -> Owner:
        """Parse ``tenant``, ``guild:ID`` or ``user:ID`` (the CLI's ``--owner``)."""
        raw = text.strip()
        if raw == "tenant":
            return cls("tenant", TENANT_ID)
        kind, sep, ident = raw.partition(":")
        if not sep or kind not in ("guild", "user") or not ident.strip():
            raise LlmConfigError(
                f"invalid owner {text!r}",
                hint="use tenant, guild:<guild id> or user:<user id>",
            )
        return cls(kind, ident.strip())  # type: ignore[arg-type]

    @classmethod
    def guild(cls, guild_id: str) -> Owner:
        return cls("guild", guild_id)

    @classmethod
    def user(cls, user_id: str) -> Owner:
        return cls("user", user_id)

    @classmethod
    def tenant(cls) -> Owner:
        return cls("tenant", TENANT_ID)

    def __str__(self) -> str:
        return "tenant" if self.type == "tenant" else f"{self.type}:{self.id}"


def check_purpose(purpose: str) -> Purpose:
    if purpose not in PURPOSES:
        raise LlmConfigError(
            f"unknown purpose {purpose!r}", hint=f"use one of {', '.join(PURPOSES)}"
        )
    return purpose  # type: ignore[return-value]


def purpose_chain(purpose: str) -> tuple[str, ...]:
    """``purpose`` then the general purposes it falls back to, most specific first."""
    chain = [check_purpose(purpose)]
    while chain[-1] in GENERAL_PURPOSE:
        chain.append(GENERAL_PURPOSE[chain[-1]])
    return tuple(chain)


@dataclass(frozen=True)
class CredentialInfo:
    """A credential as listings show it: never the secret, only a fingerprint suffix."""

    id: str
    owner: Owner
    provider: str
    label: str
    base_url: str | None
    fingerprint_suffix: str
    status: str
    last_test_status: str | None
    last_tested_at: datetime | None
    last_error_class: str | None
    created_by: str | None
    created_at: datetime
    revoked_at: datetime | None
    #: Added from a surface by a member or guild admin: its base URL is checked at each call.
    url_checked: bool = False

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["owner"] = str(self.owner)
        for key in ("last_tested_at", "created_at", "revoked_at"):
            value = getattr(self, key)
            out[key] = value.isoformat() if value is not None else None
        return out


@dataclass(frozen=True)
class ProfileInfo:
    """One owner's model choice for one purpose."""

    owner: Owner
    purpose: str
    credential_id: str
    credential_label: str
    provider: str
    model: str
    fallback_model: str | None
    params: dict[str, Any] = field(default_factory=dict)
    enabled: bool = True
    selected_by: str | None = None
    #: The cheaper model on the same credential that answers once a budget is spent.
    budget_fallback_model: str | None = None
    #: Prices per million input / output tokens (money budgets count in them).
    input_price: float | None = None
    output_price: float | None = None
    currency: str | None = None

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["owner"] = str(self.owner)
        return out


@dataclass(frozen=True)
class GuildPolicy:
    """Whether personal keys may be used in a guild and whether the tenant's profile may be."""

    guild_id: str
    personal_keys: PersonalKeys = "off"
    tenant_fallback: bool = False

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Resolution:
    """The profile a request will use and who pays for it. Holds a credential id, not a key."""

    owner: Owner
    purpose: str
    provider: str
    model: str
    fallback_model: str | None
    credential_id: str
    credential_label: str
    base_url: str | None
    params: dict[str, Any] = field(default_factory=dict)
    #: Served by a keyless provider's default model: no credential, called with ``api_key=""``.
    keyless: bool = False


@dataclass(frozen=True)
class UsageRow:
    """Usage aggregated by provider, model, purpose and status."""

    provider: str
    model: str
    purpose: str
    status: str
    calls: int
    input_tokens: int
    output_tokens: int
    reasoning_tokens: int
    cached_tokens: int

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)
