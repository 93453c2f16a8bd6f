"""The pydantic model a routing model's plan is validated against (loaded only when used)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator


class ModelPath(BaseModel):
    model_config = ConfigDict(extra="forbid")
    path: str = Field(min_length=1, max_length=64)
    query: str = Field(max_length=1000)


class ModelPlan(BaseModel):
    model_config = ConfigDict(extra="forbid")
    intent: Literal[
        "factual_recall",
        "temporal_context",
        "cross_channel",
        "accountability",
        "institutional",
        "dependency",
    ]
    entities: list[str] = Field(max_length=20)
    since: datetime | None
    until: datetime | None
    channels: list[str] | None = Field(max_length=100)
    paths: list[ModelPath] = Field(max_length=20)
    format: Literal["direct_answer", "summary", "list", "comparison"]

    @field_validator("since", "until")
    @classmethod
    def _aware(cls, value: datetime | None) -> datetime | None:
        if value is not None and value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value
