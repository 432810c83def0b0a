"""Reading request input safely: ids as plain ASCII decimals within the database's range, and API bodies (JSON,
forms) with a size and nesting cap and only storable text. Every refusal is a 400 with a stable code."""

from __future__ import annotations

import json
import math
import re
from typing import Any

from django.conf import settings
from django.http import QueryDict
from rest_framework import parsers
from rest_framework.exceptions import ParseError

from portal.errors import ApplicationError
from portal.textsafety import require_storable, require_storable_form

BIGINT_MAX = 2**63 - 1  # PostgreSQL bigint, the type of every id and count column
_ASCII_DECIMAL = re.compile(r"[0-9]{1,19}")
_ASCII_DIGITS = re.compile(r"[0-9]+")


def parse_id(value: Any) -> int | None:
    """An id or number from a URL, query string or form: ASCII digits only (never '²' or '١', which str.isdigit()
    accepts), no sign, within bigint range; None for anything else, which callers answer with a 404 or ignore."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if 0 <= value <= BIGINT_MAX else None
    if not isinstance(value, str) or not _ASCII_DECIMAL.fullmatch(value):
        return None
    number = int(value)
    return number if number <= BIGINT_MAX else None


def parse_positive(value: Any, *, default: int, maximum: int = BIGINT_MAX) -> int:
    """A page number, line or page size from the query string: `default` unless a plain ASCII decimal >= 1; a
    larger one than `maximum` (however many digits) is clamped to `maximum`, not refused."""
    if not isinstance(value, str) or not _ASCII_DIGITS.fullmatch(value):
        return default
    digits = value.lstrip("0")
    if not digits:
        return default
    return maximum if len(digits) > 19 else min(int(digits), maximum)


class BodyError(ApplicationError):
    """An API body the portal refuses to read: too large, nested too deep, or not JSON it can store."""

    status_code = 400


def json_depth_exceeds(value: Any, limit: int) -> bool:
    """True when arrays/objects nest more than `limit` levels (the top-level container is level 1)."""
    pending: list[tuple[Any, int]] = [(value, 1)]
    while pending:
        item, depth = pending.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        if children is None:
            continue
        if depth > limit:
            return True
        pending.extend((child, depth + 1) for child in children)
    return False


def _finite_float(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise BodyError(
            f"The number {text[:40]} is too large to store; send a finite number.",
            code="json-number-too-large",
        )
    return number


def _bounded_int(text: str) -> int:
    number = int(text)
    if abs(number) > BIGINT_MAX:
        raise BodyError(
            f"The number {text[:40]}{'…' if len(text) > 40 else ''} is out of range (at most 19 digits, "
            f"±{BIGINT_MAX}).",
            code="json-number-too-large",
        )
    return number


def _refuse_constant(name: str):
    raise ParseError(f"JSON parse error - {name} is not a number JSON allows; send null or a finite number.")


def _read_capped(stream, what: str) -> bytes:
    cap = settings.PORTAL_API_BODY_MAX_BYTES
    data = stream.read(cap + 1) if stream is not None else b""
    if len(data) > cap:
        raise BodyError(
            f"The {what} body is larger than {cap:,} bytes; send less (files go through /api/v1/uploads/).",
            code="body-too-large",
        )
    return data


def load_json_body(data: bytes, *, encoding: str = "utf-8") -> Any:
    """Parse an API JSON body: valid UTF-8, finite numbers in bigint range, at most PORTAL_API_JSON_MAX_DEPTH
    levels, only storable text (see textsafety)."""
    max_depth = settings.PORTAL_API_JSON_MAX_DEPTH
    try:
        text = data.decode(encoding)
    except (UnicodeDecodeError, LookupError) as exc:
        raise ParseError(f"JSON parse error - the body is not valid {encoding}: {exc.reason}.") from None
    too_deep = BodyError(
        f"The JSON body nests arrays/objects more than {max_depth} levels deep.", code="json-too-deep"
    )
    try:
        value = json.loads(
            text, parse_float=_finite_float, parse_int=_bounded_int, parse_constant=_refuse_constant
        )
    except RecursionError:
        raise too_deep from None
    except ValueError as exc:  # syntax errors, and integers longer than Python converts
        raise ParseError(f"JSON parse error - {exc}") from None
    if json_depth_exceeds(value, max_depth):
        raise too_deep
    require_storable(value)
    return value


class SafeJSONParser(parsers.JSONParser):
    """DRF's JSON parser with the portal's caps (size, depth, numbers) and text check."""

    def parse(self, stream, media_type=None, parser_context=None):
        encoding = (parser_context or {}).get("encoding", settings.DEFAULT_CHARSET)
        return load_json_body(_read_capped(stream, "JSON"), encoding=encoding)


class SafeFormParser(parsers.FormParser):
    """URL-encoded forms, capped in size, with only storable text."""

    def parse(self, stream, media_type=None, parser_context=None):
        encoding = (parser_context or {}).get("encoding", settings.DEFAULT_CHARSET)
        text = _read_capped(stream, "form").decode(encoding, errors="replace")
        data = QueryDict(text, encoding=encoding)
        require_storable_form(data)
        return data


class SafeMultiPartParser(parsers.MultiPartParser):
    """Multipart forms (Django caps the size of their text fields); text fields must be storable. The files are
    read by whoever takes them (e.g. a system_desc.json through submissions.system_desc)."""

    def parse(self, stream, media_type=None, parser_context=None):
        result = super().parse(stream, media_type, parser_context)
        require_storable_form(result.data)
        return result


PARSER_CLASSES = [SafeJSONParser, SafeFormParser, SafeMultiPartParser]
