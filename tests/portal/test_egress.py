"""The egress guard (portal.egress): only the declared endpoint, checked at connect time, no redirects, the
credential only there, bounded. A real upstream HTTP server on loopback plays the endpoint; the resolver is
replaced at the DNS boundary (portal.egress.getaddrinfo) only, to play names that rebind."""

from __future__ import annotations

import ipaddress
import json
import socket
import threading
import urllib.error
import urllib.request
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from portal import egress
from portal.egress import EgressProxy, EgressRefused, Limits, Target, address_refusal, resolve_checked
from portal.special_addresses import SPECIAL_BLOCKS


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
        # a short poll: shutdown() waits up to one poll interval (0.5 s by default, paid by every test)
        threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        ).start()

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


def _ends(block) -> list[str]:
    return [str(block.network_address), str(block.broadcast_address)]


@pytest.mark.parametrize(
    "entry", SPECIAL_BLOCKS, ids=[f"{entry.block} {entry.name}" for entry in SPECIAL_BLOCKS]
)
def test_every_special_purpose_registry_entry_is_refused_at_both_ends(entry):
    for address in _ends(entry.block):
        reason = address_refusal(address, allow_loopback=False)
        assert reason is not None, address
        # the most specific entry holding it, or the IPv4 address a form carries
        ip = ipaddress.ip_address(address)
        holding = [
            str(other.block)
            for other in SPECIAL_BLOCKS
            if other.block.version == ip.version and ip in other.block
        ]
        assert any(block in reason for block in holding) or " of " in reason, reason


def test_the_table_holds_both_registries_whole():
    registries = Counter(entry.registry for entry in SPECIAL_BLOCKS)
    assert registries["iana-ipv4-special-registry"] == 26
    assert registries["iana-ipv6-special-registry"] == 25
    assert {str(entry.block) for entry in SPECIAL_BLOCKS} >= {"224.0.0.0/4", "ff00::/8", "::/96"}


# The attack's 33 forms: private, metadata, NAT64 and 6to4, and the other forms an IPv4 address hides in.
HIDDEN_FORMS = [
    ("10.1.2.3", "Private-Use"),
    ("172.16.0.9", "Private-Use"),
    ("192.168.1.20", "Private-Use"),
    ("169.254.169.254", "Link Local"),  # the cloud metadata service
    ("127.0.0.1", "Loopback"),
    ("127.255.255.254", "Loopback"),
    ("::1", "Loopback Address"),
    ("0.0.0.0", "This host on this network"),
    ("::", "Unspecified Address"),
    ("224.0.0.251", "Multicast"),
    ("ff02::fb", "Multicast"),
    ("240.0.0.1", "Reserved"),
    ("255.255.255.255", "Limited Broadcast"),
    ("100.64.0.1", "Shared Address Space"),
    ("192.0.0.170", "NAT64/DNS64 Discovery"),
    ("198.18.0.1", "Benchmarking"),
    ("fe80::1", "Link-Local Unicast"),
    ("fe80::1%eth0", "Link-Local Unicast"),
    ("fc00::5", "Unique-Local"),
    ("fd00:ec2::254", "Unique-Local"),  # the IPv6 metadata service
    ("::ffff:127.0.0.1", "IPv4-mapped of 127.0.0.1"),
    ("::ffff:10.0.0.1", "IPv4-mapped of 10.0.0.1"),
    ("::ffff:169.254.169.254", "IPv4-mapped of 169.254.169.254"),
    ("::169.254.169.254", "IPv4-compatible of 169.254.169.254"),
    ("::127.0.0.1", "IPv4-compatible of 127.0.0.1"),
    ("64:ff9b::a9fe:a9fe", "NAT64 of 169.254.169.254"),
    ("64:ff9b::7f00:1", "NAT64 of 127.0.0.1"),
    ("64:ff9b:1:a9fe:a9:fe00::", "NAT64 local-use of 169.254.169.254"),
    ("64:ff9b:1:0a00:0:0100::", "NAT64 local-use of 10.0.0.1"),
    ("2002:a9fe:a9fe::", "6to4 of 169.254.169.254"),  # the issue's: is_global was true
    ("2002:7f00:1::", "6to4 of 127.0.0.1"),
    ("2002:c0a8:0101::1", "6to4 of 192.168.1.1"),
    ("2001:0:4136:e378:8000:63bf:5601:5601", "Teredo of 169.254.169.254"),  # a Teredo client, bits inverted
]


@pytest.mark.parametrize(("address", "reason"), HIDDEN_FORMS)
def test_private_metadata_and_tunnelled_forms_are_refused(address, reason):
    refusal = address_refusal(address, allow_loopback=False)
    assert refusal is not None and refusal.startswith(reason), refusal


