"""Generate the seeded guild of the retrieval eval: ``python evals/retrieval/generate.py``.

Writes ``seeded_guild.ryaml`` (YAML; not ``.yaml`` so ``gigi eval run evals``, which runs
agent golden cases, does not collect it). Everything comes from templates below and one
``random.Random(2026)``, so the file is reproducible and its expected ids are known by
construction. What it holds, over 90 days in four channels:

- facts: a decision, an action or an incident about one entity (Postgres, Redis, ...),
  each asked about by one question that paraphrases it (the entity and a word or two in
  common) and often names a time ("last week") matching when it was said;
- echoes: an older message about the same entity sharing more of the question's words
  than the fact does (they fool a path that only matches words);
- entity noise: other messages about the same entity near the same time (they fool a
  path that only matches entities and time);
- word noise: messages that share the fact's verbs and nouns about something else (they
  fool a path that only matches words);
- filler chat.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)  # a Tuesday
CHANNELS = ("design", "ops", "release", "random")
PEOPLE = ("Ana", "Ben", "Chloe", "Dev", "Eli")
ENTITIES = ("Postgres", "Redis", "Kafka", "Grafana", "Terraform", "Nginx", "Sentry", "Vault")
FACTS = (
    # (fact, question, echo): {p} person, {e} entity, {v} a number, {t} the time phrase.
    # Questions paraphrase: they share the entity and one or two words with the fact. The
    # echo is an older message about the same entity that shares more of the question's
    # words than the fact does (it fools a path that only matches words).
    ("{p} will upgrade {e} to version {v} before the launch",
     "who is doing the {e} version bump {t}",
     "old notes on the {e} version bump from the previous cluster"),
    ("we decided to move {e} to the managed cluster in region {v}",
     "where are we moving {e} hosting {t}",
     "{e} hosting: moving it was discussed and parked"),
    ("the {e} outage came from an expired certificate on node {v}",
     "what was behind the {e} outage {t}",
     "what was behind the {e} outage in the spring? nobody wrote it down"),
    ("{p} owns the {e} backup rotation, every {v} hours",
     "who takes care of {e} backups {t}",
     "who takes care of {e} backups was unclear in the old team"),
    ("we agreed to drop {e} alerts below severity {v}",
     "which {e} alerts are we ignoring {t}",
     "{e} alerts we are ignoring should be listed somewhere"),
    ("{p} is writing the {e} runbook for the on-call team, draft due day {v}",
     "who is on the {e} runbook {t}",
     "the {e} runbook is on the old wiki, who is on it?"),
)  # fmt: skip
ENTITY_NOISE = (
    "anyone else seeing {e} dashboards load slowly today",
    "the {e} docs moved, new link in the wiki",
    "{p} asked about {e} pricing again",
    "is {e} part of the demo on friday",
    "{e} logs are noisy this morning",
)
WORD_NOISE = (
    "{p} will upgrade the office laptops before the launch party",
    "we decided to move the standup to the big room",
    "the coffee machine outage came from an expired filter",
    "{p} owns the snack rotation, every {v} days",
    "we agreed to drop the friday demo below {v} people",
    "{p} is writing the onboarding runbook draft for new hires",
    "certificate of the wiki expired, {p} renewed it",
    "version {v} of the design system is out",
)
FILLER = (
    "lunch at noon?",
    "thanks {p}",
    "nice work on the release notes",
    "back in ten minutes",
    "who has the meeting link",
    "good morning all",
)
# A time phrase and the window (days ago, from..to) the fact is placed in for it.
TIMES = (
    ("last week", (2.6, 8.0)),  # NOW is Tuesday noon: Monday to Sunday before, less 10 hours
    ("yesterday", (1, 1)),
    ("this month", (0.05, 0.05)),
    ("in the past 10 days", (2, 9)),
    ("", (15, 80)),
)


def q(text: str) -> str:
    return text if "'" not in text else text.replace("'", "")


def main(path: Path | None = None) -> Path:
    """Write the set to ``path`` (default: ``seeded_guild.ryaml`` beside this file)."""
    rng = random.Random(2026)
    messages: list[dict] = []
    questions: list[dict] = []

    def add(text: str, channel: str, days_ago: float, entities: list[str]) -> str:
        mid = f"m{len(messages) + 1:04d}"
        at = NOW - timedelta(days=days_ago, minutes=rng.randint(0, 600))
        messages.append(
            {"id": mid, "channel": channel, "at": at, "text": text, "entities": entities}
        )
        return mid

    n = 0
    for entity in ENTITIES:
        for fact, question, echo in rng.sample(FACTS, 4):
            n += 1
            phrase, (lo, hi) = TIMES[n % len(TIMES)]
            days_ago = rng.uniform(lo, hi)
            channel = rng.choice(CHANNELS[:3])
            values = {"p": rng.choice(PEOPLE), "e": entity, "v": rng.randint(2, 48)}
            target = add(fact.format(**values), channel, days_ago, [entity])
            echo_text = echo.format(**values)
            add(echo_text, rng.choice(CHANNELS), days_ago + rng.uniform(20, 60), [entity])
            for _ in range(3):  # same entity, same time: fools the entity/time path
                noise = rng.choice(ENTITY_NOISE).format(p=rng.choice(PEOPLE), e=entity)
                add(noise, channel, max(0.05, days_ago + rng.uniform(-0.8, 0.8)), [entity])
            for _ in range(2):  # same words, other subject: fools the keyword path
                noise = rng.choice(WORD_NOISE).format(p=rng.choice(PEOPLE), v=rng.randint(2, 48))
                add(noise, rng.choice(CHANNELS), rng.uniform(0, 90), [])
            text = question.format(e=entity, t=phrase).strip()
            questions.append(
                {"id": f"q{n:02d}", "text": text, "expected": [f"memory:msg:{target}"]}
            )
    for _ in range(120):
        filler = rng.choice(FILLER).format(p=rng.choice(PEOPLE))
        add(filler, rng.choice(CHANNELS), rng.uniform(0, 90), [])
    messages.sort(key=lambda m: m["at"])
    out = [
        "# The retrieval eval's seeded guild: generated by evals/retrieval/generate.py",
        "# (random.Random(2026), templates in that file); regenerate, do not edit by hand.",
        f"now: {NOW.isoformat()}",
        f"channels: [{', '.join(CHANNELS)}]",
        "messages:",
    ]
    for m in messages:
        ents = ", ".join(m["entities"])
        out.append(
            f"  - {{id: {m['id']}, channel: {m['channel']}, at: '{m['at'].isoformat()}', "
            f"entities: [{ents}], text: '{q(m['text'])}'}}"
        )
    out.append("questions:")
    for item in questions:
        out.append(
            f"  - {{id: {item['id']}, text: '{q(item['text'])}', "
            f"expected: [{', '.join(repr(e) for e in item['expected'])}]}}"
        )
    path = path or Path(__file__).with_name("seeded_guild.ryaml")
    path.write_text("\n".join(out) + "\n")
    print(f"wrote {path}: {len(messages)} messages, {len(questions)} questions")
    return path


if __name__ == "__main__":
    main()
