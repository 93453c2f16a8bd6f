"""The strict JSON schemas the models answer in, and their validation on receipt.

The schema is what the provider is asked to enforce; the pydantic models below are what
Gigi enforces anyway (a provider may ignore ``strict``). The top level must match exactly
(unknown fields or wrong types: the whole reply is invalid, and the pipeline writes its
fallback signal); each item is checked on its own, and an invalid item is dropped and
counted, so one over-long entity name costs that entity, not the extraction.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

CATEGORIES = (
    "decision",
    "action",
    "question",
    "blocker",
    "update",
    "discussion",
    "reference",
    "routine",
)
SIGNAL_TYPES = ("discussion", "question", "blocker", "update", "concern")
ENTITY_TYPES = ("person", "service", "project", "team", "tool", "concept")
RELATIONSHIPS = ("owns", "depends_on", "works_on", "blocks", "reports_to")
SENTIMENTS = ("productive", "contentious", "blocked", "routine")
NAME_MAX = 120


class InvalidReply(ValueError):
    """A model reply that does not match its schema at the top level (names the problem)."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class Classification(_Strict):
    categories: list[Literal[CATEGORIES]] = Field(max_length=8)  # type: ignore[valid-type]
    confidence: float = Field(ge=0, le=1)
    entities: list[str] = Field(max_length=10)
    is_high_signal: bool


class Decision(_Strict):
    summary: str = Field(min_length=3, max_length=500)
    rationale: str | None = Field(default=None, max_length=1000)
    decided_by: list[str] = Field(max_length=10)
    message_ids: list[str] = Field(min_length=1, max_length=30)
    confidence: float = Field(ge=0, le=1)
    tags: list[str] = Field(max_length=8)


class Action(_Strict):
    description: str = Field(min_length=3, max_length=500)
    owner_id: str | None = Field(default=None, max_length=64)
    owner_name: str | None = Field(default=None, max_length=100)
    deadline: str | None = Field(default=None, max_length=40)
    message_ids: list[str] = Field(min_length=1, max_length=30)
    confidence: float = Field(ge=0, le=1)
    tags: list[str] = Field(max_length=8)


class Entity(_Strict):
    name: str = Field(min_length=1, max_length=NAME_MAX)
    type: Literal[ENTITY_TYPES]  # type: ignore[valid-type]
    aliases: list[str] = Field(max_length=8)
    member_id: str | None = Field(default=None, max_length=64)
    message_ids: list[str] = Field(min_length=1, max_length=30)
    confidence: float = Field(ge=0, le=1)


class Relationship(_Strict):
    source: str = Field(min_length=1, max_length=NAME_MAX)
    target: str = Field(min_length=1, max_length=NAME_MAX)
    relationship: Literal[RELATIONSHIPS]  # type: ignore[valid-type]
    context: str | None = Field(default=None, max_length=300)
    message_ids: list[str] = Field(min_length=1, max_length=30)
    confidence: float = Field(ge=0, le=1)


class Signal(_Strict):
    type: Literal[SIGNAL_TYPES]  # type: ignore[valid-type]
    summary: str = Field(min_length=3, max_length=400)
    participants: list[str] = Field(max_length=20)
    message_ids: list[str] = Field(min_length=1, max_length=30)
    confidence: float = Field(ge=0, le=1)
    tags: list[str] = Field(max_length=8)


class Verdict(_Strict):
    contradicts: bool


class SummaryReply(_Strict):
    summary: str = Field(min_length=1, max_length=4000)
    sentiment: Literal[SENTIMENTS]  # type: ignore[valid-type]


ITEMS: dict[str, type[_Strict]] = {
    "decisions": Decision,
    "actions": Action,
    "entities": Entity,
    "relationships": Relationship,
    "signals": Signal,
}


def _string_list(max_items: int, max_len: int = 80) -> dict[str, Any]:
    return {
        "type": "array",
        "items": {"type": "string", "maxLength": max_len},
        "maxItems": max_items,
    }


def _ids() -> dict[str, Any]:
    return {"type": "array", "items": {"type": "string", "maxLength": 64}, "maxItems": 30}


def _object(props: dict[str, Any]) -> dict[str, Any]:
    # Strict structured output: every property required (nullable where optional).
    return {
        "type": "object",
        "properties": props,
        "required": list(props),
        "additionalProperties": False,
    }


def _nullable(kind: str, max_len: int) -> dict[str, Any]:
    return {"type": [kind, "null"], "maxLength": max_len}


CONF = {"type": "number", "minimum": 0, "maximum": 1}


