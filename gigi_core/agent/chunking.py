"""Split long text into chunks under a limit on the most natural boundary available."""

from __future__ import annotations


def split_text(text: str, limit: int = 2000) -> list[str]:
    """Paragraphs first, then lines, then words; a single overlong word is cut hard."""
    if limit < 1:
        raise ValueError("limit must be positive")
    text = text.strip()
    if not text:
        return []
    chunks: list[str] = []
    rest = text
    while len(rest) > limit:
        window = rest[: limit + 1]
        cut = -1
        for sep in ("\n\n", "\n", " "):
            cut = window.rfind(sep, 0, limit)
            if cut > limit // 4:
                break
        if cut <= 0:
            cut = limit
            chunks.append(rest[:cut])
            rest = rest[cut:]
        else:
            chunks.append(rest[:cut].rstrip())
            rest = rest[cut:].lstrip()
    if rest:
        chunks.append(rest)
    return chunks
