"""The public API for surfaces (chat front-ends): requests in, replies out, commands to render.

A surface plugin (``gigi-discord``, the console, yours) imports from here and from
``gigi_core.events``; never from the kernel's inner modules, which may change.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gigi_core.llm.lazy import lazy_exports

if TYPE_CHECKING:
    from gigi_core.agent.chunking import cap_text, split_text
    from gigi_core.agent.confirmations import ConfirmationError
    from gigi_core.agent.contracts import (
        Budgets,
        ChannelCheck,
        Citation,
        ConfirmationPrompt,
        Persona,
        Reply,
        Request,
        RequestKind,
    )
    from gigi_core.agent.render import followed_job, reply_chunks, run_footer, trace_lines
    from gigi_core.agent.vision import AttachedImage, ImagesNotAccepted
    from gigi_core.commands import (
        CommandSpec,
        CommandTable,
        OptionSpec,
        parse_arguments,
        usage,
    )
    from gigi_core.policy.actor import Actor
    from gigi_core.store.shards import ShardBeat, ShardLeases
    from gigi_core.tools.context import ChannelLister

_LAZY = {
    "Actor": "gigi_core.policy.actor",
    "AttachedImage": "gigi_core.agent.vision",
    "ImagesNotAccepted": "gigi_core.agent.vision",
    "Budgets": "gigi_core.agent.contracts",
    "ChannelCheck": "gigi_core.agent.contracts",
    "ChannelLister": "gigi_core.tools.context",
    "Citation": "gigi_core.agent.contracts",
    "ConfirmationPrompt": "gigi_core.agent.contracts",
    "Persona": "gigi_core.agent.contracts",
    "Reply": "gigi_core.agent.contracts",
    "Request": "gigi_core.agent.contracts",
    "RequestKind": "gigi_core.agent.contracts",
    "ConfirmationError": "gigi_core.agent.confirmations",
    "split_text": "gigi_core.agent.chunking",
    "cap_text": "gigi_core.agent.chunking",
    "reply_chunks": "gigi_core.agent.render",
    "run_footer": "gigi_core.agent.render",
    "trace_lines": "gigi_core.agent.render",
    "followed_job": "gigi_core.agent.render",
    "CommandSpec": "gigi_core.commands",
    "CommandTable": "gigi_core.commands",
    "OptionSpec": "gigi_core.commands",
    "parse_arguments": "gigi_core.commands",
    "usage": "gigi_core.commands",
    # Gateway shards shared by several processes through the database (docs/deploying.md).
    "ShardLeases": "gigi_core.store.shards",
    "ShardBeat": "gigi_core.store.shards",
}

__all__ = [
    "Actor",
    "AttachedImage",
    "Budgets",
    "ChannelCheck",
    "ChannelLister",
    "Citation",
    "CommandSpec",
    "CommandTable",
    "ConfirmationError",
    "ConfirmationPrompt",
    "ImagesNotAccepted",
    "OptionSpec",
    "Persona",
    "Reply",
    "Request",
    "RequestKind",
    "ShardBeat",
    "ShardLeases",
    "cap_text",
    "followed_job",
    "parse_arguments",
    "reply_chunks",
    "run_footer",
    "split_text",
    "trace_lines",
    "usage",
]


__getattr__ = lazy_exports("gigi_core.surfaces", _LAZY)
