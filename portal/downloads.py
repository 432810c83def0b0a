"""A stored file as an HTTP download: streamed, exact, named safely, with its SHA-256 (every page and API route that
hands out an uploaded file answers with this)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol

from django.http import StreamingHttpResponse


class StoredRecord(Protocol):
    original_filename: str
    size_bytes: int
    sha256: str


def stored_download(chunks: Iterator[bytes], record: StoredRecord) -> StreamingHttpResponse:
    """`chunks` (the stored bytes, streamed) as an attachment named after `record`.

    The name in Content-Disposition keeps ASCII letters, digits and "._-" only, so no upload name can
    inject a header or a path."""
    response = StreamingHttpResponse(chunks, content_type="application/octet-stream")
    response["Content-Length"] = str(record.size_bytes)
    safe_name = (
        "".join(ch for ch in record.original_filename if (ch.isascii() and ch.isalnum()) or ch in "._-")
        or "file"
    )
    response["Content-Disposition"] = f'attachment; filename="{safe_name}"'
    response["ETag"] = f'"{record.sha256}"'
    response["X-Content-SHA256"] = record.sha256
    return response
