"""The egress guard: the one way a spot-check reaches outside (docs/remeasurement.md, "Safe by construction").

A load generator never talks to the declared endpoint itself. The spot-check worker starts an `EgressProxy` on
loopback and points the load generator at it; the proxy forwards each request to the one declared endpoint and
nowhere else:

* only the declared scheme, host and port, and only paths under the declared base path; a request line naming
  another host (a forward-proxy request, CONNECT) is refused;
* the host is resolved at every connection, and every address it resolves to is checked before connecting: private,
  loopback, link-local, multicast, reserved, unspecified and every other non-global address is refused (loopback
  only when PORTAL_EGRESS_ALLOW_LOOPBACK is set: tests and the demo), and the proxy connects to the address it
  checked, so a name rebinding to a private address between check and use gains nothing;
* redirects are never followed: a 3xx answer becomes a 502 and a recorded refusal;
* the credential is added by the proxy (the load generator never holds it) and sent only on connections to the
  declared host; the client's own Authorization, Host and Proxy-* headers are dropped;
* connect and read timeouts, a bound on the number of requests and on the proxy's lifetime, and a rate limit per
  endpoint (requests per second, shared by every proxy of this process).

Plain Python (no Django): settings are passed in by the caller (spotchecks.services).
"""

from __future__ import annotations

import http.client
import ipaddress
import json
import socket
import ssl
import sys
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote, urlsplit

from portal.special_addresses import GLOBAL_UNICAST_V6, LOOPBACK_BLOCKS, embedded_ipv4, special_block

# The DNS boundary: tests replace this (and only this) to play a resolver that rebinds.
getaddrinfo = socket.getaddrinfo

HOP_BY_HOP = {
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "proxy-connection",
    "te",
    "trailer",
    "trailers",
    "transfer-encoding",
    "upgrade",
}
DROPPED_REQUEST_HEADERS = HOP_BY_HOP | {"host", "authorization", "content-length", "cookie", "x-api-key"}
MAX_BODY_BYTES = 8 * 1024 * 1024


class EgressRefused(Exception):
    """A request the guard does not send; `code` is stable (docs/remeasurement.md lists them)."""

    def __init__(self, code: str, detail: str) -> None:
        super().__init__(detail)
        self.code = code
        self.detail = detail


