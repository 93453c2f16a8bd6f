"""Gigi's conversation to Anthropic ``messages``: content blocks, strict alternation, echoes.

Anthropic wants user and assistant turns alternating, tool results as ``tool_result``
blocks in a user turn (before any text), and the previous assistant turn's thinking
blocks sent back unchanged; this module is where those rules live.
"""

from __future__ import annotations

import json
from typing import Any

from gigi_core.llm import (
    AssistantMessage,
    ContentPart,
    ImagePart,
    Message,
    SystemMessage,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)

#: ``provider_data`` key holding the reply's content blocks verbatim (thinking, signatures).
CONTENT_KEY = "anthropic_content"
#: ``provider_data`` key: index (in the verbatim content) of the structured-output tool_use.
OUTPUT_TOOL_KEY = "anthropic_output_block"

Block = dict[str, Any]


def image_block(part: ImagePart) -> Block:
    """A ``data:`` URL becomes a base64 source, anything else a URL source."""
    inline = part.inline_data()
    if inline is not None:
        media_type, data = inline
        return {
            "type": "image",
            "source": {"type": "base64", "media_type": media_type, "data": data},
        }
    return {"type": "image", "source": {"type": "url", "url": part.url}}


def _part_block(part: ContentPart) -> Block:
    if isinstance(part, ImagePart):
        return image_block(part)
    return {"type": "text", "text": part.text}


def tool_use_block(call: ToolCall) -> Block:
    """A call as Anthropic saw it; a call that failed to parse is echoed with ``{}``.

    The API only accepts an object as ``input``; the parse error itself reaches the model
    through the ``tool_result`` (``is_error``) the runtime sends for that call.
    """
    return {
        "type": "tool_use",
        "id": call.id,
        "name": call.name,
        "input": call.arguments if call.arguments is not None else {},
    }


def assistant_blocks(message: AssistantMessage) -> list[Block]:
    """The assistant turn to send back: verbatim blocks when we have them, else rebuilt.

    Verbatim blocks keep thinking (with its signature), redacted thinking and server
    tool blocks byte-for-byte; only ``tool_use`` blocks are rewritten from
    ``tool_calls`` (in order) so ids Gigi generated match the tool results.
    """
    stored = message.provider_data.get(CONTENT_KEY)
    if not isinstance(stored, list) or not all(isinstance(b, dict) for b in stored):
        blocks: list[Block] = []
        if message.content:
            blocks.append({"type": "text", "text": message.content})
        blocks.extend(tool_use_block(call) for call in message.tool_calls)
        return blocks
    output_index = message.provider_data.get(OUTPUT_TOOL_KEY)
    calls = iter(message.tool_calls)
    blocks = []
    for index, block in enumerate(stored):
        if block.get("type") != "tool_use":
            blocks.append(block)
        elif index == output_index:
            # a structured answer has no tool result to pair with: send it as text
            blocks.append({"type": "text", "text": json.dumps(block.get("input"))})
        else:
            call = next(calls, None)
            if call is not None:
                blocks.append(tool_use_block(call))
    blocks.extend(tool_use_block(call) for call in calls)
    return blocks


def _blocks(message: Message) -> tuple[str, list[Block]]:
    if isinstance(message, UserMessage):
        if isinstance(message.content, str):
            return "user", [{"type": "text", "text": message.content}]
        return "user", [_part_block(part) for part in message.content]
    if isinstance(message, AssistantMessage):
        return "assistant", assistant_blocks(message)
    if isinstance(message, ToolResultMessage):
        block: Block = {
            "type": "tool_result",
            "tool_use_id": message.tool_call_id,
            "content": message.content,
        }
        if message.is_error:
            block["is_error"] = True
        return "user", [block]
    assert isinstance(message, SystemMessage)
    return "system", []  # hoisted to the top-level ``system`` by the caller


def _collapse(blocks: list[Block]) -> str | list[Block]:
    """A lone plain text block reads better (and is equivalent) as a string."""
    if len(blocks) == 1 and set(blocks[0]) == {"type", "text"} and blocks[0]["type"] == "text":
        return blocks[0]["text"]
    return blocks


def wire_messages(conversation: list[Message]) -> list[dict[str, Any]]:
    """Alternating ``messages``: same-role neighbours merged, tool results first in a turn.

    Consecutive tool results become one user turn; a user message right after them
    joins that turn after the results. Empty turns (an assistant turn with nothing in
    it) are dropped, as the API rejects them.
    """
    turns: list[tuple[str, list[Block]]] = []
    for message in conversation:
        role, blocks = _blocks(message)
        if role == "system" or not blocks:
            continue
        if turns and turns[-1][0] == role:
            turns[-1][1].extend(blocks)
        else:
            turns.append((role, list(blocks)))
    wire: list[dict[str, Any]] = []
    for role, blocks in turns:
        if role == "user":
            results = [b for b in blocks if b.get("type") == "tool_result"]
            blocks = results + [b for b in blocks if b.get("type") != "tool_result"]
        wire.append({"role": role, "content": _collapse(blocks)})
    return wire
