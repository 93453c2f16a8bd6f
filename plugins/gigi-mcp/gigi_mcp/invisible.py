"""Characters a person does not see but a model reads, in a server's tool text.

Tag characters (U+E0000-E007F) spell ASCII invisibly, variation selectors can encode bytes,
and format and control characters (joiners, bidi overrides, soft hyphens, byte-order marks)
hide or reorder text. A description carrying any of them could tell the model something the
approving operator never read, so they are removed from every text the model reads as prose
(the description; in schemas every description, title, ``$comment``, default and example)
and the approval diff lists what went. Newlines and tabs stay.

Everywhere else in a definition a string is exact: the tool's name, property names, enum and
const values, patterns, ``required`` entries. Removing characters there would change what
the tool accepts, and keeping them would pass hidden text on, so such a tool is refused
(``Visible.refusals``): quarantined with the field and the characters named.
"""

from __future__ import annotations

import json
import re
import unicodedata
from dataclasses import dataclass, field
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

#: Schema keywords whose values (at any depth) the model reads as prose: cleaned.
SCHEMA_PROSE = frozenset({"description", "title", "$comment", "default", "examples"})
#: Schema keywords whose values (at any depth) are matched exactly: never cleaned.
SCHEMA_EXACT = frozenset({"enum", "const"})
#: Schema keywords that map names to schemas (or, for dependentRequired, to name lists).
SCHEMA_NAMES = frozenset(
    {"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"}
    | {"dependentRequired"}
)
_PLAIN_KEY = re.compile(r"[\w$@-]{1,80}")


@dataclass
class Found:
    """What reading a definition found: texts cleaned, and exact strings that could not be."""

    removals: Removals = field(default_factory=list)
    refusals: list[tuple[str, str, list[int]]] = field(default_factory=list)  # where, what, cps

    def reason(self) -> str | None:
        """Why the tool is refused, naming the first field (None: it is not)."""
        if not self.refusals:
            return None
        where, what, cps = self.refusals[0]
        more = len(self.refusals) - 1
        return refusal(where, what, cps) + (f" (and {more} more such fields)" if more else "")


def refusal(where: str, what: str, removed: list[int]) -> str:
    """``inputSchema.properties.word: its name holds 3 invisible characters (...)...``."""
    return f"{where}: {why_refused(what, removed)}"


def why_refused(what: str, removed: list[int]) -> str:
    return (
        f"its {what} holds {_named(removed)}, which Gigi cannot remove without changing what "
        f"the tool accepts; the server must drop them (approving does not help){_spelled(removed)}"
    )


def visible_definition(definition: dict[str, Any]) -> tuple[dict[str, Any], Found]:
    """A tool definition as the model will read it (invisible characters removed from its
    prose), and what was found where (``inputSchema.properties.word.description``): the
    texts cleaned and the exact strings (names, enum values) that refuse the tool."""
    found = Found()
    out = dict(definition)
    if isinstance(out.get("name"), str):
        out["name"] = _exact(out["name"], "name", found)
    if isinstance(out.get("description"), str):
        out["description"] = _prose(out["description"], "description", found)
    for key in ("inputSchema", "outputSchema"):
        if key in out:
            out[key] = _schema(out[key], key, found)
    return out, found


def _join(where: str, key: str) -> str:
    part = key if _PLAIN_KEY.fullmatch(key) else json.dumps(key[:80], ensure_ascii=False)
    return f"{where}.{part}" if where else part


def _schema(node: Any, where: str, found: Found) -> Any:
    """A schema: each keyword read by what its value is to the model and to the server."""
    if isinstance(node, list):  # allOf, prefixItems, type lists, required ...
        return [_schema(v, f"{where}[{i}]", found) for i, v in enumerate(node)]
    if not isinstance(node, dict):
        return _exact(node, where, found)
    out: dict[str, Any] = {}
    for k, v in node.items():
        key = _exact(k, where, found, what="name", key=True)
        path = _join(where, key)
        if k in SCHEMA_PROSE:
            out[key] = _prose(v, path, found)
        elif k in SCHEMA_EXACT:
            out[key] = _exact(v, path, found)
        elif k in SCHEMA_NAMES and isinstance(v, dict):
            named: dict[str, Any] = {}
            for name, sub in v.items():
                shown = _exact(name, path, found, what="name", key=True)
                named[shown] = _schema(sub, _join(path, shown), found)
            out[key] = named
        else:
            out[key] = _schema(v, path, found)
    return out


def _prose(node: Any, where: str, found: Found) -> Any:
    """Text only the model reads: every string and key cleaned, at any depth."""
    if isinstance(node, str):
        cleaned, removed = strip_invisible(node)
        if removed:
            found.removals.append((where, removed))
        return cleaned
    if isinstance(node, list):
        return [_prose(v, f"{where}[{i}]", found) for i, v in enumerate(node)]
    if isinstance(node, dict):
        out: dict[str, Any] = {}
        for k, v in node.items():
            key = _prose(k, f"{where} (a key)", found)
            out[key] = _prose(v, _join(where, key), found)
        return out
    return node


def _exact(node: Any, where: str, found: Found, *, what: str = "value", key: bool = False) -> Any:
    """A string matched exactly (any depth): its invisible characters refuse the tool; the
    cleaned copy returned is for display only. ``key``: the name is its own place."""
    if isinstance(node, str):
        cleaned, removed = strip_invisible(node)
        if removed:
            place = _join(where, cleaned) if key else where
            found.refusals.append((place, what, removed))
        return cleaned
    if isinstance(node, list):
        return [_exact(v, f"{where}[{i}]", found) for i, v in enumerate(node)]
    if isinstance(node, dict):
        out: dict[str, Any] = {}
        for k, v in node.items():
            name = _exact(k, where, found, what="name", key=True)
            out[name] = _exact(v, _join(where, name), found)
        return out
    return node


def describe(removed: list[int]) -> str:
    """``removed 37 invisible characters (U+E0049, U+E0047, ...); as tag characters they
    spell "IGNORE ..."``: for a person deciding whether to approve."""
    return f"removed {_named(removed)}{_spelled(removed)}"


def _named(removed: list[int]) -> str:
    """``37 invisible characters (U+E0049, U+E0047, ...)``."""
    kinds = list(dict.fromkeys(removed))
    named = ", ".join(f"U+{cp:04X}" for cp in kinds[:SHOWN_KINDS])
    if len(kinds) > SHOWN_KINDS:
        named += f", … {len(kinds) - SHOWN_KINDS} more kinds"
    plural = "s" if len(removed) != 1 else ""
    return f"{len(removed)} invisible character{plural} ({named})"


def _spelled(removed: list[int]) -> str:
    """``; as tag characters they spell "IGNORE ..."`` when tag characters spell something."""
    spelled = "".join(chr(cp - TAG_FIRST) for cp in removed if 0xE0020 <= cp <= 0xE007E)
    if not spelled:
        return ""
    cut = spelled[:SPELLED_MAX] + ("…" if len(spelled) > SPELLED_MAX else "")
    return f"; as tag characters they spell {json.dumps(cut)}"
