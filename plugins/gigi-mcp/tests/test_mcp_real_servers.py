"""Real MCP servers from PyPI, offline: mcp-server-time, mcp-server-git, mcp-server-fetch."""

from __future__ import annotations

import http.server
import subprocess
import threading
from collections.abc import Iterator

import pytest
from mcp_helpers import MEMBER, attach, bridge_kernel, call, listed_and_approved, spec_of

from gigi_core import ConfirmationRequired, PolicyDenied

# In the slow group (still run by CI): real MCP server packages, started as processes.
pytestmark = pytest.mark.slow


async def test_time_before_and_after_approval(home, tmp_path, database_url) -> None:
    attach(home, "time", "mcp-server-time --local-timezone UTC")
    await listed_and_approved(home, "time", approve=False)
    async with bridge_kernel(tmp_path, database_url, "time") as kernel:
        spec = spec_of(kernel, "mcp_time.get_current_time")
        # not approved: its read-only hints are not believed yet
        assert (spec.safety.value, spec.confirm.value) == ("external", "always")
        with pytest.raises(PolicyDenied, match="external"):
            await call(kernel, "mcp_time.get_current_time", {"timezone": "UTC"})
        await kernel.enable_plugin("g1", "mcp_time", allow_external=True)
        with pytest.raises(ConfirmationRequired):
            await call(kernel, "mcp_time.get_current_time", {"timezone": "UTC"})
    from gigi_mcp import server_admin

    server_admin.approve(home, "time")
    async with bridge_kernel(tmp_path, database_url, "time") as kernel:
        spec = spec_of(kernel, "mcp_time.get_current_time")
        assert spec.safety.value == "read_only" and spec.result is not None
        result = await call(kernel, "mcp_time.get_current_time", {"timezone": "UTC"})
        assert result["timezone"] == "UTC" and result["datetime"].endswith("+00:00")
        converted = await call(
            kernel,
            "mcp_time.convert_time",
            {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"},
        )
        assert converted["target"]["datetime"][11:16] == "21:00"
        # the capability defaults to admins: a member without a grant is refused
        with pytest.raises(PolicyDenied):
            await call(kernel, "mcp_time.get_current_time", {"timezone": "UTC"}, actor=MEMBER)
        await kernel.add_grant("g1", "mcp_time.use", "user", MEMBER.id)
        assert (await call(kernel, "mcp_time.get_current_time", {"timezone": "UTC"}, MEMBER))[
            "timezone"
        ] == "UTC"
        # a bad argument comes back from the server as an error result: a tool error
        from gigi_core import ToolExecutionError

        with pytest.raises(ToolExecutionError, match="Invalid timezone"):
            await call(kernel, "mcp_time.get_current_time", {"timezone": "Nowhere/Nope"})


def _git(repo, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True
    ).stdout


@pytest.fixture
def repo(tmp_path):
    path = tmp_path / "repo"
    path.mkdir()
    _git(path, "init", "-q", "-b", "main")
    _git(path, "config", "user.email", "t@example.org")
    _git(path, "config", "user.name", "T")
    (path / "a.txt").write_text("one\n")
    _git(path, "add", "a.txt")
    _git(path, "commit", "-q", "-m", "first")
    (path / "a.txt").write_text("two\n")
    return path


async def test_git_reads_run_and_writes_need_confirmation(home, tmp_path, database_url, repo):
    attach(home, "git", f"mcp-server-git --repository {repo}")
    await listed_and_approved(home, "git")
    async with bridge_kernel(tmp_path, database_url, "git") as kernel:
        classes = {
            name: (spec_of(kernel, f"mcp_git.{name}").safety.value)
            for name in ("git_status", "git_log", "git_reset", "git_commit", "git_add")
        }
        assert classes == {
            "git_status": "read_only",
            "git_log": "read_only",
            "git_reset": "destructive",
            "git_commit": "write",
            "git_add": "write",
        }
        status = await call(kernel, "mcp_git.git_status", {"repo_path": str(repo)})
        assert "a.txt" in status["content"][0]["text"]
        for action, args in (
            ("mcp_git.git_reset", {"repo_path": str(repo)}),
            ("mcp_git.git_commit", {"repo_path": str(repo), "message": "sneaky"}),
        ):
            with pytest.raises(ConfirmationRequired):
                await call(kernel, action, args)
        assert _git(repo, "log", "--oneline").count("\n") == 1  # nothing was committed
        rows = await kernel.audit.recent("g1")
        assert {r["status"] for r in rows} >= {"ok", "needs_confirmation"}


class _Page(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        if self.path == "/robots.txt":
            self.send_response(404)
            self.end_headers()
            return
        body = b"<html><body><h1>Hello from loopback</h1><p>A page for the test.</p></body></html>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def page() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Page)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/page"
    server.shutdown()


async def test_fetch_is_external_and_needs_the_guilds_consent(home, tmp_path, database_url, page):
    attach(home, "fetch", "mcp-server-fetch --ignore-robots-txt --allow-private-ips")
    await listed_and_approved(home, "fetch")
    async with bridge_kernel(tmp_path, database_url) as kernel:
        assert spec_of(kernel, "mcp_fetch.fetch").safety.value == "external"
        await kernel.enable_plugin("g1", "mcp_fetch")  # without --allow-external
        with pytest.raises(PolicyDenied):
            await call(kernel, "mcp_fetch.fetch", {"url": page})
        await kernel.enable_plugin("g1", "mcp_fetch", allow_external=True)
        with pytest.raises(ConfirmationRequired):  # external confirms under confirm: policy
            await call(kernel, "mcp_fetch.fetch", {"url": page})
    from mcp_helpers import set_tool_overrides

    set_tool_overrides(home, "fetch", {"fetch": {"confirm": "never"}})
    async with bridge_kernel(tmp_path, database_url, "fetch", allow_external=True) as kernel:
        result = await call(kernel, "mcp_fetch.fetch", {"url": page})
        assert "Hello from loopback" in result["content"][0]["text"]
