"""A scripted HTTP server on 127.0.0.1 for testing provider plugins over real HTTP.

Runs ``http.server`` in a background thread so it works with any event loop; each
format (OpenAI, Anthropic, Gemini) subclasses it to add routes and reply builders.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit


@dataclass(frozen=True)
class RecordedRequest:
    """One request the fake received; ``json`` is the parsed body (None if not JSON)."""

    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: bytes
    json: Any
    route: str | None


@dataclass
class Reply:
    """A scripted reply. ``delay`` sleeps before answering (client timeouts);
    ``route`` limits which route may consume it (None: any).

    ``trickle`` sends the headers at once, then the body one byte every ``trickle``
    seconds (a server that stalls without ever idling past a read timeout);
    ``chunked`` sends the body with ``Transfer-Encoding: chunked`` and no length.
    """

    status: int = 200
    json: Any = None
    body: bytes | str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    content_type: str | None = None
    delay: float = 0.0
    route: str | None = None
    trickle: float = 0.0
    chunked: bool = False

    def encoded(self) -> tuple[bytes, str]:
        """Body bytes and content type."""
        if self.body is not None:
            data = self.body.encode("utf-8") if isinstance(self.body, str) else self.body
            return data, self.content_type or "text/plain; charset=utf-8"
        if self.json is None:
            return b"", self.content_type or "application/json"
        data = json.dumps(self.json).encode("utf-8")
        return data, self.content_type or "application/json"


Responder = Callable[[RecordedRequest], "Reply | None"]

DEFAULT_HTML = (
    "<!DOCTYPE html><html><head><title>502 Bad Gateway</title>"
    "<style>body{font-family:sans-serif}</style></head>"
    "<body><center><h1>502 Bad Gateway</h1></center><hr><center>nginx</center>"
    "<script>console.log('x')</script></body></html>"
)


def http_date(seconds_from_now: float) -> str:
    """An RFC 9110 HTTP date ``seconds_from_now`` in the future, for ``Retry-After``."""
    return formatdate(time.time() + seconds_from_now, usegmt=True)


class FakeProviderServer:
    """Base fake: scripted FIFO replies, recorded requests, start/stop on a random port.

    Use as ``with`` or ``async with``; ``base_url`` is what a provider plugin should call.
    """

    #: path prefix appended to the root URL to make ``base_url``
    base_path: str = ""
    #: header carrying the key, checked against ``api_key`` when set
    key_header: str = "authorization"

    def __init__(self, *, api_key: str | None = None) -> None:
        self.api_key = api_key
        self.requests: list[RecordedRequest] = []
        self._queue: list[Reply] = []
        self._responder: Responder | None = None
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------ lifecycle

    def start(self) -> FakeProviderServer:
        """Bind 127.0.0.1 on a free port and serve in a daemon thread."""
        handler = _make_handler(self)
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving; requests still sleeping in a delay are abandoned."""
        self._stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> FakeProviderServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    async def __aenter__(self) -> FakeProviderServer:
        return self.start()

    async def __aexit__(self, *exc: object) -> None:
        self.stop()

    @property
    def root_url(self) -> str:
        """``http://127.0.0.1:PORT`` (no path)."""
        if self._httpd is None:
            raise RuntimeError("the fake server is not started")
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def base_url(self) -> str:
        """The URL a plugin uses as its base URL (root plus the format's prefix)."""
        return self.root_url + self.base_path

    # ------------------------------------------------------------ scripting

    def enqueue(self, reply: Reply, *, times: int = 1) -> FakeProviderServer:
        """Queue ``reply`` (``times`` copies); replies are consumed first in, first out."""
        with self._lock:
            self._queue.extend(reply for _ in range(times))
        return self

    def respond_with(self, responder: Responder | None) -> FakeProviderServer:
        """Answer dynamically: ``responder(request)`` returns a Reply (None: use the queue)."""
        self._responder = responder
        return self

    def pending(self) -> int:
        """How many scripted replies are still unused."""
        with self._lock:
            return len(self._queue)

    def requests_to(self, route: str) -> list[RecordedRequest]:
        """The recorded requests of one route (``"chat"``, ``"embeddings"``...)."""
        return [r for r in self.requests if r.route == route]

    @property
    def last_request(self) -> RecordedRequest:
        """The most recent request (fails loudly when there is none)."""
        if not self.requests:
            raise AssertionError("the fake server received no request")
        return self.requests[-1]

    def reply_raw(
        self,
        status: int,
        *,
        json: Any = None,
        body: bytes | str | None = None,
        headers: dict[str, str] | None = None,
        content_type: str | None = None,
        delay: float = 0.0,
        times: int = 1,
        route: str | None = None,
        trickle: float = 0.0,
        chunked: bool = False,
    ) -> FakeProviderServer:
        """Queue any status/body/headers, for shapes no builder covers."""
        reply = Reply(
            status, json, body, dict(headers or {}), content_type, delay, route, trickle, chunked
        )
        return self.enqueue(reply, times=times)

    def reply_html(self, status: int = 502, html: str = DEFAULT_HTML, *, times: int = 1) -> Any:
        """A gateway's HTML error page (what proxies return instead of JSON)."""
        return self.reply_raw(
            status, body=html, content_type="text/html; charset=utf-8", times=times
        )

    def reply_timeout(self, delay: float = 1.0, *, times: int = 1) -> Any:
        """Answer only after ``delay`` seconds: with a shorter client timeout, a timeout."""
        return self.reply_raw(500, json={"error": "late"}, delay=delay, times=times)

    def reply_trickle(
        self, json: Any = None, *, interval: float = 0.5, times: int = 1, route: str | None = None
    ) -> Any:
        """Headers at once, then one body byte every ``interval`` seconds (never idle long)."""
        body = {"choices": []} if json is None else json
        return self.reply_raw(200, json=body, trickle=interval, times=times, route=route)

    def reply_oversized(
        self, size: int, *, status: int = 200, chunked: bool = False, times: int = 1
    ) -> Any:
        """A JSON body of about ``size`` bytes (a huge completion); ``chunked``: no length."""
        filler = "x" * max(size - 64, 0)
        body = {"choices": [{"index": 0, "message": {"role": "assistant", "content": filler}}]}
        return self.reply_raw(status, json=body, chunked=chunked, times=times)

    # ------------------------------------------------------------ format hooks

    def route_of(self, method: str, path: str) -> str | None:
        """Name the route of a request path (None: unknown path -> 404)."""
        return None

    def error_json(self, status: int, message: str, **extra: Any) -> Any:
        """The format's error body for ``status``; subclasses override."""
        return {"error": {"message": message, "code": status, **extra}}

    def default_reply(self, request: RecordedRequest) -> Reply:
        """What to answer when nothing is scripted: a clear, non-retried error."""
        text = f"fake server: no scripted reply left for {request.method} {request.path}"
        return Reply(400, self.error_json(400, text))

    def key_of(self, request: RecordedRequest) -> str | None:
        """The API key a request carried, read from ``key_header``."""
        value = request.headers.get(self.key_header)
        if value and self.key_header == "authorization" and value.lower().startswith("bearer "):
            return value[7:]
        return value

    def reply_error(
        self,
        status: int,
        message: str,
        *,
        headers: dict[str, str] | None = None,
        times: int = 1,
        **extra: Any,
    ) -> Any:
        """An error in this format's body shape (``extra`` adds fields to the error object)."""
        return self.reply_raw(
            status, json=self.error_json(status, message, **extra), headers=headers, times=times
        )

    def reply_server_error(self, status: int = 500, *, times: int = 1) -> Any:
        """A 5xx with this format's error body."""
        return self.reply_error(status, f"fake upstream error {status}", times=times)

    def reply_rate_limited(
        self,
        *,
        retry_after: float | None = None,
        retry_after_date: float | None = None,
        retry_after_ms: float | None = None,
        message: str = "Rate limit reached, please retry later.",
        times: int = 1,
    ) -> Any:
        """A 429 with any mix of hints: seconds, HTTP date (seconds from now) or milliseconds."""
        headers: dict[str, str] = {}
        if retry_after is not None:
            headers["retry-after"] = f"{retry_after:g}"
        if retry_after_date is not None:
            headers["retry-after"] = http_date(retry_after_date)
        if retry_after_ms is not None:
            headers["retry-after-ms"] = f"{retry_after_ms:g}"
        return self.reply_error(429, message, headers=headers, times=times)

    # ------------------------------------------------------------ serving

    #: Models that take no image input: a request with an image part gets the vendor's 400.
    text_only_models: frozenset[str] = frozenset()

    def image_parts(self, request: RecordedRequest) -> list[tuple[str, str]]:
        """The inline images of a request as (media type or data URL, base64) pairs."""
        return []

    def refuse(self, request: RecordedRequest) -> Reply | None:
        """A 400 for image parts the real API would refuse, before any scripted reply."""
        from gigi_core.testing.fake_providers.images import first_problem, inline_problem

        parts = self.image_parts(request)
        if not parts:
            return None
        model = request.json.get("model") if isinstance(request.json, dict) else None
        model = model or request.path.rsplit("/", 1)[-1].split(":", 1)[0]
        if model in self.text_only_models:
            return Reply(400, self.error_json(400, self.no_images_message(model)))
        problem = first_problem(inline_problem(t, d) for t, d in parts)
        return Reply(400, self.error_json(400, problem)) if problem else None

    def no_images_message(self, model: str) -> str:
        """What the vendor says when a text-only model gets an image."""
        return f"Model {model} does not support image input."

    def _next_reply(self, request: RecordedRequest) -> Reply:
        if self.api_key is not None and self.key_of(request) != self.api_key:
            return Reply(401, self.error_json(401, "Incorrect API key provided."))
        refused = self.refuse(request)
        if refused is not None:
            return refused
        if self._responder is not None:
            reply = self._responder(request)
            if reply is not None:
                return reply
        with self._lock:
            for index, reply in enumerate(self._queue):
                if reply.route is None or reply.route == request.route:
                    return self._queue.pop(index)
        return self.default_reply(request)

    def _handle(self, handler: BaseHTTPRequestHandler) -> None:
        parts = urlsplit(handler.path)
        length = int(handler.headers.get("content-length") or 0)
        raw = handler.rfile.read(length) if length else b""
        try:
            parsed = json.loads(raw) if raw else None
        except ValueError:
            parsed = None
        route = self.route_of(handler.command, parts.path)
        request = RecordedRequest(
            method=handler.command,
            path=parts.path,
            query=parse_qs(parts.query),
            headers={k.lower(): v for k, v in handler.headers.items()},
            body=raw,
            json=parsed,
            route=route,
        )
        with self._lock:
            self.requests.append(request)
        if route is None:
            reply = Reply(404, self.error_json(404, f"fake server: no route {parts.path}"))
        else:
            reply = self._next_reply(request)
        if reply.delay and self._stopping.wait(reply.delay):
            return
        data, content_type = reply.encoded()
        handler.send_response(reply.status)
        handler.send_header("content-type", content_type)
        if reply.chunked:
            handler.send_header("transfer-encoding", "chunked")
        else:
            handler.send_header("content-length", str(len(data)))
        handler.send_header("x-request-id", f"req_fake_{len(self.requests)}")
        for name, value in reply.headers.items():
            handler.send_header(name, value)
        handler.end_headers()
        if reply.chunked:
            self._write_chunked(handler, data)
        elif reply.trickle:
            self._write_trickle(handler, data, reply.trickle)
        else:
            handler.wfile.write(data)

    def _write_chunked(self, handler: BaseHTTPRequestHandler, data: bytes) -> None:
        step = 64 * 1024
        for start in range(0, len(data), step):
            piece = data[start : start + step]
            handler.wfile.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
            if self._stopping.is_set():
                return
        handler.wfile.write(b"0\r\n\r\n")

    def _write_trickle(self, handler: BaseHTTPRequestHandler, data: bytes, interval: float) -> None:
        handler.wfile.flush()
        for index in range(len(data)):
            handler.wfile.write(data[index : index + 1])
            handler.wfile.flush()
            if self._stopping.wait(interval):
                return


def _make_handler(server: FakeProviderServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def setup(self) -> None:
            super().setup()
            # Headers and body go out in separate writes: without this, Nagle's
            # algorithm and delayed ACKs add ~40 ms to every keep-alive reply.
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def do_POST(self) -> None:
            self._serve()

        def do_GET(self) -> None:
            self._serve()

        def _serve(self) -> None:
            try:
                server._handle(self)
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True

        def log_message(self, format: str, *args: Any) -> None:
            """Keep test output quiet."""

    return Handler