@pytest.mark.parametrize(
    "address",
    [
        "8.8.8.8",
        "1.1.1.1",
        "2001:4860:4860::8888",
        "2a00:1450:4001::1",
        "2002:808:808::1",
        "64:ff9b::808:808",
    ],
)
def test_public_addresses_and_forms_carrying_a_public_ipv4_address_are_allowed(address):
    assert address_refusal(address, allow_loopback=False) is None


def test_loopback_is_allowed_only_by_the_setting_and_private_never():
    assert address_refusal("127.0.0.1", allow_loopback=True) is None
    assert address_refusal("::1", allow_loopback=True) is None
    assert address_refusal("10.0.0.1", allow_loopback=True).startswith("Private-Use")
    # the setting reaches this machine's own loopback, never one carried inside a tunnel form
    assert address_refusal("2002:7f00:1::", allow_loopback=True) is not None
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


def test_a_6to4_address_carrying_the_metadata_address_is_never_connected_to(upstream, monkeypatch):
    monkeypatch.setattr(egress, "getaddrinfo", _resolver(["2002:a9fe:a9fe::"]))
    with EgressProxy(f"http://endpoint.test:{upstream.port}", credential="sk", allow_loopback=True) as proxy:
        status, body = _get(proxy.url + "/v1/models")
    assert status == 502 and body["error"]["code"] == "egress-address-refused"
    assert "6to4 of 169.254.169.254" in body["error"]["message"]
    assert upstream.seen == []


def _raw(proxy_url: str, request: bytes) -> str:
    host, port = proxy_url.split("//")[1].split("/")[0].split(":")
    with socket.create_connection((host, int(port))) as sock:
        sock.sendall(request)
        sock.settimeout(10)
        chunks = []
        while chunk := sock.recv(4096):
            chunks.append(chunk)
    return b"".join(chunks).decode(errors="replace")


@pytest.mark.parametrize(
    "path",
    [
        "/v1/../admin",
        "/v1/./../admin",
        "/v1/..%2f..%2fadmin",
        "/v1/%2e%2e/admin",
        "/v1/%2E%2E/%2E%2E/admin",
        "/v1%2f..%2fadmin",
        "/v1/..\\admin",
        "/v1/models/..",
        "//v1/../admin",
        "/admin",
        "/v1admin",
    ],
)
def test_a_path_leaving_the_base_path_is_refused_and_never_forwarded(upstream, path):
    with EgressProxy(
        f"http://127.0.0.1:{upstream.port}/v1", credential="sk-secret", allow_loopback=True
    ) as proxy:
        answer = _raw(proxy.url, f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    assert answer.startswith("HTTP/1.1 403") and "egress-path" in answer, answer
    assert upstream.seen == []  # nothing forwarded, the credential least of all


def test_paths_under_the_base_are_normalised_and_forwarded(upstream):
    with EgressProxy(f"http://127.0.0.1:{upstream.port}/v1", allow_loopback=True) as proxy:
        answer = _raw(proxy.url, b"GET /v1//models?x=1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    assert answer.startswith("HTTP/1.1 200")
    assert [seen["path"] for seen in upstream.seen] == ["/v1/models?x=1"]


@pytest.mark.parametrize(
    "length_headers",
    [
        b"Content-Length: abc\r\n",
        b"Content-Length: -5\r\n",
        b"Content-Length: 1e3\r\n",
        b"Content-Length: \xd9\xa1\r\n",  # an Arabic-Indic digit one: int() reads it, HTTP does not
        b"Content-Length: 99999999999999999999999\r\n",
        b"Content-Length: 2\r\nContent-Length: 3\r\n",
        b"Transfer-Encoding: chunked\r\n",
    ],
)
def test_a_bad_content_length_gets_400_from_the_guard(upstream, length_headers):
    with EgressProxy(f"http://127.0.0.1:{upstream.port}", allow_loopback=True) as proxy:
        answer = _raw(
            proxy.url, b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n" + length_headers + b"\r\nab"
        )
    assert answer.startswith("HTTP/1.1 400") and "egress-bad-request" in answer, answer
    assert upstream.seen == []


@pytest.mark.parametrize(
    "url",
    [
        "http://[::1/",
        "http://[x]/",
        "http://h:0/",
        "http://h:99999/",
        "http://h/v1/../x",
        "http://h/a%2fb",
        "http://u@h/",
    ],
)
def test_the_guard_refuses_a_bad_url_with_its_code(url):
    with pytest.raises(EgressRefused) as refused:
        Target.from_url(url)
    assert refused.value.code == "egress-url"


def test_a_credential_with_a_line_break_is_never_sent(upstream):
    with pytest.raises(EgressRefused) as refused:
        EgressProxy(f"http://127.0.0.1:{upstream.port}", credential="sk\r\nX-Evil: 1", allow_loopback=True)
    assert refused.value.code == "egress-credential"
