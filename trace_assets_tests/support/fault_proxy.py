"""A fault-injecting HTTP reverse proxy to put between s3fs and a moto server.

Object stores fail in ways moto never does: throttling (503 SlowDown), transient
500s and connections that die mid-request. The proxy forwards every request to
the upstream endpoint unchanged, except those matching a fault rule, and counts
requests by kind and response bytes so tests and benchmarks can see how many
round trips a piece of code really makes. `latency` delays every request, as a
distant region does, so benchmarks can see how much of it the pipeline hides. With
`required_headers` it stands in for an authenticating proxy: a request without them gets 401
(counted as `unauthorized`), as a webserver behind one would. Bodies are buffered whole, which suits
trace files (kilobytes to a few megabytes), not multi-gigabyte objects.
"""

from __future__ import annotations

import enum
import http.client
import socket
import struct
import sys
import threading
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from email.message import Message
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from urllib.parse import unquote, urlsplit

# Headers that describe one hop, not the message (RFC 9110 section 7.6.1), which
# must not pass through a proxy that re-frames bodies itself; plus Expect, as the
# proxy has already answered "100 Continue" to the client.
HOP_BY_HOP_HEADERS = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "expect",
    }
)

STAT_KEYS = (
    "connections",
    "requests",
    "list",
    "get",
    "head",
    "put",
    "other",
    "response_body_bytes",
    "faults_injected",
    "unauthorized",
)


class Fault(enum.Enum):
    """What the proxy does instead of forwarding a matching request."""

    SLOW_DOWN = "slow_down"  # 503 with S3's SlowDown error document
    INTERNAL_ERROR = "internal_error"  # 500 with S3's InternalError error document
    RESET_CONNECTION = "reset_connection"  # TCP RST, no response at all
    CLOSE_CONNECTION = "close_connection"  # orderly close (FIN), no response at all


_ERROR_DOCUMENTS = {
    Fault.SLOW_DOWN: (503, "Slow Down", "SlowDown", "Please reduce your request rate."),
    Fault.INTERNAL_ERROR: (
        500,
        "Internal Server Error",
        "InternalError",
        "We encountered an internal error. Please try again.",
    ),
}


@dataclass
class FaultRule:
    """Injects `fault` into requests matching all given criteria.

    With `first=N` only the first N matching requests fail, with `every=k` every
    k-th matching one does, and with neither every matching request fails.
    """

    fault: Fault
    method: str | None = None
    path_contains: str | None = None
    query_contains: str | None = None
    first: int | None = None
    every: int | None = None
    matched: int = 0
    injected: int = 0

    def __post_init__(self) -> None:
        if self.first is not None and self.every is not None:
            raise ValueError("give at most one of first= and every=")
        if self.every is not None and self.every < 1:
            raise ValueError("every= must be at least 1")

    def matches(self, method: str, path: str, query: str) -> bool:
        return (
            (self.method is None or self.method.upper() == method)
            and (self.path_contains is None or self.path_contains in path)
            and (self.query_contains is None or self.query_contains in query)
        )

    def take(self) -> bool:
        """Count one matching request and tell whether it gets the fault."""
        self.matched += 1
        if self.first is not None:
            hit = self.matched <= self.first
        elif self.every is not None:
            hit = self.matched % self.every == 0
        else:
            hit = True
        self.injected += hit
        return hit


def request_kind(method: str, path: str, query: str) -> str:
    """Name the S3 operation family of a path-style request, for the counters."""
    is_bucket_level = "/" not in path.strip("/")
    if method == "GET" and is_bucket_level and "list-type=" in query:
        return "list"
    if method == "GET" and not is_bucket_level:
        return "get"
    if method in ("HEAD", "PUT"):
        return method.lower()
    return "other"


