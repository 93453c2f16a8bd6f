"""Extract-and-forget, checked: after canary messages go through the pipeline — with a
well-behaved model and with one that echoes its input — no run of their words is in any
table of the store (the kernel's included) nor in any log record."""

from __future__ import annotations

import logging
import re
from typing import Any

import pytest
from knowledge_fakes import classify, decision, entity, extraction, signal
from knowledge_helpers import all_tables_text, call, enable, message, publish

CANARIES = [
    "the quokka canary ledger says zanzibar ninety seven",
    "please remember the quokka canary password is tangerine forty two",
]
TOKENS = ("quokka", "zanzibar", "tangerine")


def echo_extraction(request: Any) -> dict[str, Any]:
    """A model that copies the window's messages into every field it can."""
    prompt = request.messages[-1].content
    ids = re.findall(r"\[id=(\d+)", prompt)
    texts = re.findall(r'\] "(.*)"$', prompt, flags=re.M)
    return extraction(
        decisions=[decision(t, ids, rationale=t) for t in texts],
        signals=[signal(t, ids) for t in texts],
        entities=[entity("Ledger", ids)],
    )


async def _run(kernel: Any, model: Any) -> None:
    await enable(kernel)
    model.always("classify", classify())
    model.on(
        "extract",
        extraction(
            decisions=[decision("A ledger choice was made", ["0"])],  # cites nothing in the window
            signals=[signal("Someone shared a credential in the channel", ["0"])],
        ),
    )
    model.always("extract", echo_extraction)
    model.always(
        "summarise", {"summary": "Routine activity; one ledger note.", "sentiment": "routine"}
    )
    for text in CANARIES:
        await publish(kernel, message(text))
    await call(kernel, "catchup")


async def test_no_message_text_in_any_table_or_log(
    kernel: Any, model: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    await _run(kernel, model)
    stored = (await all_tables_text(kernel)).lower()
    for text in CANARIES:
        words = text.split()
        for i in range(len(words) - 5):
            assert " ".join(words[i : i + 6]) not in stored
    for token in TOKENS:
        assert token not in stored, token
    logged = "\n".join(r.getMessage() + " " + str(r.args) for r in caplog.records).lower()
    for token in TOKENS:
        assert token not in logged, token
    # The pipeline did run: the echoing items were refused, the generic entity kept.
    assert "Ledger" in await all_tables_text(kernel)
    assert len(model.calls("extract")) == 2
