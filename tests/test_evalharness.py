"""The eval harness: every golden case passes, the canary scanner catches leaks, errors are
``file:line``, and ``gigi eval run`` works end to end."""

from __future__ import annotations

import json
import logging
import textwrap
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from gigi_core import hookimpl
from gigi_core.evalharness import (
    SEALED_COLUMNS,
    Canaries,
    CaseFileError,
    EvalContext,
    load_cases,
    run_case,
    run_cases,
)
from gigi_core.evalharness.canary import scan_database
from gigi_core.evalharness.warm import Warm
from gigi_core.store.audit import AuditRecord

EVALS = Path(__file__).resolve().parent.parent / "evals"
CASES = load_cases([EVALS])
ON_POSTGRES = [
    "three-tool-calls",
    "confirmation-approved-runs-once",
    "cancelled-run-cannot-be-confirmed",
    "direct-call-admin-only-denied",
    "wire-one-tool-facts-verbatim",
    "memory-keeps-nothing-it-must-not",
    "memory-query-text-is-never-stored",
    "memory-direct-search-query-is-never-stored",
]


def report(result: Any) -> str:
    return "\n".join([f"{result.path} {result.name}", *result.problems, *result.leaks])


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Warm:
    """One migrated SQLite template and manifest cache for all cases of this module."""
    return Warm(tmp_path_factory.mktemp("eval-warm"))


@pytest.mark.parametrize("loaded", CASES, ids=[c.case.name for c in CASES])
async def test_golden_case(loaded, shared: Warm) -> None:
    result = await run_case(loaded, shared=shared)
    if loaded.case.known_bug:  # a strict xfail: when the bug is fixed, the case must be updated
        assert not result.passed, f"{loaded.where} passes now: remove its known_bug"
        pytest.xfail(loaded.case.known_bug)
    assert result.passed, report(result)


@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
async def test_golden_cases_on_postgresql(database_url: str) -> None:
    """Several cases share one database: each runs in its own schema, dropped afterwards."""
    chosen = [c for c in CASES if c.case.name in ON_POSTGRES]
    paths = sorted({c.path for c in chosen})
    results = await run_cases(paths, database_url=database_url)
    assert {r.name for r in results} >= set(ON_POSTGRES)
    failed = [report(r) for r in results if not r.ok]
    assert not failed, "\n\n".join(failed)
    from sqlalchemy import text
    from sqlalchemy.ext.asyncio import create_async_engine

    engine = create_async_engine(database_url)
    async with engine.connect() as conn:  # every case's schema was dropped; public untouched
        # (gigi_pgqueuer: the job engine's own schema, installed once, job ids only)
        left = await conn.scalars(
            text(
                "SELECT table_schema || '.' || table_name FROM information_schema.tables "
                "WHERE table_schema NOT IN ('pg_catalog', 'information_schema', 'gigi_pgqueuer')"
            )
        )
        assert list(left) == []
    await engine.dispose()


def test_the_suite_covers_every_path() -> None:
    names = {c.case.name for c in CASES}
    assert len(names) >= 15
    reasons = {c.case.expect.termination_reason for c in CASES}
    assert {"max_tool_calls", "max_llm_calls", "max_tokens", "max_steps"} <= reasons
    assert sum(c.case.transport == "wire" for c in CASES) >= 2


# -- the canary scanner ---------------------------------------------------------------------

LEAKY_MANIFEST = """\
manifest_version: 1
plugin:
  name: leaky
  version: 0.0.1
  description: Deliberately leaks its argument.
  data_statement: Leaks on purpose, for the scanner's test.
  capabilities:
    - {name: leaky.use, description: Use it, default: everyone}
actions:
  - name: leaky.note
    description: Writes its text into an audit row.
    safety: read_only
    capability: leaky.use
    args: {type: object, properties: {text: {type: string}}, required: [text]}
  - name: leaky.log
    description: Logs its text.
    safety: read_only
    capability: leaky.use
    args: {type: object, properties: {text: {type: string}}, required: [text]}
"""


class Leaky:
    """A plugin that puts tool arguments where they must never go: an audit row and a log."""

    def __init__(self, ctx: EvalContext) -> None:
        self.path = ctx.workdir / "leaky.yaml"
        self.path.write_text(LEAKY_MANIFEST)

    @hookimpl
    def register_manifests(self, register: Any) -> None:
        register(self.path)

    @hookimpl
    def register_tools(self, register: Any) -> None:
        register("leaky.note", self.note)
        register("leaky.log", self.log)

    async def note(self, ctx: Any, text: str) -> dict[str, Any]:
        await ctx.kernel.audit.record(AuditRecord(kind="leaky.note", status="ok", reason_code=text))
        return {"ok": True}

    def log(self, ctx: Any, text: str) -> dict[str, Any]:
        logging.getLogger("leaky").info("got %s", text)
        return {"ok": True}


def leaky_case(tmp_path: Path, action: str) -> Path:
    path = tmp_path / f"leaky_{action}.yaml"
    path.write_text(
        textwrap.dedent(
            f"""\
            name: leaky-{action}
            test_plugins: [{{name: leaky, factory: "tests.test_evalharness:Leaky"}}]
            guild: {{enable: {{leaky: {{}}}}}}
            request: {{text: "please"}}
            model:
              - tool_calls: [{{name: leaky__{action}, args: {{text: "${{canary}}"}}}}]
              - text: "done"
            expect: {{status: done, executed: [leaky.{action}]}}
            """
        )
    )
    return path


async def test_scanner_catches_a_canary_written_to_an_audit_row(tmp_path: Path) -> None:
    [result] = await run_cases([leaky_case(tmp_path, "note")])
    assert not result.passed and not result.problems  # expectations held; only the leak fails it
    assert result.leaks == [
        "canary planted in a ${canary} placeholder found in audit_events.reason_code"
    ]