def address_refusal(address: str, *, allow_loopback: bool) -> str | None:
    """Why an address may not be reached (None: it may), by the IANA special-purpose registries
    (portal.special_addresses): every entry is refused, an IPv6 form carrying an IPv4 address (IPv4-mapped or
    -compatible, NAT64, 6to4, Teredo) is judged by the IPv4 address it carries, and IPv6 outside global unicast is
    refused. Loopback only with `allow_loopback` (tests and the demo)."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and (carried := embedded_ipv4(ip)) is not None:
        form, inner = carried
        # the loopback setting reaches this machine's own loopback, never one carried inside another form
        reason = address_refusal(str(inner), allow_loopback=False)
        return None if reason is None else f"{form} of {inner}: {reason}"
    if allow_loopback and any(ip in block for block in LOOPBACK_BLOCKS if block.version == ip.version):
        return None
    entry = special_block(ip)
    if entry is not None:
        return f"{entry.name}, {entry.block}, {entry.rfc}"
    if isinstance(ip, ipaddress.IPv6Address) and ip not in GLOBAL_UNICAST_V6:
        return f"outside IPv6 global unicast {GLOBAL_UNICAST_V6}"
    return None


def resolve_checked(host: str, port: int, *, allow_loopback: bool) -> list[str]:
    """Resolve `host` now and check every address; refuse when any is not allowed (a name answering both a public
    and a private address is refused: which one a client would pick is not ours to guess)."""
    try:
        infos = getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise EgressRefused("egress-dns", f"{host} does not resolve ({exc}).") from exc
    addresses = list(dict.fromkeys(info[4][0] for info in infos))
    if not addresses:
        raise EgressRefused("egress-dns", f"{host} resolves to no address.")
    for address in addresses:
        reason = address_refusal(address, allow_loopback=allow_loopback)
        if reason is not None:
            raise EgressRefused(
                "egress-address-refused",
                f"{host} resolves to {address} ({reason}): the portal does not go there.",
            )
    return addresses


@dataclass(frozen=True)
class Target:
    """The declared endpoint: the only place the proxy sends anything."""

    scheme: str
    host: str
    port: int
    base_path: str

    @classmethod
    def from_url(cls, url: str) -> Target:
        """The endpoint a URL declares; EgressRefused `egress-url` (with a sentence a submitter can act on) for
        anything else: the same check at declaration (submissions.endpoints) and when a spot-check starts."""
        url = url.strip()
        if _unprintable(url):
            raise EgressRefused(
                "egress-url", "The endpoint URL holds a space, a control or a non-ASCII character."
            )
        try:
            parts = urlsplit(url)
            port = parts.port
        except ValueError as exc:
            raise EgressRefused(
                "egress-url", f"The endpoint URL cannot be read ({exc}): give http(s)://host[:port][/path]."
            ) from exc
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise EgressRefused(
                "egress-url",
                "The endpoint URL must be http(s)://host[:port][/path], e.g. https://api.example.com/v1.",
            )
        if "@" in parts.netloc:
            raise EgressRefused(
                "egress-url",
                "Put the credential in its own field, not in the URL (the URL may be shown to auditors).",
            )
        if parts.query or parts.fragment or url.endswith(("?", "#")):
            raise EgressRefused(
                "egress-url", "The endpoint URL takes no query or fragment: give the API's base URL."
            )
        if port == 0:
            raise EgressRefused("egress-url", "Port 0 is not a port an endpoint listens on: give 1 to 65535.")
        if not _host_is_valid(parts.hostname, bracketed=parts.netloc.startswith("[")):
            raise EgressRefused(
                "egress-url",
                f"{parts.hostname!r} is not a host name (letters, digits, '-' and '.') or an IP address.",
            )
        base_path = parts.path.rstrip("/")
        if base_path:
            try:
                confined_path(base_path, "")
            except EgressRefused as exc:
                raise EgressRefused("egress-url", f"The endpoint URL's path: {exc.detail}") from exc
        return cls(parts.scheme, parts.hostname, port or (443 if parts.scheme == "https" else 80), base_path)


def _unprintable(text: str) -> bool:
    return any(not (0x21 <= ord(character) <= 0x7E) for character in text)


def _host_is_valid(host: str, *, bracketed: bool) -> bool:
    if bracketed:
        try:
            return isinstance(ipaddress.ip_address(host), ipaddress.IPv6Address)
        except ValueError:
            return False
    labels = host.split(".")
    return len(host) <= 253 and all(
        0 < len(label) <= 63
        and label.replace("-", "").replace("_", "").isascii()
        and label.replace("-", "").replace("_", "").isalnum()
        for label in labels
    )


def confined_path(path: str, base_path: str) -> str:
    """The request target to forward for a client's `path`: repeated slashes merged, and only under `base_path`.
    Refused (`egress-path`): a dot segment (`.`, `..`, percent-encoded too), an encoded slash or backslash, a
    backslash, a space, control or non-ASCII character; `egress-other-host` for anything but an origin-form path."""
    if not path.startswith("/"):
        raise EgressRefused("egress-other-host", "Only paths of the declared endpoint are forwarded.")
    if _unprintable(path):
        raise EgressRefused(
            "egress-path", "A path with a space, a control or a non-ASCII character is refused."
        )
    route, question, query = path.partition("?")
    if "\\" in route or "%2f" in route.lower() or "%5c" in route.lower():
        raise EgressRefused("egress-path", f"{route[:200]} holds an encoded slash or a backslash: refused.")
    if any(segment in (".", "..") for segment in unquote(route).split("/")):
        raise EgressRefused("egress-path", f"{route[:200]} holds a dot segment ('.' or '..'): refused.")
    while "//" in route:
        route = route.replace("//", "/")
    if base_path and not (route == base_path or route.startswith(base_path + "/")):
        raise EgressRefused("egress-path", f"{route[:200]} is not under the declared base path {base_path}.")
    return route + question + query


def credential_refusal(credential: str) -> str | None:
    """Why a credential cannot be sent as a header value (None: it can)."""
    if any(ord(character) < 0x20 or ord(character) == 0x7F for character in credential):
        return "The credential holds a line break or another control character: paste the key alone."
    return None


@dataclass
class Limits:
    connect_timeout_s: float = 5.0
    read_timeout_s: float = 60.0
    max_requests: int = 2000
    max_duration_s: float = 600.0
    rate_per_s: float = 50.0


class _RateLimiter:
    """Token bucket per endpoint, shared by every proxy of this process: requests wait for their turn."""

    _buckets: dict[tuple[str, int], list[float]] = {}
    _lock = threading.Lock()

    @classmethod
    def wait(cls, key: tuple[str, int], rate_per_s: float, deadline: float) -> bool:
        while True:
            with cls._lock:
                now = time.monotonic()
                tokens, last = cls._buckets.get(key, [rate_per_s, now])
                tokens = min(rate_per_s, tokens + (now - last) * rate_per_s)
                if tokens >= 1.0:
                    cls._buckets[key] = [tokens - 1.0, now]
                    return True
                cls._buckets[key] = [tokens, now]
                pause = (1.0 - tokens) / rate_per_s
            if time.monotonic() + pause > deadline:
                return False
            time.sleep(pause)


@dataclass
class Record:
    """What the proxy did: requests forwarded, refusals by code (kept with the spot-check's evidence)."""

    forwarded: int = 0
    refused: dict[str, int] = field(default_factory=dict)
    upstream_errors: int = 0
    last_refusal: str = ""

    def refuse(self, code: str, detail: str) -> None:
        self.refused[code] = self.refused.get(code, 0) + 1
        self.last_refusal = detail


class _CheckedConnection(http.client.HTTPConnection):
    """An HTTP connection that resolves and checks its host at connect time and connects to the checked address."""

    def __init__(self, target: Target, *, allow_loopback: bool, limits: Limits) -> None:
        super().__init__(target.host, target.port, timeout=limits.connect_timeout_s)
        self._target = target
        self._allow_loopback = allow_loopback
        self._limits = limits

    def connect(self) -> None:
        addresses = resolve_checked(self._target.host, self._target.port, allow_loopback=self._allow_loopback)
        last_error: OSError | None = None
        for address in addresses:
            try:
                sock = socket.create_connection(
                    (address, self._target.port), timeout=self._limits.connect_timeout_s
                )
            except OSError as exc:
                last_error = exc
                continue
            sock.settimeout(self._limits.read_timeout_s)
            if self._target.scheme == "https":
                context = ssl.create_default_context()
                sock = context.wrap_socket(sock, server_hostname=self._target.host)
            self.sock = sock
            return
        raise last_error or OSError(f"cannot connect to {self._target.host}")


class _Server(ThreadingHTTPServer):
    def handle_error(self, request, client_address) -> None:
        # A load generator that cancels its in-flight requests at the end of its run resets their connections:
        # nothing went wrong with the endpoint, and nothing to print.
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


class EgressProxy:
    """A loopback HTTP server forwarding to the declared endpoint only. Use as a context manager; `url` is what
    the load generator targets (the declared base path included)."""

    def __init__(
        self,
        endpoint_url: str,
        *,
        credential: str | None = None,
        allow_loopback: bool = False,
        limits: Limits | None = None,
        bind_port: int = 0,
    ) -> None:
        self.target = Target.from_url(endpoint_url)
        if credential and (problem := credential_refusal(credential)) is not None:
            raise EgressRefused("egress-credential", problem)
        self.credential = credential
        self.allow_loopback = allow_loopback
        self.limits = limits or Limits()
        self.record = Record()
        self._lock = threading.Lock()
        self._started = time.monotonic()
        self._server = _Server(("127.0.0.1", bind_port), self._handler_class())
        self._server.daemon_threads = True
        # closing waits for the serving loop's next poll: 0.05 s rather than socketserver's 0.5 s, for every run
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="egress-proxy",
            daemon=True,
        )

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}{self.target.base_path}"

    def __enter__(self) -> EgressProxy:
        self._started = time.monotonic()
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _admit(self, path: str) -> str:
        """The path to forward (confined under the base path); refuse what the guard never sends; count the request
        against its bounds."""
        path = confined_path(path, self.target.base_path)
        deadline = self._started + self.limits.max_duration_s
        if time.monotonic() > deadline:
            raise EgressRefused("egress-duration", "The spot-check's time is up.")
        with self._lock:
            if self.record.forwarded >= self.limits.max_requests:
                raise EgressRefused("egress-request-count", f"More than {self.limits.max_requests} requests.")
            self.record.forwarded += 1
        if not _RateLimiter.wait((self.target.host, self.target.port), self.limits.rate_per_s, deadline):
            raise EgressRefused(
                "egress-rate", "The endpoint's rate limit leaves no room before the deadline."
            )
        return path

    def _handler_class(self) -> type[_GuardHandler]:
        return type("Handler", (_GuardHandler,), {"proxy": self})


