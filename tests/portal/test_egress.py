"""The egress guard (portal.egress): only the declared endpoint, checked at connect time, no redirects, the
credential only there, bounded. A real upstream HTTP server on loopback plays the endpoint; the resolver is
replaced at the DNS boundary (portal.egress.getaddrinfo) only, to play names that rebind."""

from __future__ import annotations

import json
import socket
import threading
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from portal import egress
from portal.egress import EgressProxy, EgressRefused, Limits, address_refusal, resolve_checked


class _Upstream:
    """A loopback HTTP server that records what reached it; `/redirect` answers 302 elsewhere."""

    def __init__(self):
        self.seen: list[dict] = []
        upstream = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _answer(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                upstream.seen.append({"path": self.path, "headers": dict(self.headers), "body": body})
                if self.path.startswith("/redirect"):
                    self.send_response(302)
                    self.send_header("Location", "http://169.254.169.254/latest/meta-data/")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                out = json.dumps({"ok": True, "path": self.path}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

            do_GET = do_POST = _answer

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def upstream():
    server = _Upstream()
    yield server
    server.close()


def _get(url: str, headers: dict | None = None, data: bytes | None = None):
    request = urllib.request.Request(url, headers=headers or {}, data=data)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def _resolver(*answers: list[str]):
    """A resolver answering the next list of addresses at each call (the last one again once they run out)."""
    calls = []

    def getaddrinfo(host, port, *args, **kwargs):
        addresses = answers[min(len(calls), len(answers) - 1)]
        calls.append(host)
        return [
            (socket.AF_INET6 if ":" in a else socket.AF_INET, socket.SOCK_STREAM, 6, "", (a, port))
            for a in addresses
        ]

    getaddrinfo.calls = calls
    return getaddrinfo


@pytest.mark.parametrize(
    ("address", "reason"),
    [
        ("10.1.2.3", "private"),
        ("172.16.0.9", "private"),
        ("192.168.1.20", "private"),
        ("169.254.169.254", "link-local"),  # the cloud metadata service
        ("127.0.0.1", "loopback"),
        ("::1", "loopback"),
        ("::ffff:127.0.0.1", "loopback"),  # IPv4-mapped loopback is loopback
        ("::ffff:10.0.0.1", "private"),
        ("0.0.0.0", "unspecified"),
        ("224.0.0.251", "multicast"),
        ("240.0.0.1", "private"),  # reserved (Python counts 240/4 as private too)
        ("fe80::1", "link-local"),
        ("fc00::5", "private"),
        ("100.64.0.1", "not-global"),  # carrier-grade NAT
    ],
)
def test_non_global_addresses_are_refused(address, reason):
    assert address_refusal(address, allow_loopback=False) == reason


def test_loopback_is_allowed_only_by_the_setting_and_private_never():
    assert address_refusal("127.0.0.1", allow_loopback=True) is None
    assert address_refusal("::1", allow_loopback=True) is None
    assert address_refusal("10.0.0.1", allow_loopback=True) == "private"
    assert address_refusal("8.8.8.8", allow_loopback=False) is None


def test_a_name_answering_a_public_and_a_private_address_is_refused(monkeypatch):
    monkeypatch.setattr(egress, "getaddrinfo", _resolver(["93.184.216.34", "10.0.0.7"]))
    with pytest.raises(EgressRefused) as refused:
        resolve_checked("api.example.test", 443, allow_loopback=False)
    assert refused.value.code == "egress-address-refused"
    assert "10.0.0.7" in refused.value.detail


def test_the_proxy_forwards_to_the_declared_endpoint_with_the_credential(upstream):
    with EgressProxy(
        f"http://127.0.0.1:{upstream.port}", credential="sk-secret", allow_loopback=True
    ) as proxy:
        status, body = _get(
            proxy.url + "/v1/models", headers={"Authorization": "Bearer stolen", "Host": "evil.example"}
        )
    assert status == 200 and body["path"] == "/v1/models"
    (seen,) = upstream.seen
    assert seen["headers"]["Authorization"] == "Bearer sk-secret"  # the proxy's, never the client's
    assert seen["headers"]["Host"] == f"127.0.0.1:{upstream.port}"
    assert proxy.record.forwarded == 1


def test_loopback_endpoint_is_refused_without_the_setting(upstream):
    with EgressProxy(
        f"http://127.0.0.1:{upstream.port}", credential="sk-secret", allow_loopback=False
    ) as proxy:
        status, body = _get(proxy.url + "/v1/models")
    assert status == 502 and body["error"]["code"] == "egress-address-refused"
    assert upstream.seen == []  # nothing reached it, the credential least of all


def test_a_redirect_is_not_followed(upstream):
    with EgressProxy(f"http://127.0.0.1:{upstream.port}", allow_loopback=True) as proxy:
        status, body = _get(proxy.url + "/redirect")
    assert status == 502 and body["error"]["code"] == "egress-redirect"
    assert [s["path"] for s in upstream.seen] == ["/redirect"]  # the metadata address was never asked
    assert proxy.record.refused == {"egress-redirect": 1}


def test_dns_rebinding_to_a_private_address_is_refused_at_connect_time(upstream, monkeypatch):
    # The name first answers loopback (allowed here), then rebinds to the metadata service's address.
    resolver = _resolver(["127.0.0.1"], ["169.254.169.254"])
    monkeypatch.setattr(egress, "getaddrinfo", resolver)
    with EgressProxy(f"http://endpoint.test:{upstream.port}", credential="sk", allow_loopback=True) as proxy:
        first, _ = _get(proxy.url + "/v1/models")
        second, body = _get(proxy.url + "/v1/models")
    assert first == 200
    assert second == 502 and body["error"]["code"] == "egress-address-refused"
    assert len(resolver.calls) == 2  # resolved again for the second connection, not cached from the first
    assert len(upstream.seen) == 1


def test_other_hosts_and_paths_outside_the_base_are_refused(upstream):
    with EgressProxy(f"http://127.0.0.1:{upstream.port}/openai", allow_loopback=True) as proxy:
        host, port = proxy.url.split("//")[1].split("/")[0].split(":")
        with socket.create_connection((host, int(port))) as sock:
            sock.sendall(b"GET http://169.254.169.254/ HTTP/1.1\r\nHost: 169.254.169.254\r\n\r\n")
            sock.settimeout(10)
            chunks = []
            while chunk := sock.recv(4096):  # the guard closes the connection after its answer
                chunks.append(chunk)
            answer = b"".join(chunks).decode()
        outside, body = _get(proxy.url.removesuffix("/openai") + "/admin")
        inside, _ = _get(proxy.url + "/v1/models")
    assert answer.startswith("HTTP/1.1 403") and "egress-other-host" in answer
    assert outside == 403 and body["error"]["code"] == "egress-path"
    assert inside == 200
    assert [s["path"] for s in upstream.seen] == ["/openai/v1/models"]


def test_the_request_count_is_bounded(upstream):
    with EgressProxy(
        f"http://127.0.0.1:{upstream.port}", allow_loopback=True, limits=Limits(max_requests=2)
    ) as proxy:
        statuses = [_get(proxy.url + "/v1/models")[0] for _ in range(3)]
    assert statuses == [200, 200, 429]
    assert proxy.record.refused == {"egress-request-count": 1}


def test_the_duration_is_bounded(upstream):
    with EgressProxy(
        f"http://127.0.0.1:{upstream.port}", allow_loopback=True, limits=Limits(max_duration_s=0)
    ) as proxy:
        status, body = _get(proxy.url + "/v1/models")
    assert status == 403 and body["error"]["code"] == "egress-duration"
    assert upstream.seen == []


def test_an_endpoint_that_is_down_is_reported_unreachable():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # bound, never listening: connections are refused
        with EgressProxy(
            f"http://127.0.0.1:{port}", allow_loopback=True, limits=Limits(connect_timeout_s=2)
        ) as proxy:
            status, body = _get(proxy.url + "/v1/models")
    assert status == 502 and body["error"]["code"] == "egress-unreachable"
    assert proxy.record.upstream_errors == 1
