"""The reply splitter is linear, and a model's flood of text is capped with a note.

(The splitter lives in ``gigi_core.agent.chunking``; it is tested here with the other
defences against providers that flood.)
"""

from __future__ import annotations

import random
import time

import pytest

from gigi_core.agent.chunking import REPLY_MAX_CHARS_ENV, cap_text, reply_max_chars, split_text
from gigi_core.agent.contracts import Reply
from gigi_core.errors import ConfigError


def reference_split(text: str, limit: int = 2000) -> list[str]:
    """The previous (quadratic) implementation: the new one must cut at the same places."""
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


def random_text(rng: random.Random, size: int) -> str:
    pieces = []
    while sum(map(len, pieces)) < size:
        word = "".join(rng.choice("abcdefgh") for _ in range(rng.choice([1, 3, 8, 40, 300])))
        pieces.append(word + rng.choice([" ", " ", " ", "\n", "\n\n", "  \n ", ""]))
    return "".join(pieces)


@pytest.mark.parametrize("seed", range(40))
def test_cuts_match_the_previous_splitter(seed: int) -> None:
    rng = random.Random(seed)
    limit = rng.choice([5, 17, 100, 2000])
    text = random_text(rng, rng.choice([10, 500, 5000, 30_000]))
    assert split_text(text, limit, max_chars=0) == reference_split(text, limit)


def test_splitting_is_linear(monkeypatch: pytest.MonkeyPatch) -> None:
    """16 MB of words: the old splitter copied the rest per chunk (seconds on the event loop)."""
    monkeypatch.setenv(REPLY_MAX_CHARS_ENV, "0")  # no cap: measure the splitter alone
    text = "lorem ipsum dolor sit amet " * 600_000
    started = time.perf_counter()
    chunks = split_text(text, 2000)
    elapsed = time.perf_counter() - started
    assert len(chunks) > 8000 and all(len(c) <= 2000 for c in chunks)
    assert elapsed < 1.5, f"splitting 16 MB took {elapsed:.2f} s"


def test_a_long_run_of_whitespace_is_skipped_in_linear_time() -> None:
    text = "a" * 3000 + " " * 5_000_000 + "b"
    started = time.perf_counter()
    assert split_text(text, 2000, max_chars=0) == ["a" * 2000, "a" * 1000, "b"]
    assert time.perf_counter() - started < 1.0


def test_a_flood_is_capped_with_a_note() -> None:
    flood = "word " * 4_000_000  # 20 MB: ten thousand Discord messages uncapped
    chunks = Reply(text=flood).chunks()
    assert len(chunks) <= reply_max_chars() // 2000 + 1
    assert "answer was cut" in chunks[-1]
    assert sum(map(len, chunks)) <= reply_max_chars() + 10 * len(chunks)


def test_the_cap_is_a_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(REPLY_MAX_CHARS_ENV, "5000")
    capped = cap_text("paragraph one.\n\n" + "x " * 10_000)
    assert capped.truncated and len(capped.text) <= 5000
    assert capped.total_chars == len("paragraph one.\n\n" + "x " * 10_000)
    assert capped.text.endswith(
        f"(answer was cut: {capped.shown_chars:,} of 20,016 characters shown)"
    )
    assert len(split_text("y " * 10_000)) == 3
    monkeypatch.setenv(REPLY_MAX_CHARS_ENV, "0")
    assert not cap_text("y " * 10_000).truncated


def test_short_answers_are_untouched() -> None:
    capped = cap_text("hello", 1000)
    assert (capped.text, capped.truncated, capped.shown_chars) == ("hello", False, 5)


def test_an_open_code_block_is_closed_before_the_note() -> None:
    text = "Here:\n```python\n" + "print('x')\n" * 2000 + "```\n"
    capped = cap_text(text, 1000)
    body, _, note = capped.text.rpartition("\n\n")
    assert body.count("```") == 2 and body.endswith("```") and "cut" in note
    assert len(capped.text) <= 1000


@pytest.mark.parametrize("value", ["lots", "-1", "1.5", "50"])
def test_invalid_cap_names_the_variable(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv(REPLY_MAX_CHARS_ENV, value)
    with pytest.raises(ConfigError) as caught:
        reply_max_chars()
    assert REPLY_MAX_CHARS_ENV in str(caught.value) and repr(value) in str(caught.value)
