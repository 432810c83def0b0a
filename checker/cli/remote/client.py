"""The portal's HTTP API for the `portal` commands: a JSON client with token auth, retries and the
server's rate limit waited out, the errors it raises, and where its answers point (stdlib only, no Django)."""

from __future__ import annotations

import email.utils
import json
import os
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

EXIT_PASS, EXIT_FAIL, EXIT_USAGE = 0, 1, 2
RETRIES = 5
THROTTLED_WAITS = 8  # HTTP 429s waited out per request before giving up
RETRY_AFTER_MAX_S = 120.0


def retry_after_s(header: str | None, *, now: float | None = None) -> float:
    """Seconds to wait from a Retry-After header: delta-seconds or an HTTP date, clamped to 1..RETRY_AFTER_MAX_S
    (5 s when the header is missing or unreadable)."""
    if not header:
        return 5.0
    header = header.strip()
    if header.isascii() and header.isdigit():
        seconds = float(header)
    else:
        try:
            when = email.utils.parsedate_to_datetime(header)
        except (TypeError, ValueError):
            return 5.0
        if when is None or when.tzinfo is None:
            return 5.0
        seconds = when.timestamp() - (time.time() if now is None else now)
    return min(max(seconds, 1.0), RETRY_AFTER_MAX_S)


class RemoteError(Exception):
    """A refusal or transport failure; `code` is the portal's stable error code when it sent one."""

    def __init__(self, message: str, *, http_status: int | None = None, code: str | None = None, body=None):
        super().__init__(message)
        self.http_status, self.code, self.body = http_status, code, body or {}


class Client:
    """A tiny JSON-over-HTTP client for /api/v1/ with token auth."""

    def __init__(self, url: str, token: str, *, timeout: float = 60.0):
        self.base = url.rstrip("/") + "/api/v1/"
        self.token = token
        self.timeout = timeout

    def request(
        self,
        method: str,
        path: str,
        *,
        body=None,
        data: bytes | None = None,
        idempotency_key: str | None = None,
        retries: int = RETRIES,
    ):
        headers = {"Authorization": f"Token {self.token}", "Accept": "application/json"}
        if body is not None:
            data = json.dumps(body).encode("utf-8")
            headers["Content-Type"] = "application/json"
        elif data is not None:
            headers["Content-Type"] = "application/octet-stream"
        if idempotency_key:
            headers["Idempotency-Key"] = idempotency_key
        url = urllib.parse.urljoin(self.base, path)
        delay = 0.5
        throttled = 0
        attempt = -1
        while attempt < retries:
            attempt += 1
            req = urllib.request.Request(url, data=data, method=method, headers=headers)
            try:
                with urllib.request.urlopen(req, timeout=self.timeout) as response:
                    raw = response.read()
                    return json.loads(raw) if raw else None
            except urllib.error.HTTPError as exc:
                raw = exc.read()
                try:
                    payload = json.loads(raw) if raw else {}
                except ValueError:
                    payload = {}
                code = payload.get("code") if isinstance(payload, dict) else None
                if exc.code == 429 and throttled < THROTTLED_WAITS:
                    # The server's rate limit: wait what it asks (Retry-After), then send the same request again.
                    throttled += 1
                    wait = retry_after_s(exc.headers.get("Retry-After"))
                    print(
                        f"portal: rate limited by the server ({path}); retrying in {wait:.0f} s "
                        f"({throttled}/{THROTTLED_WAITS})",
                        file=sys.stderr,
                    )
                    time.sleep(wait)
                    attempt -= 1  # a throttled request was not processed: it does not use up a retry
                    continue
                if exc.code >= 500 or code == "idempotency-key-in-progress":
                    if attempt < retries:
                        time.sleep(delay)
                        delay = min(delay * 2, 10)
                        continue
                detail = payload.get("detail") if isinstance(payload, dict) else None
                raise RemoteError(
                    f"{method} {path}: HTTP {exc.code}: {detail or exc.reason}",
                    http_status=exc.code,
                    code=code,
                    body=payload,
                ) from None
            except (urllib.error.URLError, OSError, TimeoutError) as exc:
                if attempt < retries:
                    time.sleep(delay)
                    delay = min(delay * 2, 10)
                    continue
                raise RemoteError(f"{method} {url}: {getattr(exc, 'reason', exc)}") from None
        raise RemoteError(f"{method} {url}: gave up")  # pragma: no cover


class TokenProblem(RemoteError):
    """No token, or the portal refused it (HTTP 401/403 before anything was done)."""


def portal_url(args) -> str:
    return (args.url or os.environ.get("PORTAL_URL") or "").rstrip("/")


def token_hint(base_url: str) -> str:
    base = base_url.rstrip("/") or "<portal>"
    return (
        f"Create an API token at {base}/accounts/tokens/ (signed in), then give it with --token TOKEN "
        "or set PORTAL_TOKEN."
    )


def client_from_args(args) -> Client:
    url = portal_url(args)
    token = args.token or os.environ.get("PORTAL_TOKEN")
    if not url:
        raise RemoteError("give --url (or set PORTAL_URL): the portal's address", code="usage")
    if not token:
        raise TokenProblem(f"no API token given. {token_hint(url)}", code="usage")
    return Client(url, token)


def token_refused(exc: RemoteError, base_url: str) -> str | None:
    """The sentence to print when the portal refused the token itself (missing, expired or revoked)."""
    detail = str((exc.body or {}).get("detail") or "")
    if exc.http_status == 401 or (
        exc.http_status == 403
        and (exc.code in ("not_authenticated", "authentication_failed") or "token" in detail.lower())
    ):
        return (
            f"the portal refused the API token ({detail or f'HTTP {exc.http_status}'}): it is wrong, expired or "
            f"revoked. {token_hint(base_url)}"
        )
    return None


def web_address(base_url: str, submission: int, version: int | None = None) -> str:
    """The submission's page in the browser (the version's check when one is given)."""
    address = f"{base_url.rstrip('/')}/submissions/{submission}/"
    return f"{address}?version={version}#check" if version is not None else address