async def test_scanner_catches_a_canary_in_a_log_record(tmp_path: Path) -> None:
    [result] = await run_cases([leaky_case(tmp_path, "log")])
    assert not result.passed
    assert result.leaks == ["canary planted in a ${canary} placeholder found in log leaky"]


async def test_scan_reads_every_table_and_bytes_but_skips_sealed_columns(tmp_path: Path) -> None:
    """Reflection finds tables no model declares; bytes are decoded; sealed columns are skipped."""
    from sqlalchemy import text
    from sqlalchemy.ext.asyncio import create_async_engine

    engine = create_async_engine(f"sqlite+aiosqlite:///{tmp_path / 'scan.db'}")
    canaries = Canaries()
    token = canaries.new("the test")
    async with engine.begin() as conn:
        await conn.execute(text("CREATE TABLE stray (id INTEGER, blob BLOB, note TEXT)"))
        await conn.execute(text("CREATE TABLE agent_runs (id TEXT, state_sealed BLOB)"))
        await conn.execute(
            text("INSERT INTO stray VALUES (1, :b, 'x')"), {"b": b"\xff\x00" + token.encode()}
        )
        await conn.execute(text("INSERT INTO agent_runs VALUES ('r', :b)"), {"b": token.encode()})
    leaks = await scan_database(engine, canaries)
    assert [leak.where for leak in leaks] == ["stray.blob"]
    assert await scan_database(engine, canaries, sealed=SEALED_COLUMNS | {("stray", "blob")}) == []
    await engine.dispose()


# -- case files -----------------------------------------------------------------------------


def test_broken_yaml_reports_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text("name: broken\nrequest:\n  text: [unclosed\nmodel: []\n")
    with pytest.raises(CaseFileError) as info:
        load_cases([path])
    assert info.value.problems[0].startswith(f"{path}:")
    assert info.value.problems[0].split(":")[1] in {"3", "4", "5"}


def test_invalid_fields_report_file_line_and_field(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(
        textwrap.dedent(
            """\
            name: bad-case
            request:
              text: hi
            model:
              - text: fine
              - tool_calls: [{name: x, args: {}, raw: "{}"}]
            expect:
              status: done
              replly: typo
            then:
              - confirm: nobody
            """
        )
    )
    with pytest.raises(CaseFileError) as info:
        load_cases([path])
    problems = info.value.problems
    assert f"{path}:9: expect.replly: unknown field" in problems
    assert f"{path}:6: model.1.tool_calls.0: give args or raw, not both" in problems


def test_duplicate_names_and_unknown_actor_are_reported(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text("name: same\n---\nname: same\n")
    (tmp_path / "b.yaml").write_text("name: other\nthen:\n  - confirm: nobody\n")
    with pytest.raises(CaseFileError) as info:
        load_cases([tmp_path])
    text = "\n".join(info.value.problems)
    assert f"{tmp_path / 'a.yaml'}:3: name: 'same' is already used" in text
    assert "unknown actor 'nobody'" in text


async def test_a_wrong_expectation_fails_with_a_readable_diff(tmp_path: Path) -> None:
    source = (EVALS / "02_one_tool_facts_verbatim.yaml").read_text()
    path = tmp_path / "wrong.yaml"
    path.write_text(
        source.replace('reply: "It is quite far."', 'reply: "It is near."').replace(
            "executed: [evalkit.fact]", "executed: []"
        )
    )
    [result] = await run_cases([path])
    assert not result.passed and not result.leaks
    assert "request: reply: expected 'It is near.', got 'It is quite far.'" in result.problems
    assert "request: executed handlers: expected [], got ['evalkit.fact']" in result.problems


async def test_unused_turns_and_running_out_of_turns_fail(tmp_path: Path) -> None:
    path = tmp_path / "turns.yaml"
    path.write_text(
        "name: extra\nmodel: [{text: a}, {text: b}]\n---\n"
        "name: short\nmodel: [{tool_calls: [{name: evalkit__echo, args: {text: x}}]}]\n"
        "guild: {enable: {evalkit: {}}}\n"
    )
    extra, short = await run_cases([path])
    assert extra.problems == ["1 scripted model turn(s) were never used"]
    assert "the scripted model has no turns left" in short.problems[0]


# -- the CLI --------------------------------------------------------------------------------


def test_gigi_eval_run_json() -> None:
    from gigi_core.cli.main import cli

    result = CliRunner().invoke(cli, ["eval", "run", str(EVALS), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert len(data) == len(CASES) and all(r["ok"] for r in data)
    assert all(r["passed"] for r in data if not r["known_bug"])
    assert {"name", "path", "passed", "duration_ms", "problems", "leaks", "run_id"} <= set(data[0])


def test_gigi_eval_run_reports_failures_and_exits_1(tmp_path: Path) -> None:
    from gigi_core.cli.main import cli

    good = EVALS / "01_plain_answer.yaml"
    result = CliRunner().invoke(cli, ["eval", "run", str(good), str(leaky_case(tmp_path, "note"))])
    assert result.exit_code == 1
    lines = result.output.splitlines()
    assert lines[0].startswith("✓ plain-answer")
    assert lines[1].startswith("✗ leaky-note")
    assert "audit_events.reason_code" in lines[2]
    assert lines[-1].startswith("1 passed, 1 failed")


def test_gigi_eval_run_broken_file_exits_2(tmp_path: Path) -> None:
    from gigi_core.cli.main import cli

    path = tmp_path / "broken.yaml"
    path.write_text("name: x\nbogus: 1\n")
    result = CliRunner().invoke(cli, ["eval", "run", str(path)])
    assert result.exit_code == 2
    assert f"{path}:2: bogus: unknown field" in result.output