class FaultProxy:
    """Threaded reverse proxy on 127.0.0.1 with rule-based fault injection.

    Use as a context manager: ``with FaultProxy(upstream) as proxy: proxy.url``.
    """

    def __init__(
        self,
        upstream: str,
        *,
        upstream_timeout: float = 30.0,
        latency: float = 0.0,
        required_headers: Mapping[str, str] | None = None,
    ) -> None:
        """`latency`: seconds added before each request is answered (settable while running);
        `required_headers`: names and values a request must carry to be forwarded."""
        parts = urlsplit(upstream)
        if parts.scheme != "http" or parts.hostname is None:
            raise ValueError(f"upstream must be a plain http:// URL, got {upstream!r}")
        self.upstream_host = parts.hostname
        self.upstream_port = parts.port or 80
        self.upstream_timeout = upstream_timeout
        self.latency = latency
        self.required_headers = dict(required_headers or {})
        self._lock = threading.Lock()
        self._rules: list[FaultRule] = []
        self._stats = dict.fromkeys(STAT_KEYS, 0)
        self._server: _ProxyServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("the proxy is not running")
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def stats(self) -> dict[str, int]:
        """A snapshot of the counters: client connections accepted, requests in all
        and per kind (list, get, head, put, other), forwarded response body
        bytes, and faults injected."""
        with self._lock:
            return dict(self._stats)

    def reset_stats(self) -> None:
        with self._lock:
            self._stats = dict.fromkeys(STAT_KEYS, 0)

    def add_fault(
        self,
        fault: Fault,
        *,
        method: str | None = None,
        path_contains: str | None = None,
        query_contains: str | None = None,
        first: int | None = None,
        every: int | None = None,
    ) -> FaultRule:
        """Add a rule; the first rule that matches a request decides its fate."""
        rule = FaultRule(fault, method, path_contains, query_contains, first, every)
        with self._lock:
            self._rules.append(rule)
        return rule

    def clear_faults(self) -> None:
        with self._lock:
            self._rules.clear()

    def start(self) -> FaultProxy:
        self._server = _ProxyServer(self)
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="fault-proxy",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is None:
            return
        self._server.shutdown()
        self._server.close_client_connections()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join()
        self._server = None

    def __enter__(self) -> FaultProxy:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    def _admit(self, method: str, raw_path: str) -> Fault | None:
        """Count a request and return the fault it gets, if any."""
        split = urlsplit(raw_path)
        path, query = unquote(split.path), split.query
        with self._lock:
            self._stats["requests"] += 1
            self._stats[request_kind(method, path, query)] += 1
            for rule in self._rules:
                if rule.matches(method, path, query):
                    if rule.take():
                        self._stats["faults_injected"] += 1
                        return rule.fault
                    return None
        return None

    def _authorized(self, headers: Message) -> bool:
        if all(headers.get(name) == value for name, value in self.required_headers.items()):
            return True
        with self._lock:
            self._stats["unauthorized"] += 1
        return False

    def _count_connection(self) -> None:
        with self._lock:
            self._stats["connections"] += 1

    def _count_forwarded_body(self, size: int) -> None:
        with self._lock:
            self._stats["response_body_bytes"] += size


