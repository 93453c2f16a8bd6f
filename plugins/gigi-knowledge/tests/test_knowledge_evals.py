"""Runs the golden cases in ``evals/knowledge/*.json`` on both backends.

A case is a window of messages, what the scripted models answer per slot (classify,
extract, contradiction, summarise), optional steps (commands, jobs, ageing rows, a
retrieval, a context pack as an answer gets it) and the rows and results it must leave. A
message with ``"stale_cache": true`` is processed as by another process whose entity
cache has never heard of the guild's entities (the store decides dedup). JSON, not YAML, so ``gigi eval run
evals`` (the agent's cases) does not take these for its own.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from knowledge_helpers import JobCtx, enable, message, publish, rows

from gigi_core import Actor
from gigi_core.retrieval import Scope
from gigi_core.testing import RecordingPoster

CASES = sorted((Path(__file__).resolve().parents[3] / "evals" / "knowledge").glob("*.json"))


def _decode(value: Any) -> Any:
    if isinstance(value, str) and value[:1] in "[{":
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _matches(row: Any, want: dict[str, Any]) -> bool:
    data = row._mapping
    for key, expected in want.items():
        if key.endswith("__contains"):
            if expected not in str(_decode(data[key.removesuffix("__contains")])):
                return False
        elif _decode(data[key]) != expected:
            return False
    return True


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
async def test_golden_case(path: Path, kernel: Any, model: Any) -> None:
    case = json.loads(path.read_text())  # noqa: ASYNC240 (a small file, once per case)
    channels = frozenset(case.get("channels", {"c1": {}}))
    # A case's members read every channel of the case (personal mode asks the surface).
    members = {m.get("author", "u1") for m in case.get("messages", [])}
    members |= {
        s["retrieve"]["user"] for s in case.get("steps", []) if "user" in s.get("retrieve", {})
    }
    members |= {s["call"].get("actor", "admin") for s in case.get("steps", []) if "call" in s}
    poster = RecordingPoster(members={u: (Actor(id=u), channels) for u in members})
    kernel.outbox.register("test", poster)
    for channel, opts in case.get("channels", {"c1": {}}).items():
        await enable(kernel, channel, **opts)
    for slot, replies in case.get("replies", {}).items():
        model.on(slot, *replies)
    for slot, reply in case.get("always", {}).items():
        model.always(slot, reply)
    now = datetime.now(UTC)
    for m in case.get("messages", []):
        if m.get("stale_cache"):  # fresh for 60 s, and empty: as another process's
            import time

            kernel.gigi_knowledge.caches.entities["g1"] = (time.monotonic() + 60, {})
        await publish(
            kernel,
            message(
                m["text"],
                message_id=m["id"],
                author_id=m.get("author", "u1"),
                channel_id=m.get("channel", "c1"),
                mentioned_user_ids=tuple(m.get("mentions", ())),
                created_at=now - timedelta(minutes=m.get("minutes_ago", 0)),
            ),
        )
    for step in case.get("steps", []):
        await _step(kernel, step, poster)
    for table, wanted in case.get("expect", {}).get("rows", {}).items():
        found = await rows(kernel, f"knowledge_{table}")
        if isinstance(wanted, int):
            assert len(found) == wanted, (path.name, table, len(found))
            continue
        assert len(found) == len(wanted), (path.name, table, [r._mapping for r in found])
        for want in wanted:
            assert any(_matches(r, want) for r in found), (path.name, table, want)
    if "posts" in case.get("expect", {}):
        assert len(poster.posts) == case["expect"]["posts"], path.name


async def _step(kernel: Any, step: dict[str, Any], poster: RecordingPoster) -> None:
    if "call" in step:
        c = step["call"]
        actor = Actor(id=c.get("actor", "admin"), is_admin=c.get("actor", "admin") == "admin")
        outcome = await kernel.call_tool(
            f"knowledge.{c['action']}",
            c.get("args", {}),
            actor=actor,
            guild_id="g1",
            channel_id=c.get("channel", "c1"),
        )
        _subset(outcome.result, c.get("expect", {}), c["action"])
    elif "job" in step:
        await kernel.registry.jobs[step["job"]].fn(JobCtx(kernel), **step.get("payload", {}))
    elif "age" in step:
        a = step["age"]
        async with kernel.db.engine.begin() as conn:
            await conn.execute(
                sa.text(f"UPDATE knowledge_{a['table']} SET {a['column']} = {a['column']} - :ms"),
                {"ms": int(a["minutes"] * 60_000)},
            )
    elif "press" in step:
        p = step["press"]
        actor = Actor(id=p["actor"], is_admin=p["actor"] == "admin")
        await poster.press(kernel, p["post"], p["button"], actor)
    elif "retrieve" in step:
        from gigi_knowledge.search.retriever import KnowledgeRetriever

        r = step["retrieve"]
        scope = Scope("g1", frozenset(r.get("channels", [])), user_id=r.get("user"))
        hits = await KnowledgeRetriever(kernel).retrieve(r["query"], scope, 20)
        text = " ".join(h.text for h in hits)
        for needle in r.get("contains", []):
            assert needle in text, (needle, text)
        for needle in r.get("absent", []):
            assert needle not in text, (needle, text)
        assert all(scope.admits(h) for h in hits)
        if "kinds" in r:
            assert sorted({h.kind for h in hits}) == sorted(r["kinds"])
    elif "context" in step:
        from gigi_core.context import build_context

        c = step["context"]
        pack = await build_context(
            kernel,
            actor=Actor(id=c.get("user", "u1")),
            guild_id="g1",
            channel_id="c1",
            visible_channels=frozenset(c.get("channels", ["c1"])),
            text=c["query"],
            mode=c.get("mode", "auto"),
            use_model=False,
        )
        prompt = pack.prompt(c["query"]) if pack.answer is None else pack.answer
        headings = [ln[3:] for ln in prompt.splitlines() if ln.startswith("## ")]
        if "sections" in c:
            assert headings == c["sections"], headings
        for needle in c.get("contains", []):
            assert needle in prompt, (needle, prompt)
        assert pack.answer == c.get("answer"), (c["query"], pack.trace())
    else:
        raise AssertionError(f"unknown step {sorted(step)}")


def _subset(result: Any, expect: dict[str, Any], where: str) -> None:
    for key, value in expect.items():
        if key.endswith("__len"):
            assert len(result[key.removesuffix("__len")]) == value, (where, key, result)
        elif key.endswith("__contains"):
            assert value in json.dumps(result[key.removesuffix("__contains")]), (where, key, result)
        else:
            assert result[key] == value, (where, key, result)
