"""A small HTTP client for the tests that talk to a real gunicorn (tests/submissions/conftest.py live_portal)."""

from __future__ import annotations

import http.client
import json
import urllib.parse

from rest_framework.authtoken.models import Token

from tests.submissions.support import sha256_of


class LiveClient:
    """JSON requests with a token against a live portal; every answer is (status, parsed JSON or text)."""

    def __init__(self, base_url: str, user, *, timeout: float = 120.0):
        parsed = urllib.parse.urlsplit(base_url)
        self.host, self.port = parsed.hostname, parsed.port
        self.timeout = timeout
        token, _ = Token.objects.get_or_create(user=user)
        self.token = token.key

    def request(
        self, method: str, path: str, *, body=None, data: bytes | None = None, chunked=False, headers=None
    ):
        connection = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
        sent = {"Authorization": f"Token {self.token}", "Accept": "application/json", **(headers or {})}
        if body is not None:
            data = json.dumps(body).encode()
            sent["Content-Type"] = "application/json"
        elif data is not None:
            sent["Content-Type"] = "application/octet-stream"
        try:
            if chunked:  # no Content-Length: the body goes as Transfer-Encoding: chunked, in 64 KiB chunks
                pieces = [data[i : i + 65536] for i in range(0, len(data), 65536)]
                connection.request(method, path, body=iter(pieces), headers=sent, encode_chunked=True)
            else:
                connection.request(method, path, body=data, headers=sent)
            response = connection.getresponse()
            raw = response.read()
        finally:
            connection.close()
        try:
            return response.status, json.loads(raw)
        except ValueError:
            return response.status, raw.decode("utf-8", "replace")

    def start_upload(self, *, submission_id: int, name: str, data: bytes) -> dict:
        status, upload = self.request(
            "POST",
            "/api/v1/uploads/",
            body={
                "submission": submission_id,
                "filename": name,
                "size": len(data),
                "sha256": sha256_of(data),
            },
        )
        assert status == 201, upload
        return upload

    def send_parts(self, upload: dict, data: bytes, *, chunked=False) -> None:
        size = upload["part_size"]
        for index in range(upload["parts_expected"]):
            status, body = self.request(
                "PUT",
                f"/api/v1/uploads/{upload['id']}/parts/{index}/",
                data=data[index * size : (index + 1) * size],
                chunked=chunked,
            )
            assert status == 200, body

    def finish(self, upload: dict, data: bytes):
        return self.request(
            "POST", f"/api/v1/uploads/{upload['id']}/finish/", body={"sha256": sha256_of(data)}
        )
