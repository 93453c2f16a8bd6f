"""Characters a person does not see but a model reads, in a server's tool text.

Tag characters (U+E0000-E007F) spell ASCII invisibly, variation selectors can encode bytes,
and format and control characters (joiners, bidi overrides, soft hyphens, byte-order marks)
hide or reorder text. A description carrying any of them could tell the model something the
approving operator never read, so they are removed from every text the model is given
(descriptions, and descriptions and titles inside schemas) and the approval diff lists what
went. Newlines and tabs stay.
"""

from __future__ import annotations

import json
import unicodedata
from typing import Any

KEEP = frozenset("\n\t")
# Letters that render as nothing (Hangul fillers); the rest is by range or category below.
FILLERS = frozenset({0x115F, 0x1160, 0x3164, 0xFFA0})
TAG_FIRST, TAG_LAST = 0xE0000, 0xE007F
HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Cs"})  # controls, format, lone surrogates
SHOWN_KINDS = 8  # code points named in one note
SPELLED_MAX = 200  # characters of decoded tag text shown in one note


def is_invisible(ch: str) -> bool:
    if ch in KEEP:
        return False
    cp = ord(ch)
    if TAG_FIRST <= cp <= TAG_LAST or 0xFE00 <= cp <= 0xFE0F or 0xE0100 <= cp <= 0xE01EF:
        return True  # tags (some unassigned), variation selectors
    return cp in FILLERS or unicodedata.category(ch) in HIDDEN_CATEGORIES


def strip_invisible(text: str) -> tuple[str, list[int]]:
    """``text`` without invisible characters, and the code points removed (in order)."""
    if text.isascii() and text.isprintable():
        return text, []
    removed = [ord(c) for c in text if is_invisible(c)]
    if not removed:
        return text, []
    return "".join(c for c in text if not is_invisible(c)), removed


def clean_text(text: str) -> str:
    return strip_invisible(text)[0]


Removals = list[tuple[str, list[int]]]  # (where, code points removed)

#: Keys of schema objects whose string values the model reads as prose.
SCHEMA_TEXT = ("description", "title")


def visible_definition(definition: dict[str, Any]) -> tuple[dict[str, Any], Removals]:
    """A tool definition as the model will read it (invisible characters removed from its
    description and from the descriptions and titles in its schemas), and what was removed
    where (``description``, ``inputSchema.properties.word.description``)."""
    removals: Removals = []
    out = dict(definition)
    if isinstance(out.get("description"), str):
        out["description"] = _note(out["description"], "description", removals)
    for key in ("inputSchema", "outputSchema"):
        if key in out:
            out[key] = clean_schema(out[key], key, removals)
    return out, removals


def clean_schema(schema: Any, where: str = "", removals: Removals | None = None) -> Any:
    """``schema`` with invisible characters removed from every description and title,
    noting in ``removals`` what went where."""
    if isinstance(schema, dict):
        out: dict[str, Any] = {}
        for k, v in schema.items():
            path = f"{where}.{k}" if where else str(k)
            if k in SCHEMA_TEXT and isinstance(v, str):
                out[k] = _note(v, path, removals)
            else:
                out[k] = clean_schema(v, path, removals)
        return out
    if isinstance(schema, list):
        return [clean_schema(v, f"{where}[{i}]", removals) for i, v in enumerate(schema)]
    return schema


def _note(text: str, where: str, removals: Removals | None) -> str:
    cleaned, removed = strip_invisible(text)
    if removed and removals is not None:
        removals.append((where, removed))
    return cleaned


def describe(removed: list[int]) -> str:
    """``removed 37 invisible characters (U+E0049, U+E0047, ...); as tag characters they
    spell "IGNORE ..."``: for a person deciding whether to approve."""
    kinds = list(dict.fromkeys(removed))
    named = ", ".join(f"U+{cp:04X}" for cp in kinds[:SHOWN_KINDS])
    if len(kinds) > SHOWN_KINDS:
        named += f", … {len(kinds) - SHOWN_KINDS} more kinds"
    plural = "s" if len(removed) != 1 else ""
    text = f"removed {len(removed)} invisible character{plural} ({named})"
    spelled = "".join(chr(cp - TAG_FIRST) for cp in removed if 0xE0020 <= cp <= 0xE007E)
    if spelled:
        cut = spelled[:SPELLED_MAX] + ("…" if len(spelled) > SPELLED_MAX else "")
        text += f"; as tag characters they spell {json.dumps(cut)}"
    return text
