"""The Redis cache, read as optional: when the server cannot be reached a read is a miss, a write is dropped and
`incr` reads as a missing key (ValueError), so that every user of the cache (the public and signed-in page
caches, the API throttles, the sign-in lockout) keeps answering instead of failing with a 500. The outage is
logged once, then once a minute; for `DOWN_PAUSE_S` after an error the server is not even tried, so a dead
Redis costs no connection attempt per request.

`is_down()` tells whoever must not simply fail open (accounts.sign_in_lockout keeps counting failed sign-ins in the
process meanwhile)."""

from __future__ import annotations

import logging
import time

import redis
from django.core.cache.backends.base import DEFAULT_TIMEOUT
from django.core.cache.backends.redis import RedisCache, RedisCacheClient

logger = logging.getLogger(__name__)

DOWN_PAUSE_S = 5.0
_LOG_EVERY_S = 60.0


class _Down(Exception):
    pass


class _OneClientPerPool(RedisCacheClient):
    """Django makes a new redis.Redis for every cache call (setting up its ~170 reply callbacks each time: a
    quarter of a millisecond, several times a request); one client per connection pool does the same work."""

    def get_client(self, key=None, *, write=False):
        pool = self._get_connection_pool(write)
        clients = self.__dict__.setdefault("_clients", {})
        client = clients.get(id(pool))
        if client is None:
            client = clients[id(pool)] = self._client(connection_pool=pool)
        return client


class ResilientRedisCache(RedisCache):
    def __init__(self, server, params):
        super().__init__(server, params)
        self._class = _OneClientPerPool
        self._down_until = 0.0
        self._logged_at = 0.0

    def is_down(self) -> bool:
        return time.monotonic() < self._down_until

    def _call(self, name: str, *args, **kwargs):
        if self.is_down():
            raise _Down
        try:
            return getattr(super(), name)(*args, **kwargs)
        except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError, OSError) as error:
            now = time.monotonic()
            self._down_until = now + DOWN_PAUSE_S
            if now - self._logged_at >= _LOG_EVERY_S:
                self._logged_at = now
                logger.error(
                    "cache unreachable (%s: %s): serving uncached, retrying in %.0f s",
                    type(error).__name__,
                    error,
                    DOWN_PAUSE_S,
                )
            raise _Down from error

    def add(self, key, value, timeout=DEFAULT_TIMEOUT, version=None):
        try:
            return self._call("add", key, value, timeout, version)
        except _Down:
            return False

    def get(self, key, default=None, version=None):
        try:
            return self._call("get", key, default, version)
        except _Down:
            return default

    def set(self, key, value, timeout=DEFAULT_TIMEOUT, version=None):
        try:
            self._call("set", key, value, timeout, version)
        except _Down:
            pass

    def touch(self, key, timeout=DEFAULT_TIMEOUT, version=None):
        try:
            return self._call("touch", key, timeout, version)
        except _Down:
            return False

    def delete(self, key, version=None):
        try:
            return self._call("delete", key, version)
        except _Down:
            return False

    def get_many(self, keys, version=None):
        try:
            return self._call("get_many", keys, version)
        except _Down:
            return {}

    def has_key(self, key, version=None):
        try:
            return self._call("has_key", key, version)
        except _Down:
            return False

    def incr(self, key, delta=1, version=None):
        try:
            return self._call("incr", key, delta, version)
        except _Down:
            raise ValueError(f"Key '{key}' not found (the cache is unreachable).") from None

    def set_many(self, data, timeout=DEFAULT_TIMEOUT, version=None):
        try:
            return self._call("set_many", data, timeout, version)
        except _Down:
            return list(data)

    def delete_many(self, keys, version=None):
        try:
            return self._call("delete_many", keys, version)
        except _Down:
            return None

    def clear(self):
        try:
            return self._call("clear")
        except _Down:
            return False
