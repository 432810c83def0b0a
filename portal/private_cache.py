"""The signed-in pages a submitter reloads all day (the dashboard, a submission page, the API lists), cached per
user under a write generation.

Any statement that may change data, run on any database connection of any process (a service, a bulk
`update()`, a check task, a management command, the admin, raw SQL), starts a new generation: a wrapper installed
on every connection (`connection.execute_wrappers`) bumps a counter in the shared cache right after the statement
and again once its transaction commits. An answer is cached under the generation read *before* it was built, so
an answer built from data that was then changed is never read: the change's bump made its key an old one. Only
two tables are left out, because nothing cached shows them and they are written by reading: the session table
and the API tokens' "last used" column (`UNTRACKED_TABLES`).

Keys carry the user, the full path, the negotiated format and (for pages) the CSRF secret the request came with
(a request without one is not cached), so a page's forms keep working and nobody ever reads another user's entry. Entries also expire after `ENTRY_TIMEOUT_S`, which bounds how
old a relative time ("3 minutes ago") can get. A page with a flash message waiting, a response other than a 200,
and a request without a CSRF secret are never cached.

The counter is only coherent when every process shares the cache: the cache is on when `REDIS_URL` is set
(`PORTAL_PRIVATE_CACHE` overrides), off with the in-process cache of the zero-config demo.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import re
import time
from collections.abc import Callable

from django.conf import settings
from django.contrib.messages import get_messages
from django.core.cache import cache
from django.db import connections
from django.db.backends.signals import connection_created
from django.http import HttpRequest, HttpResponse
from django.utils.safestring import SafeString, mark_safe

logger = logging.getLogger(__name__)

ENTRY_TIMEOUT_S = 60
UNTRACKED_TABLES = frozenset({"django_session", "accounts_apitoken"})

# Statements that cannot change data. Anything else (INSERT, UPDATE, DELETE, TRUNCATE, DDL, a WITH that may hold
# one of them, an unknown verb) counts as a write: an unneeded bump costs one cache miss, a missed one a stale page.
_READ_ONLY_VERBS = frozenset(
    {"SELECT", "SAVEPOINT", "RELEASE", "ROLLBACK", "SET", "SHOW", "BEGIN", "COMMIT", "EXPLAIN", "PRAGMA"}
)
_VERB = re.compile(r"\s*(\w+)")
_WRITTEN_TABLE = re.compile(r'\s*(?:INSERT\s+INTO|UPDATE|DELETE\s+FROM)\s+"?(\w+)"?\s', re.IGNORECASE)


def enabled() -> bool:
    return bool(getattr(settings, "PORTAL_PRIVATE_CACHE", False))


def _namespace(database: str | None = None) -> str:
    if database is None:
        database = connections["default"].settings_dict.get("NAME")
    return f"portal:private:{database}"


def _is_tracked_write(sql: str) -> bool:
    verb = _VERB.match(sql)
    if verb is not None and verb.group(1).upper() in _READ_ONLY_VERBS:
        return False
    table = _WRITTEN_TABLE.match(sql)
    return table is None or table.group(1).lower() not in UNTRACKED_TABLES


def private_generation() -> int | None:
    """The current generation, or None when the cache cannot be read (then nothing is cached or read)."""
    key = f"{_namespace()}:generation"
    try:
        value = cache.get(key)
        if value is None:
            cache.add(key, time.time_ns(), None)
            value = cache.get(key)
    except Exception:  # noqa: BLE001 - a cache outage serves uncached pages, never an error
        logger.warning("private cache unreadable; serving uncached", exc_info=True)
        return None
    return None if value is None else int(value)


def private_cache_bump(database: str | None = None) -> None:
    """Start a new generation for `database` (by name; default: the default connection's)."""
    key = f"{_namespace(database)}:generation"
    try:
        cache.incr(key)
    except ValueError:  # evicted or never read: any new value will do
        cache.set(key, time.time_ns(), None)
    except Exception:  # noqa: BLE001 - the entries expire on their own; the write itself must not fail
        logger.warning("private cache generation not bumped", exc_info=True)


def _track_writes(execute, sql, params, many, context):
    result = execute(sql, params, many, context)
    if isinstance(sql, str) and _is_tracked_write(sql):
        connection = context["connection"]
        database = connection.settings_dict.get("NAME")
        private_cache_bump(database)
        if connection.in_atomic_block and not any(
            getattr(entry[1], "private_cache_bump", False) for entry in connection.run_on_commit
        ):
            after_commit = functools.partial(private_cache_bump, database)
            after_commit.private_cache_bump = True  # type: ignore[attr-defined]
            connection.on_commit(after_commit)
    return result


def _install(sender, connection, **kwargs) -> None:
    if enabled() and _track_writes not in connection.execute_wrappers:
        connection.execute_wrappers.insert(0, _track_writes)


def install() -> None:
    """Wrap every database connection, open and future (called from an AppConfig.ready())."""
    connection_created.connect(_install, dispatch_uid="portal.private_cache")
    for connection in connections.all(initialized_only=True):
        _install(None, connection)


def _cacheable_request(request: HttpRequest) -> bool:
    user = getattr(request, "user", None)
    return request.method == "GET" and user is not None and user.is_authenticated and enabled()


def _entry_key(generation: int, request: HttpRequest, variant: str) -> str:
    material = "|".join((str(request.user.pk), request.get_full_path(), variant))
    return f"{_namespace()}:{generation}:{hashlib.sha256(material.encode()).hexdigest()}"


def _cached(
    request: HttpRequest, variant: str, respond: Callable[[], tuple[HttpResponse, bool]]
) -> HttpResponse:
    """`respond()` answers (response, storable); a storable 200 is kept for the next identical request."""
    generation = private_generation()
    if generation is None:
        return respond()[0]
    key = _entry_key(generation, request, variant)
    try:
        entry = cache.get(key)
    except Exception:  # noqa: BLE001
        entry = None
    if entry is not None:
        response = HttpResponse(entry["content"], content_type=entry["content_type"])
        response["X-Portal-Cache"] = "hit"
        return response
    response, storable = respond()
    if (
        storable
        and response.status_code == 200
        and not response.streaming
        and getattr(response, "is_rendered", True)
        and not response.cookies
    ):
        try:
            cache.set(
                key, {"content": response.content, "content_type": response["Content-Type"]}, ENTRY_TIMEOUT_S
            )
        except Exception:  # noqa: BLE001
            logger.warning("private cache entry not stored", exc_info=True)
    return response


def private_page_cached(view):
    """A signed-in GET page, cached per user, CSRF secret and path. The view still runs its own checks on a miss;
    a hit needs the same user, so it was allowed to see the same page under the same data."""

    @functools.wraps(view)
    def wrapped(request, *args, **kwargs):
        csrf_secret = request.META.get("CSRF_COOKIE")
        if not (_cacheable_request(request) and csrf_secret) or len(get_messages(request)):
            return view(request, *args, **kwargs)

        def respond():
            response = view(request, *args, **kwargs)
            # A message queued while rendering would be frozen into the entry: keep such a page out.
            return response, not len(get_messages(request))

        return _cached(request, f"page|{csrf_secret}", respond)

    return wrapped


def shared_fragment(name: str, build: Callable[[], str]) -> SafeString:
    """A piece of a signed-in page that is the same for everyone allowed to see the page (a finished check run's
    findings, table and chart), built once per generation and shared by all users: their own entries are
    per user, so without this every user's first request would render it again. The caller must have checked
    that the user may see what `name` stands for; `build()` returns HTML."""
    generation = private_generation() if enabled() else None
    if generation is None:
        return mark_safe(build())  # noqa: S308 - build() renders a template
    key = f"{_namespace()}:{generation}:fragment:{name}"
    value = cache.get(key)
    if value is None:
        value = str(build())
        cache.set(key, value, ENTRY_TIMEOUT_S)
    return mark_safe(value)  # noqa: S308 - rendered by build() from a template, cached as is


class PrivateCachedListMixin:
    """For a DRF viewset's `list`: the JSON answer cached per user, path and media type (authentication,
    permissions and throttles have run before `list` is called). Other formats (the browsable API) are not cached."""

    def list(self, request, *args, **kwargs):
        renderer = getattr(request, "accepted_renderer", None)
        if not _cacheable_request(request) or renderer is None or renderer.format != "json":
            return super().list(request, *args, **kwargs)

        def respond():
            response = super(PrivateCachedListMixin, self).list(request, *args, **kwargs)
            if response.status_code != 200:
                return response, False
            body = renderer.render(response.data, request.accepted_media_type, self.get_renderer_context())
            content_type = request.accepted_media_type or renderer.media_type
            if renderer.charset:
                content_type = f"{content_type}; charset={renderer.charset}"
            return HttpResponse(body, content_type=content_type), True

        return _cached(request, f"api|{request.accepted_media_type}", respond)
