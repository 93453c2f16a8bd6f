"""Extract-and-forget against a model that disguises its copies (issue 28, item 1): a run of
a message's words with a zero-width character inside each word, in fullwidth letters,
split over several tags of one row, glued without spaces, or joined by tier 1's light note
from three entity names, is still a copy and never reaches a table."""

from __future__ import annotations

import unicodedata
from typing import Any

from knowledge_fakes import action, classify, decision, entity, extraction, signal
from knowledge_helpers import all_tables_text, enable, message, publish, rows

CANARY = "the quokka canary ledger says zanzibar ninety seven pounds tomorrow at noon sharp"
WORDS = CANARY.split()


def zero_width(text: str) -> str:
    """A zero-width space inside every word: ``q\u200buokka``."""
    return " ".join(w[:1] + "\u200b" + w[1:] for w in text.split())


def fullwidth(text: str) -> str:
    return "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else "\u3000" for c in text)


def _plain(stored: str) -> str:
    """An independent reading of what is stored: compatibility forms folded, format
    characters dropped, every other non-letter a space."""
    folded = unicodedata.normalize("NFKC", stored).casefold()
    kept = "".join(c for c in folded if unicodedata.category(c) != "Cf")
    return " ".join("".join(c if c.isalnum() else " " for c in kept).split())


def leaked_runs(stored: str) -> list[str]:
    plain = _plain(stored)
    squashed = plain.replace(" ", "")
    runs = [" ".join(WORDS[i : i + 6]) for i in range(len(WORDS) - 5)]
    return [r for r in runs if r in plain or r.replace(" ", "") in squashed]


def test_normalised_text_folds_the_disguises() -> None:
    from gigi_knowledge.extract.verbatim import VerbatimGuard, normalise

    assert normalise(zero_width(CANARY)) == CANARY
    assert normalise(fullwidth(CANARY)) == CANARY
    assert normalise("The\u00adQuokka\u2060 CANARY_ledger") == "thequokka canary ledger"
    guard = VerbatimGuard([CANARY])
    assert guard.copies(zero_width(CANARY))
    assert guard.copies(fullwidth("quokka canary ledger says zanzibar ninety"))
    assert guard.copies("quokkacanaryledgersayszanzibarninety")
    assert guard.copies_row("A ledger note", ["the quokka canary", "ledger says zanzibar"])
    assert not guard.copies_row("A ledger note", ["quokka", "zanzibar"])
    assert not guard.copies("A figure for the ledger was shared before noon")


async def test_disguised_copies_in_extracted_rows_are_not_stored(kernel: Any, model: Any) -> None:
    await enable(kernel)
    m = message(CANARY)
    ids = [m.message_id]
    model.on("classify", classify(high=True))
    model.on(
        "extract",
        extraction(
            decisions=[
                decision(zero_width(CANARY), ids),
                decision(
                    "A ledger figure was agreed",
                    ids,
                    tags=["the quokka canary", "ledger says zanzibar", "ninety seven pounds"],
                ),
                decision("A second ledger figure", ids, rationale=fullwidth(CANARY)),
            ],
            signals=[signal(fullwidth(CANARY), ids), signal(CANARY.replace(" ", ""), ids)],
            actions=[action(zero_width(" ".join(WORDS[3:10])), ids)],
            entities=[
                entity(
                    "Ledger",
                    ids,
                    aliases=["the quokka canary ledger", "says zanzibar ninety seven"],
                )
            ],
        ),
    )
    await publish(kernel, m)
    stored = await all_tables_text(kernel)
    assert leaked_runs(stored) == []
    # What did not copy was kept: the synthesised decisions (without the tags and
    # rationale that together copied the message) and the entity (without its aliases).
    summaries = sorted(d.summary for d in await rows(kernel, "knowledge_decisions"))
    assert summaries == ["A ledger figure was agreed", "A second ledger figure"]
    for d in await rows(kernel, "knowledge_decisions"):
        assert d.rationale is None and d.tags in ([], "[]")
    (e,) = await rows(kernel, "knowledge_entities")
    assert e.name == "Ledger" and e.aliases in ([], "[]")


async def test_the_light_note_never_joins_names_into_a_copy(kernel: Any, model: Any) -> None:
    await enable(kernel)
    m = message(CANARY)
    names = [" ".join(WORDS[0:5]), " ".join(WORDS[5:10]), " ".join(WORDS[10:15])]
    model.on(
        "classify",
        classify(high=False, categories=["question"], entities=names),
    )
    await publish(kernel, m)
    (note,) = await rows(kernel, "knowledge_signals")
    assert note.signal_type == "question"
    assert note.summary.startswith("A question came up")
    assert leaked_runs(await all_tables_text(kernel)) == []


# Issue 28, item 5: one copied token (a key, an invite, a URL) is a copy too.
SECRET = "Xk29fjA8dk3jf9sk2jdkQ7"
SECRET_MESSAGE = (
    f"Staging DB credential: {SECRET} (rotate it Friday), invite https://discord.gg/qK7aBzXyw "
    "and the internationalization notes are at https://wiki.example.com/i18n/setup"
)


def test_one_copied_key_url_or_invite_is_a_copy() -> None:
    from gigi_knowledge.extract.verbatim import VerbatimGuard

    guard = VerbatimGuard([SECRET_MESSAGE])
    assert guard.copies(f"Staging DB credential: {SECRET}")
    assert guard.copies(f"the key is {SECRET.lower()}")
    assert guard.copies("key " + " ".join(SECRET[i : i + 4] for i in range(0, len(SECRET), 4)))
    assert guard.copies(zero_width(SECRET))
    assert guard.copies("Invite link: discord.gg/qK7aBzXyw")
    assert guard.copies("Setup notes live at wiki.example.com/i18n/setup")


def test_ordinary_long_words_are_not_copies() -> None:
    """Long words without digits, and bare host names, are language, not secrets."""
    from gigi_knowledge.extract.verbatim import VerbatimGuard

    guard = VerbatimGuard(
        [
            SECRET_MESSAGE,
            "The internationalization and counterrevolutionary work, see https://github.com",
        ]
    )
    assert not guard.copies("Internationalization work was planned")
    assert not guard.copies("Counterrevolutionary internationalization")
    assert not guard.copies("The team rotates the staging credential on Friday")
    assert not guard.copies("The project is hosted on github.com")


async def test_a_copied_key_never_reaches_a_table(kernel: Any, model: Any) -> None:
    await enable(kernel)
    m = message(SECRET_MESSAGE)
    ids = [m.message_id]
    model.on("classify", classify(high=True))
    model.on(
        "extract",
        extraction(
            decisions=[
                decision(f"Staging DB credential: {SECRET}", ids),
                decision("The staging credential rotates on Friday", ids, tags=[SECRET]),
            ],
            signals=[signal("Invite posted: discord.gg/qK7aBzXyw", ids)],
            entities=[entity("Staging DB", ids, aliases=[SECRET])],
        ),
    )
    await publish(kernel, m)
    stored = await all_tables_text(kernel)
    assert SECRET.casefold() not in stored.casefold()
    assert "qk7abzxyw" not in stored.casefold()
    summaries = [d.summary for d in await rows(kernel, "knowledge_decisions")]
    assert summaries == ["The staging credential rotates on Friday"]
    (e,) = await rows(kernel, "knowledge_entities")
    assert e.name == "Staging DB" and e.aliases in ([], "[]")
