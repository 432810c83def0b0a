"""Sign-in throttling: failed sign-ins counted per account and per client address in the Django cache.

At PORTAL_LOGIN_MAX_FAILURES_PER_ACCOUNT failures within PORTAL_LOGIN_WINDOW_S the account is locked for
PORTAL_LOGIN_LOCKOUT_S (its owner is e-mailed once per lockout); at PORTAL_LOGIN_MAX_FAILURES_PER_ADDRESS the
address is. While locked, no password is even checked, so the right one is refused too. The address is the
client's (portal.middleware.client_ip): the connection's, or behind PORTAL_TRUSTED_PROXIES reverse proxies the one
the outermost of them saw; a client-sent X-Forwarded-For is never trusted."""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass

from django.conf import settings
from django.core.cache import caches
from django.core.cache.backends.locmem import LocMemCache

# While the shared cache is unreachable (portal.cache_backend), failures are counted in this process: a lockout
# must not end because Redis did (each process then counts its own, so an attacker gets at most workers x limit).
_in_process = LocMemCache("portal-login-throttle-while-cache-down", {})


def _cache():
    shared = caches[settings.PORTAL_LOGIN_THROTTLE_CACHE]
    is_down = getattr(shared, "is_down", None)
    return _in_process if is_down is not None and is_down() else shared


def _key(kind: str, value: str) -> str:
    digest = hashlib.sha256(value.encode("utf-8", "replace")).hexdigest()[:32]
    return f"login-throttle:{kind}:{digest}"


def account_key(user, identifier: str) -> str:
    """A known account by its id (its username and e-mail count as one); an unknown name by itself."""
    return f"user:{user.pk}" if user is not None else f"name:{identifier.strip().lower()[:254]}"


@dataclass(frozen=True)
class Lock:
    scope: str  # "account" or "address"
    until: float  # epoch seconds

    @property
    def minutes_left(self) -> int:
        return max(1, int((self.until - time.time() + 59) // 60))


def lock_of(*, account: str, address: str) -> Lock | None:
    """The lock refusing this sign-in now, if any (the account's first)."""
    cache = _cache()
    for scope, value in (("account", account), ("address", address)):
        until = cache.get(_key(f"lock-{scope}", value))
        if until and until > time.time():
            return Lock(scope, until)
    return None


def _count_failure(scope: str, value: str, limit: int) -> Lock | None:
    """One more failure; the new Lock when this one reached the limit (None when not, or already locked)."""
    cache = _cache()
    counter = _key(f"fail-{scope}", value)
    cache.add(counter, 0, timeout=settings.PORTAL_LOGIN_WINDOW_S)
    try:
        failures = cache.incr(counter)
    except ValueError:  # expired between add and incr
        cache.set(counter, 1, timeout=settings.PORTAL_LOGIN_WINDOW_S)
        failures = 1
    if failures < limit:
        return None
    until = time.time() + settings.PORTAL_LOGIN_LOCKOUT_S
    if cache.add(_key(f"lock-{scope}", value), until, timeout=settings.PORTAL_LOGIN_LOCKOUT_S):
        cache.delete(counter)  # after the lockout, a fresh window
        return Lock(scope, until)
    return None


def failure_record(*, account: str, address: str) -> list[Lock]:
    """Count a failed sign-in; the locks it started (so the caller can tell the owner once)."""
    started = []
    for scope, value, limit in (
        ("account", account, settings.PORTAL_LOGIN_MAX_FAILURES_PER_ACCOUNT),
        ("address", address, settings.PORTAL_LOGIN_MAX_FAILURES_PER_ADDRESS),
    ):
        lock = _count_failure(scope, value, limit)
        if lock is not None:
            started.append(lock)
    return started


def success_record(*, account: str) -> None:
    """A successful sign-in forgets the account's failures (the address keeps its count)."""
    _cache().delete(_key("fail-account", account))
