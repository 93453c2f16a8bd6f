"""``<think>…</think>`` in the content of reasoning models served OpenAI-style.

vLLM, Ollama, llama.cpp, Groq and others serve DeepSeek-R1, Qwen3 and their kin with
the model's thoughts inside the answer text; they belong in ``reasoning``, never in
front of users.
"""

from __future__ import annotations

from gigi_core.llm import join_text

THINK_OPEN = "<think>"
THINK_CLOSE = "</think>"


def split_think(text: str | None) -> tuple[str | None, str | None]:
    """``(answer, reasoning)``: leading ``<think>…</think>`` blocks move to reasoning.

    Reasoning models served through OpenAI-compatible endpoints put their thoughts in
    the content. Handled: one or more leading blocks; a closing tag with no opening one
    (the chat template put ``<think>`` in the prompt); an opening tag never closed
    (the reply ran out of tokens while thinking: all of it is reasoning). A tag in the
    middle of prose is left alone.
    """
    if not text:
        return text or None, None
    thoughts: list[str] = []
    rest = text
    head = rest.lstrip()
    if not head.startswith(THINK_OPEN):
        close = rest.find(THINK_CLOSE)
        if close == -1 or THINK_OPEN in rest[:close]:
            return text, None
        thoughts.append(rest[:close])
        rest = rest[close + len(THINK_CLOSE) :]
        head = rest.lstrip()
    while head.startswith(THINK_OPEN):
        body = head[len(THINK_OPEN) :]
        close = body.find(THINK_CLOSE)
        if close == -1:
            thoughts.append(body)
            rest = ""
            break
        thoughts.append(body[:close])
        rest = body[close + len(THINK_CLOSE) :]
        head = rest.lstrip()
    reasoning = join_text((t.strip() for t in thoughts), "\n\n")
    return rest.strip() or None, reasoning