class _ProxyServer(ThreadingHTTPServer):
    def __init__(self, proxy: FaultProxy) -> None:
        self.proxy = proxy
        self._open_connections: set[socket.socket] = set()
        self._connections_lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), _ProxyHandler)

    def process_request(self, request: socket.socket, client_address: object) -> None:  # type: ignore[override]
        with self._connections_lock:
            self._open_connections.add(request)
        self.proxy._count_connection()
        super().process_request(request, client_address)

    def shutdown_request(self, request: socket.socket) -> None:  # type: ignore[override]
        with self._connections_lock:
            self._open_connections.discard(request)
        super().shutdown_request(request)

    def handle_error(self, request: socket.socket, client_address: object) -> None:  # type: ignore[override]
        """Clients hanging up mid-exchange is normal here (retries, timeouts); anything else is a bug."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)

    def close_client_connections(self) -> None:
        """Wake handler threads blocked on idle keep-alive connections."""
        with self._connections_lock:
            connections = list(self._open_connections)
        for connection in connections:
            try:
                connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


class _ProxyHandler(BaseHTTPRequestHandler):
    """Serves one client connection, with one upstream connection of its own."""

    protocol_version = "HTTP/1.1"  # keep-alive, as botocore's connection pool expects
    server: _ProxyServer

    def setup(self) -> None:
        super().setup()
        proxy = self.server.proxy
        self._upstream = http.client.HTTPConnection(
            proxy.upstream_host, proxy.upstream_port, timeout=proxy.upstream_timeout
        )

    def finish(self) -> None:
        self._upstream.close()
        super().finish()

    def log_message(self, format: str, *args: object) -> None:
        """Stay quiet: pytest output is no place for an access log."""

    def _relay(self) -> None:
        body = self._read_request_body()
        if self.server.proxy.latency > 0:
            time.sleep(self.server.proxy.latency)  # one round trip's worth, per request and connection
        if not self.server.proxy._authorized(self.headers):
            self._send_plain(401, "Unauthorized", b"missing or wrong authentication headers")
            return
        fault = self.server.proxy._admit(self.command, self.path)
        if fault in (Fault.RESET_CONNECTION, Fault.CLOSE_CONNECTION):
            self._drop_connection(reset=fault is Fault.RESET_CONNECTION)
        elif fault is not None:
            self._send_error_document(fault)
        else:
            self._forward(body)

    do_GET = do_HEAD = do_PUT = do_POST = do_DELETE = _relay

    def _read_request_body(self) -> bytes | None:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            return self._read_chunked_body()
        length = self.headers.get("Content-Length")
        return self.rfile.read(int(length)) if length is not None else None

    def _read_chunked_body(self) -> bytes:
        chunks = []
        while True:
            size = int(self.rfile.readline().split(b";")[0].strip(), 16)
            if size == 0:
                while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                    pass  # trailer fields: nothing here needs them
                return b"".join(chunks)
            chunks.append(self.rfile.read(size))
            self.rfile.readline()

    def _forward(self, body: bytes | None) -> None:
        headers = [(k, v) for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP_HEADERS]
        if body is not None:
            headers = [(k, v) for k, v in headers if k.lower() != "content-length"]
            headers.append(("Content-Length", str(len(body))))
        try:
            response, payload = self._exchange(headers, body)
        except (OSError, http.client.HTTPException) as error:
            self._send_plain(502, "Bad Gateway", f"upstream failed: {error!r}".encode())
            return
        self.send_response_only(response.status, response.reason)
        for name, value in response.getheaders():
            if name.lower() in HOP_BY_HOP_HEADERS:
                continue
            if name.lower() == "content-length" and self.command != "HEAD":
                continue  # re-stated below for the body actually read
            self.send_header(name, value)
        if self.command != "HEAD":
            self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(payload)
        self.server.proxy._count_forwarded_body(len(payload))

    def _exchange(self, headers: list[tuple[str, str]], body: bytes | None) -> tuple[http.client.HTTPResponse, bytes]:
        """Send the request upstream, reconnecting once if the server closed an idle connection."""
        try:
            return self._send_upstream(headers, body)
        except (ConnectionError, http.client.RemoteDisconnected, http.client.CannotSendRequest):
            self._upstream.close()
            return self._send_upstream(headers, body)

    def _send_upstream(
        self, headers: list[tuple[str, str]], body: bytes | None
    ) -> tuple[http.client.HTTPResponse, bytes]:
        self._upstream.putrequest(self.command, self.path, skip_host=True, skip_accept_encoding=True)
        for name, value in headers:
            self._upstream.putheader(name, value)
        self._upstream.endheaders(body)
        response = self._upstream.getresponse()
        return response, response.read()

    def _send_error_document(self, fault: Fault) -> None:
        status, reason, code, message = _ERROR_DOCUMENTS[fault]
        request_id = uuid.uuid4().hex[:16].upper()
        resource = unquote(urlsplit(self.path).path)
        document = (
            '<?xml version="1.0" encoding="UTF-8"?>\n'
            f"<Error><Code>{code}</Code><Message>{message}</Message>"
            f"<Resource>{resource}</Resource><RequestId>{request_id}</RequestId></Error>"
        ).encode()
        self.send_response_only(status, reason)
        self.send_header("Content-Type", "application/xml")
        self.send_header("x-amz-request-id", request_id)
        if self.command == "HEAD":  # HEAD responses never carry a body, as on S3
            self.send_header("Content-Length", "0")
            self.end_headers()
        else:
            self.send_header("Content-Length", str(len(document)))
            self.end_headers()
            self.wfile.write(document)

    def _send_plain(self, status: int, reason: str, text: bytes) -> None:
        self.send_response_only(status, reason)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(text)))
        self.end_headers()
        self.wfile.write(text)

    def _drop_connection(self, *, reset: bool) -> None:
        self.close_connection = True
        if reset:
            # Zero linger turns close() into an RST instead of a FIN.
            # The socket closes for real once rfile, its last buffered file, lets go.
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.rfile.close()
            self.connection.close()