def _body_length(headers) -> int | None:
    """The request body's length: 0 without Content-Length, None when it is not one plain number or the body is
    chunked (the guard forwards only bodies of a stated length)."""
    if headers.get("Transfer-Encoding") is not None:
        return None
    values = headers.get_all("Content-Length") or []
    if not values:
        return 0
    if len(values) > 1 or not (values[0].isascii() and values[0].isdigit()) or len(values[0]) > 18:
        return None
    return int(values[0])


class _GuardHandler(BaseHTTPRequestHandler):
    """One client connection to the guard: admitted by the proxy's rules, forwarded to the one declared endpoint
    over a checked connection, the answer streamed back. `proxy` is set per guard (EgressProxy._handler_class)."""

    protocol_version = "HTTP/1.1"
    proxy: EgressProxy

    def log_message(self, format, *args):  # noqa: A002 - the stdlib's name
        pass

    def _refuse(self, status: int, code: str, detail: str) -> None:
        with self.proxy._lock:
            self.proxy.record.refuse(code, detail)
        body = json.dumps({"error": {"code": code, "message": detail}}).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)
        self.close_connection = True

    def do_CONNECT(self):  # noqa: N802 - http.server's name
        self._refuse(405, "egress-other-host", "CONNECT is refused: the proxy goes to one endpoint only.")

    def do_GET(self):  # noqa: N802
        self._forward()

    def do_POST(self):  # noqa: N802
        self._forward()

    def _forward(self) -> None:
        proxy = self.proxy
        length = _body_length(self.headers)
        if length is None:
            self._refuse(
                400,
                "egress-bad-request",
                "The request's Content-Length is not one plain number, or it is chunked: send one body of a stated length.",
            )
            return
        try:
            path = proxy._admit(self.path)
        except EgressRefused as exc:
            self._refuse(
                429 if exc.code in ("egress-rate", "egress-request-count") else 403,
                exc.code,
                exc.detail,
            )
            return
        if length > MAX_BODY_BYTES:
            self._refuse(413, "egress-body", "The request body is too large.")
            return
        body = self.rfile.read(length) if length else None
        headers = {k: v for k, v in self.headers.items() if k.lower() not in DROPPED_REQUEST_HEADERS}
        if proxy.credential:
            headers["Authorization"] = f"Bearer {proxy.credential}"
        connection = _CheckedConnection(
            proxy.target, allow_loopback=proxy.allow_loopback, limits=proxy.limits
        )
        try:
            response = self._upstream(connection, path=path, body=body, headers=headers)
            if response is None:
                return
            http_status = response.getcode()
            if 300 <= http_status < 400:
                location = response.getheader("Location", "")
                self._refuse(
                    502,
                    "egress-redirect",
                    f"The endpoint redirected ({http_status} to {location[:200]}): not followed.",
                )
                return
            self._relay(response)
        finally:
            connection.close()

    def _upstream(
        self, connection: _CheckedConnection, *, path: str, body, headers
    ) -> http.client.HTTPResponse | None:
        """The endpoint's answer to the request, or None once the client was told why there is none."""
        try:
            connection.request(self.command, path, body=body, headers=headers)
            return connection.getresponse()
        except EgressRefused as exc:
            self._refuse(502, exc.code, exc.detail)
        except (OSError, http.client.HTTPException) as exc:
            with self.proxy._lock:
                self.proxy.record.upstream_errors += 1
            self._refuse(
                502, "egress-unreachable", f"{self.proxy.target.host}: {exc.__class__.__name__}: {exc}"
            )
        return None

    def _relay(self, response: http.client.HTTPResponse) -> None:
        """Stream the answer back as it arrives (a streamed completion's first token must not wait)."""
        self.send_response(response.status)
        for key, value in response.getheaders():
            if key.lower() not in HOP_BY_HOP | {"content-length", "set-cookie"}:
                self.send_header(key, value)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            while True:
                chunk = response.read1(65536)
                if not chunk:
                    break
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (OSError, http.client.HTTPException):
            with self.proxy._lock:
                self.proxy.record.upstream_errors += 1
            self.close_connection = True
