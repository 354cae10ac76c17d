"""A loopback HTTP server that answers LLM API requests from a script and logs every request.

Subclasses (:class:`~forgekernel.fakes.anthropic.FakeAnthropic`,
:class:`~forgekernel.fakes.openai.FakeOpenAI`) turn a :class:`Step` into the wire format.
The server binds 127.0.0.1 on a free port, serves from a daemon thread, and is used as a
context manager so a test always stops it::

    with FakeOpenAI(steps, api_key="dummy") as srv:
        client = openai.OpenAI(base_url=srv.url + "/v1", api_key="dummy")
        ...
    assert srv.remaining == 0
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from forgekernel.fakes.script import EXHAUSTED, Step, parse_script

SECRET_HEADERS = ("x-api-key", "authorization")


@dataclass(frozen=True)
class Request:
    """One request the server received (secret header values are masked)."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    step: int | None
    """Index of the script step that answered it (None: not a scripted endpoint)."""


@dataclass
class Reply:
    """What a handler sends back: a status, headers and either a body or SSE events."""

    status: int = 200
    body: Any = None
    events: Iterable[bytes] | None = None
    headers: dict[str, str] | None = None


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _HTTPServer

    def _serve(self) -> None:
        n = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(n) if n else b""
        try:
            body: Any = json.loads(raw) if raw else None
        except (json.JSONDecodeError, UnicodeDecodeError):
            body = raw.decode("utf-8", "replace")
        headers = {k.lower(): ("***" if k.lower() in SECRET_HEADERS else v)
                   for k, v in self.headers.items()}
        reply, step = self.server.fake.dispatch(self.command, self.path, dict(self.headers), body)
        self.server.fake.log(Request(self.command, self.path, headers, body, step))
        self._send(reply)

    def _send(self, reply: Reply) -> None:
        self.send_response(reply.status)
        for k, v in (reply.headers or {}).items():
            self.send_header(k, v)
        if reply.events is None:
            data = b"" if reply.body is None else json.dumps(reply.body).encode()
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(data)
            return
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        for chunk in reply.events:
            self.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")

    do_GET = do_POST = do_HEAD = do_PUT = do_DELETE = _serve

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - base signature
        """Requests are logged as data in :attr:`FakeServer.requests`, not on stderr."""


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    fake: FakeServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        import sys

        exc = sys.exc_info()[1]
        # A client that hangs up (closing a finished stream or an idle keep-alive socket) is
        # normal HTTP behaviour, not a server fault; anything else is recorded.
        if isinstance(exc, (ConnectionResetError, BrokenPipeError)):
            return
        self.fake.note_error(repr(exc))


class FakeServer:
    """Scripted loopback LLM server; subclasses implement :meth:`route`."""

    kind = "fake"

    def __init__(self, steps: Iterable[Step | dict] = (), api_key: str | None = None,
                 host: str = "127.0.0.1", port: int = 0) -> None:
        self.steps: tuple[Step, ...] = parse_script(list(steps))
        self.api_key = api_key
        self.requests: list[Request] = []
        self.errors: list[str] = []
        self._next = 0
        self._lock = threading.Lock()
        self._httpd = _HTTPServer((host, port), _Handler)
        self._httpd.fake = self
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------ lifecycle
    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> FakeServer:
        self._thread = threading.Thread(target=self._httpd.serve_forever, name=f"{self.kind}-fake",
                                        kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join(timeout=5)
            self._thread = None
        self._httpd.server_close()

    def __enter__(self) -> FakeServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ------------------------------------------------------------ script and log
    @property
    def remaining(self) -> int:
        """Steps not yet used."""
        return len(self.steps) - self._next

    def take(self) -> tuple[Step, int | None]:
        """The next step and its index; a plain text step (index None) once exhausted."""
        with self._lock:
            if self._next >= len(self.steps):
                self.errors.append("script exhausted")
                return Step(text=EXHAUSTED), None
            self._next += 1
            return self.steps[self._next - 1], self._next - 1

    def log(self, request: Request) -> None:
        with self._lock:
            self.requests.append(request)

    def note_error(self, text: str) -> None:
        with self._lock:
            self.errors.append(text)

    def paths(self) -> list[str]:
        """``METHOD path`` of every request, in order (for asserting what a client sent)."""
        return [f"{r.method} {r.path}" for r in self.requests]

    def scripted(self) -> list[Request]:
        """The requests that consumed a script step."""
        return [r for r in self.requests if r.step is not None]

    def authorised(self, headers: dict[str, str]) -> bool:
        if self.api_key is None:
            return True
        lower = {k.lower(): v for k, v in headers.items()}
        return self.api_key in (lower.get("x-api-key"), lower.get("authorization", "")[7:])

    def dispatch(self, method: str, path: str, headers: dict[str, str],
                 body: Any) -> tuple[Reply, int | None]:
        return self.route(method, path.split("?", 1)[0], headers, body)

    def route(self, method: str, path: str, headers: dict[str, str],
              body: Any) -> tuple[Reply, int | None]:
        raise NotImplementedError


def sse(events: Iterable[tuple[str | None, Any]]) -> Iterator[bytes]:
    """Server-sent events: ``event:`` line (if named) and one ``data:`` line each."""
    for name, data in events:
        payload = data if isinstance(data, str) else json.dumps(data)
        head = f"event: {name}\n" if name else ""
        yield f"{head}data: {payload}\n\n".encode()


def pieces(text: str, size: int = 24) -> list[str]:
    """Split text into streaming deltas (at least one, possibly empty)."""
    return [text[i:i + size] for i in range(0, len(text), size)] or [""]