def classify_schema() -> dict[str, Any]:
    return _object(
        {
            "categories": {
                "type": "array",
                "items": {"type": "string", "enum": list(CATEGORIES)},
                "maxItems": 8,
            },
            "confidence": CONF,
            "entities": _string_list(10),
            "is_high_signal": {"type": "boolean"},
        }
    )


def extract_schema(max_items: int) -> dict[str, Any]:
    def arr(item: dict[str, Any]) -> dict[str, Any]:
        return {"type": "array", "items": item, "maxItems": max_items}

    return _object(
        {
            "decisions": arr(
                _object(
                    {
                        "summary": {"type": "string", "maxLength": 500},
                        "rationale": _nullable("string", 1000),
                        "decided_by": _string_list(10, 64),
                        "message_ids": _ids(),
                        "confidence": CONF,
                        "tags": _string_list(8, 40),
                    }
                )
            ),
            "actions": arr(
                _object(
                    {
                        "description": {"type": "string", "maxLength": 500},
                        "owner_id": _nullable("string", 64),
                        "owner_name": _nullable("string", 100),
                        "deadline": _nullable("string", 40),
                        "message_ids": _ids(),
                        "confidence": CONF,
                        "tags": _string_list(8, 40),
                    }
                )
            ),
            "entities": arr(
                _object(
                    {
                        "name": {"type": "string", "maxLength": NAME_MAX},
                        "type": {"type": "string", "enum": list(ENTITY_TYPES)},
                        "aliases": _string_list(8, NAME_MAX),
                        "member_id": _nullable("string", 64),
                        "message_ids": _ids(),
                        "confidence": CONF,
                    }
                )
            ),
            "relationships": arr(
                _object(
                    {
                        "source": {"type": "string", "maxLength": NAME_MAX},
                        "target": {"type": "string", "maxLength": NAME_MAX},
                        "relationship": {"type": "string", "enum": list(RELATIONSHIPS)},
                        "context": _nullable("string", 300),
                        "message_ids": _ids(),
                        "confidence": CONF,
                    }
                )
            ),
            "signals": arr(
                _object(
                    {
                        "type": {"type": "string", "enum": list(SIGNAL_TYPES)},
                        "summary": {"type": "string", "maxLength": 400},
                        "participants": _string_list(20, 64),
                        "message_ids": _ids(),
                        "confidence": CONF,
                        "tags": _string_list(8, 40),
                    }
                )
            ),
        }
    )


def verdict_schema() -> dict[str, Any]:
    return _object({"contradicts": {"type": "boolean"}})


def summary_schema() -> dict[str, Any]:
    return _object(
        {
            "summary": {"type": "string", "maxLength": 4000},
            "sentiment": {"type": "string", "enum": list(SENTIMENTS)},
        }
    )


def parse_classification(data: Any) -> Classification:
    try:
        return Classification.model_validate(data)
    except ValidationError as exc:
        raise InvalidReply(f"classification: {_where(exc)}") from None


def parse_model(model: type[_Strict], data: Any, what: str) -> Any:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise InvalidReply(f"{what}: {_where(exc)}") from None


class Extraction:
    """A validated extraction: the items that passed, and how many of each were dropped."""

    def __init__(self) -> None:
        self.items: dict[str, list[Any]] = {k: [] for k in ITEMS}
        self.dropped: dict[str, int] = {k: 0 for k in ITEMS}


def parse_extraction(data: Any, max_items: int) -> Extraction:
    """Top level exactly the five arrays; items validated one by one (bad ones dropped)."""
    if not isinstance(data, dict):
        raise InvalidReply("extraction: not a JSON object")
    unknown = sorted(set(data) - set(ITEMS))
    if unknown:
        raise InvalidReply(f"extraction: unknown field(s) {', '.join(unknown[:5])}")
    out = Extraction()
    for key, model in ITEMS.items():
        values = data.get(key, [])
        if not isinstance(values, list):
            raise InvalidReply(f"extraction: {key} must be an array")
        for i, value in enumerate(values):
            if i >= max_items:
                out.dropped[key] += len(values) - max_items
                break
            try:
                out.items[key].append(model.model_validate(value))
            except ValidationError:
                out.dropped[key] += 1
    return out


def _where(exc: ValidationError) -> str:
    """Which field failed and why, never the value (it is model output)."""
    first = exc.errors()[0]
    loc = ".".join(str(p) for p in first.get("loc", ())) or "(top level)"
    return f"{loc}: {first.get('type', 'invalid')}"
