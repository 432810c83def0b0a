"""The public read cache: every public table, query answer and API response is cached under a generation
counter that starts anew after a publication, an annotation or a retraction commits (the workflow's
`public_changed` signal, leaderboard.publishing.signals, which this module hears; the workflow never imports it).

Keys carry the database name as well, so two deployments (or two test processes) sharing one Redis never read
each other's entries. Responses carry an ETag (SHA-256 of the body) and a Last-Modified (when the generation
last changed) and answer a conditional GET with 304.
"""

from __future__ import annotations

import hashlib
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from django.contrib.messages import get_messages
from django.core.cache import cache
from django.db import connection
from django.http import HttpRequest, HttpResponse, HttpResponseNotModified
from django.utils.cache import patch_vary_headers
from django.utils.http import http_date, parse_http_date_safe

ENTRY_TIMEOUT_S = 24 * 3600
_MEMO_SIZE = 32
_memo: OrderedDict[tuple, Any] = OrderedDict()


def _namespace() -> str:
    return f"leaderboard:public:{connection.settings_dict.get('NAME')}"


# the generation a cached response is being built under (cached_response), per thread: what it reads from the
# public caches while it is built belongs to that one generation, read once per request instead of per lookup
_building = threading.local()


# A snapshot of this many results or more is set apart from the cyclic garbage collector once built (settle_large):
# below it the collector's passes cost nothing worth a full collection
SETTLE_FROM_RESULTS = 1_000


def settle_large(results: list) -> None:
    """Once a large snapshot and its index are built in this process (a new public generation), collect once and
    move every object the collector tracks into its permanent generation (gc.freeze), so that its later full
    passes do not walk them. At 10,000 results a full pass walked ~610,000 objects in ~0.4 s, and the rows the
    answers keep (GoodputIndex's per-point rows) set one off every few hundred requests in each web process: the
    requests caught in one were the goodput SLO's p99 (docs/performance.md). What is frozen is still freed when
    no longer referenced (the snapshot of an earlier generation is plain lists and dicts, without cycles)."""
    if len(results) < SETTLE_FROM_RESULTS:
        return
    import gc

    gc.collect()
    gc.freeze()


