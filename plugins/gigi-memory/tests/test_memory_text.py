"""Redaction and search words (pure functions: no database)."""

from __future__ import annotations

import pytest
from gigi_memory.ingest.text import query_words, redact, search_text, words


@pytest.mark.parametrize(
    ("text", "masked"),
    [
        ("sk-proj-abcdefghijklmnopqrstuvwx", "[token]"),
        ("ghp_" + "a1" * 18, "[token]"),
        ("MTIzNDU2Nzg5MDEyMzQ1Njc4.GabcDE.abcdefghijklmnopqrstuvwxyz12345", "[token]"),
        ("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N", "[token]"),
        ("0123456789abcdef0123456789abcdef", "[token]"),
        ("someone.else+tag@mail.example.org", "[email]"),
        ("+49 30 1234 5678", "[phone]"),
        ("(212) 555-0199", "[phone]"),
        ("api_key=abcdef123456", "api_key=[secret]"),
    ],
)
def test_secret_shapes_are_masked(text, masked) -> None:
    assert redact(f"x {text} y") == (f"x {masked} y", 1)


@pytest.mark.parametrize(
    "text",
    [
        "2026-01-31",
        "12:30",
        "3.14159265",
        "192.168.100.200",
        "id 123456789012345678",
        "v1.2.3",
        "call me maybe",
        "version 2024.1",
    ],
)
def test_ordinary_text_is_left_alone(text) -> None:
    assert redact(text) == (text, 0)


def test_words_are_the_same_for_messages_and_queries() -> None:
    assert words("Hello, <@123> WORLD! 🎉 <#9> <:party:77>") == ["hello", "world"]
    assert search_text("straße Straße") == "strasse strasse"
    assert words("ab\u200bc\u00adde") == ["abcde"]
    assert words("数据库") == ["数", "据", "库"]
    assert words("नमस्ते") == ["नमस्ते"]  # vowel signs stay inside the word
    assert len(words("x" * 500)[0]) == 100
    assert query_words("mail bob@example.com") == ["mail"]  # masked in queries too
    assert words("") == [] and words("🎉 !!! ...") == []
