"""A server's own redaction rules: applied before indexing, sealing and embedding."""

from __future__ import annotations

import pytest
from gigi_memory.ingest.text import RedactionRules, check_pattern, redact
from memory_helpers import call, count, dump_text, embed_all, enable, message, publish

from gigi_core import ToolExecutionError


def test_rules_mask_by_kind_and_keep_tokens_always() -> None:
    text = "mail a@b.example, call +44 20 7946 0958, key sk-abcdefghijklmnopqrstu, ticket PRJ-1234"
    assert redact(text)[0] == "mail [email], call [phone], key [token], ticket PRJ-1234"
    loose = RedactionRules(emails=False, phones=False, patterns=(r"PRJ-\d{4}",))
    assert redact(text, loose)[0] == (
        "mail a@b.example, call +44 20 7946 0958, key [token], ticket [redacted]"
    )
    assert RedactionRules.from_json(loose.to_json()) == loose
    assert RedactionRules.from_json("not json") == RedactionRules()  # never fewer masks


@pytest.mark.parametrize(
    ("pattern", "why"),
    [
        ("(?=a)b", "RE2 cannot compile"),  # look-around
        (r"(a)\1", "RE2 cannot compile"),  # backreference
        ("(?x:(a|aa) +)$", "RE2 cannot compile"),  # verbose mode (issue 28)
        ("a++", "RE2 cannot compile"),  # possessive
        ("a{1001}", "RE2 cannot compile"),
        (r"\pL{1,80}x", "too large for RE2"),
        (r"\C", "any byte"),
        ("[", "RE2 cannot compile"),
        ("a*", "matches empty text"),
        (r"\b", "matches empty text"),
        ("x" * 201, "at most 200"),
    ],
)
def test_unsupported_or_useless_patterns_are_refused(pattern, why) -> None:
    assert why in (check_pattern(pattern) or "")


@pytest.mark.parametrize(
    "pattern",
    [r"PRJ-\d{4}", r"\(x\)+", r"ticket-\d+", "(a+)+", r"\w+\w+!", "(a|a)*b", "colou?r"],
)
def test_accepted_patterns_stay_fast_on_crafted_messages(pattern) -> None:
    """RE2 has no backtracking: what was refused as exponential before is linear now."""
    assert check_pattern(pattern) is None
    rules = RedactionRules(emails=False, phones=False, patterns=(pattern,))
    for text in ("a" * 4000, "a" * 3999 + "!", "1" * 4000):
        redact(text, rules)


async def test_a_servers_pattern_is_masked_before_anything_is_stored(kernel) -> None:
    await enable(kernel)
    result = await call(kernel, "policy", redact_add=r"PRJ-[a-z]{4}")
    assert result["policy"]["redaction"]["patterns"] == [r"PRJ-[a-z]{4}"]
    await publish(kernel, message("the canary ticket PRJ-zqxw is done"))
    await embed_all(kernel)
    stored = await dump_text(kernel)  # the ledger, full text, sealed text and segments
    assert "zqxw" not in stored and "canary ticket" in stored
    assert await count(kernel, text="ticket") == 1
    (hit,) = (await call(kernel, "search", query="ticket"))["hits"]
    assert hit["snippet"] == "the canary ticket [redacted] is done"
    with pytest.raises(ToolExecutionError, match="RE2 cannot compile"):
        await call(kernel, "policy", redact_add="(?=a)b")
    with pytest.raises(ToolExecutionError, match="no such pattern"):
        await call(kernel, "policy", redact_remove="nope")
    await call(kernel, "policy", redact_remove=r"PRJ-[a-z]{4}", redact_emails=False)
    await publish(kernel, message("PRJ-abcd from a@b.example"))
    assert await count(kernel, text="abcd") == 1  # new rules apply from now on
    assert await count(kernel, text="example") == 1  # e-mails no longer masked
    assert await count(kernel, text="zqxw") == 0  # what was masked stays masked