def public_generation() -> tuple[int | None, int]:
    """(generation, when it last changed as a Unix time); started from the clock when the cache has neither, so
    that a cleared or restarted cache never repeats a generation this process still holds entries of. The
    generation is None when the cache cannot be reached (portal.cache_backend): nothing is cached or read then.
    Inside cached_response's build, the generation the response is cached under."""
    current = getattr(_building, "generation", None)
    if current is not None:
        return current
    generation_key, changed_key = f"{_namespace()}:generation", f"{_namespace()}:changed"
    values = cache.get_many([generation_key, changed_key])
    if generation_key not in values or changed_key not in values:
        cache.add(generation_key, time.time_ns() // 1000, None)
        cache.add(changed_key, int(time.time()), None)
        values = cache.get_many([generation_key, changed_key])
    generation = values.get(generation_key)
    return (None if generation is None else int(generation)), int(values.get(changed_key, time.time()))


def public_cache_bump() -> None:
    """Start a new generation: every entry cached so far is no longer read (and expires on its own)."""
    generation_key = f"{_namespace()}:generation"
    try:
        cache.incr(generation_key)
    except ValueError:  # evicted or never read: any value other than the old one will do
        cache.set(generation_key, time.time_ns() // 1000, None)
    cache.set(f"{_namespace()}:changed", int(time.time()), None)


def public_changed_received(sender, **kwargs) -> None:
    """leaderboard.publishing.signals.public_changed (connected in LeaderboardConfig.ready): what the public sees
    changed and is committed, so a new generation starts (a rolled-back change never reaches here)."""
    public_cache_bump()


def public_cached(
    name: str,
    build: Callable[[], Any],
    *,
    generation: int | None = None,
    keep: Callable[[Any], bool] | None = None,
    memo: bool = True,
) -> Any:
    """`build()` cached under this generation, in this process (a few entries) and in the shared cache; a value
    `keep` refuses (an error page, say) is returned but not stored. `memo=False` keeps it out of the in-process
    entries (page fragments: many, small and cheap to read, which would push out the large snapshots)."""
    if generation is None:
        generation, _ = public_generation()
        if generation is None:  # the cache is unreachable: build it every time
            return build()
    memo_key = (_namespace(), generation, name)
    if memo and memo_key in _memo:
        _memo.move_to_end(memo_key)
        return _memo[memo_key]
    key = f"{_namespace()}:{generation}:data:{hashlib.sha256(name.encode()).hexdigest()}"
    value = cache.get(key)
    if value is None:
        value = build()
        if keep is not None and not keep(value):
            return value
        cache.set(key, value, ENTRY_TIMEOUT_S)
    if not memo:
        return value
    _memo[memo_key] = value
    while len(_memo) > _MEMO_SIZE:
        _memo.popitem(last=False)
    return value


class _ResponseMemo:
    """The most recently used whole responses of this process, within a byte budget: a hot page or API answer
    (a results page of 100 rows is ~100 KB) is served without fetching and unpickling it from Redis each time.
    Keys carry the generation, so a new generation never reads an old entry; old ones fall out as new ones come."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.entries: OrderedDict[str, dict] = OrderedDict()
        self.size = 0

    def get(self, key: str) -> dict | None:
        entry = self.entries.get(key)
        if entry is not None:
            self.entries.move_to_end(key)
        return entry

    def put(self, key: str, entry: dict) -> None:
        size = len(entry["content"])
        if size > self.max_bytes // 4 or key in self.entries:
            return
        self.entries[key] = entry
        self.size += size
        while self.size > self.max_bytes:
            _, dropped = self.entries.popitem(last=False)
            self.size -= len(dropped["content"])


_response_memo = _ResponseMemo(max_bytes=16 * 1024**2)


def _etag_matches(header: str, etag: str) -> bool:
    if header.strip() == "*":
        return True
    return any(candidate.strip().removeprefix("W/") == etag for candidate in header.split(","))


def _not_modified(request: HttpRequest, etag: str, changed_at: int) -> bool:
    if_none_match = request.headers.get("If-None-Match")
    if if_none_match is not None:  # RFC 9110: If-None-Match wins over If-Modified-Since
        return _etag_matches(if_none_match, etag)
    since = parse_http_date_safe(request.headers.get("If-Modified-Since") or "")
    return since is not None and changed_at <= since


def cached_response(request: HttpRequest, respond: Callable[[], HttpResponse]) -> HttpResponse:
    """A public GET answered from the cache (built by `respond()` on a miss); 200s only are cached. Sets ETag,
    Last-Modified and Cache-Control, and answers 304 when the client's copy is current."""
    if request.method not in ("GET", "HEAD"):
        return respond()
    generation, changed_at = public_generation()
    if generation is None:  # the cache is unreachable: answer uncached (no ETag to promise)
        return respond()
    variant = "|".join(
        (
            request.get_full_path(),
            request.headers.get("Accept", ""),
            request.headers.get("Accept-Encoding", ""),
        )
    )
    key = f"{_namespace()}:{generation}:response:{hashlib.sha256(variant.encode()).hexdigest()}"
    entry = _response_memo.get(key)
    if entry is None:
        entry = cache.get(key)
        if entry is not None:
            _response_memo.put(key, entry)
    if entry is None:
        _building.generation = (generation, changed_at)
        try:
            response = respond()
            if hasattr(response, "render"):
                response.render()
        finally:
            _building.generation = None
        if response.status_code != 200 or response.streaming:
            return response
        entry = {
            "content": response.content,
            "headers": {
                name: response[name]
                for name in ("Content-Type", "Content-Disposition", "Link", "Vary")
                if response.has_header(name)
            },
            "etag": f'"{hashlib.sha256(response.content).hexdigest()[:40]}"',
        }
        cache.set(key, entry, ENTRY_TIMEOUT_S)
        _response_memo.put(key, entry)
    headers = {
        "ETag": entry["etag"],
        "Last-Modified": http_date(changed_at),
        "Cache-Control": "public, no-cache",
    }
    if _not_modified(request, entry["etag"], changed_at):
        response = HttpResponseNotModified()
    else:
        response = HttpResponse(entry["content"])
        for name, value in entry["headers"].items():
            response[name] = value
    for name, value in headers.items():
        response[name] = value
    return response


_CSRF_INPUT = re.compile(rb'<input type="hidden" name="csrfmiddlewaretoken" value="[^"]*">')


def private_conditional(request: HttpRequest, response: HttpResponse, changed_at: int) -> HttpResponse:
    """A public page rendered for one visitor (their header around the cached body): ETag of the bytes sent,
    Last-Modified of the public data, `private, no-cache`, and a 304 when the visitor's If-None-Match is that
    ETag. If-Modified-Since alone is not trusted here: the header can change while the public data does not."""
    if hasattr(response, "render") and not getattr(response, "is_rendered", True):
        response.render()
    if response.status_code != 200 or response.streaming:
        return response
    # the CSRF token in a form is masked afresh on every render; any mask of the visitor's secret will do
    etag = f'"{hashlib.sha256(_CSRF_INPUT.sub(b"", response.content)).hexdigest()[:40]}"'
    if_none_match = request.headers.get("If-None-Match")
    if if_none_match is not None and _etag_matches(if_none_match, etag):
        response = HttpResponseNotModified()
    response["ETag"] = etag
    response["Last-Modified"] = http_date(changed_at)
    response["Cache-Control"] = "private, no-cache"
    patch_vary_headers(response, ("Cookie",))
    return response


def _messages_pending(request: HttpRequest) -> bool:
    """Messages waiting for this visitor (after a log-out, say): never to be cached into a shared copy."""
    try:
        return len(get_messages(request)) > 0
    except Exception:  # no messages middleware on this request
        return False


def public_page(request: HttpRequest, respond: Callable[[], HttpResponse]) -> HttpResponse:
    """A public HTML page. Anonymous visitors with no message waiting share one cached response per URL
    (cached_response: ETag, Last-Modified, 304); everyone else gets `respond()` rendered for them — whose body
    fragment the view reads from the cache too — with an ETag of what is sent (private_conditional)."""
    user = getattr(request, "user", None)
    if (
        request.method in ("GET", "HEAD")
        and not (user and user.is_authenticated)
        and not _messages_pending(request)
    ):
        response = cached_response(request, respond)
        patch_vary_headers(response, ("Cookie",))  # a signed-in visitor's copy differs (the header)
        return response
    _, changed_at = public_generation()
    return private_conditional(request, respond(), changed_at)
