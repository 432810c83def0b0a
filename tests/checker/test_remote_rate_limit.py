"""`portal submit`'s HTTP client and the server's rate limit: a 429 is waited out for as long as Retry-After says
(seconds or a date, clamped), the same request is sent again, and a server that never stops refusing ends in a
clear error rather than an endless loop."""

from __future__ import annotations

import json
import threading
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from checker.cli.remote import client as remote


class _Throttling(BaseHTTPRequestHandler):
    """Answers 429 (Retry-After: 3) to the first `refusals` requests, then 200 with the request it received."""

    refusals = 2
    seen: list[tuple[str, str, bytes]] = []

    def _answer(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        type(self).seen.append((self.command, self.path, body))
        if len(type(self).seen) <= type(self).refusals:
            payload = json.dumps({"code": "throttled", "detail": "Request was throttled."}).encode()
            self.send_response(429)
            self.send_header("Retry-After", "3")
        else:
            payload = json.dumps({"ok": True, "method": self.command}).encode()
            self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_GET = do_POST = do_PUT = _answer

    def log_message(self, *args):  # keep the test output clean
        pass


@pytest.fixture
def throttling_server():
    _Throttling.seen = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Throttling)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", _Throttling
    server.shutdown()
    server.server_close()


def test_a_429_is_waited_out_and_the_same_request_sent_again(throttling_server, monkeypatch, capsys):
    base, handler = throttling_server
    handler.refusals = 2
    waits: list[float] = []
    monkeypatch.setattr(remote.time, "sleep", waits.append)
    client = remote.Client(base, "ep_token")
    answer = client.request("POST", "uploads/", body={"size": 10}, retries=0)
    assert answer == {"ok": True, "method": "POST"}
    assert waits == [3.0, 3.0]  # what Retry-After said, and no retry of the normal budget (retries=0) used
    assert [(m, p) for m, p, _ in handler.seen] == [("POST", "/api/v1/uploads/")] * 3
    assert {b for _, _, b in handler.seen} == {b'{"size": 10}'}
    assert "rate limited by the server (uploads/); retrying in 3 s (1/8)" in capsys.readouterr().err


def test_a_server_that_keeps_refusing_ends_in_a_clear_error(throttling_server, monkeypatch):
    base, handler = throttling_server
    handler.refusals = 1000
    monkeypatch.setattr(remote.time, "sleep", lambda s: None)
    with pytest.raises(remote.RemoteError) as error:
        remote.Client(base, "ep_token").request("GET", "submissions/", retries=2)
    assert error.value.http_status == 429 and "HTTP 429" in str(error.value)
    assert len(handler.seen) == remote.THROTTLED_WAITS + 1


@pytest.mark.parametrize(
    ("header", "seconds"),
    [
        (None, 5.0),
        ("", 5.0),
        ("7", 7.0),
        ("0", 1.0),
        ("100000", remote.RETRY_AFTER_MAX_S),
        ("soon", 5.0),
        ("٣", 5.0),  # a non-ASCII digit is not a number of seconds
        (formatdate(1_000_030, usegmt=True), 30.0),
        (formatdate(999_000, usegmt=True), 1.0),  # a date in the past
    ],
)
def test_retry_after_reads_seconds_and_dates(header, seconds):
    assert remote.retry_after_s(header, now=1_000_000) == pytest.approx(seconds)
