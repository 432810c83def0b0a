"""Throttles of the API (issue 11): token-authenticated requests per account and per address, and failed token
attempts per address. Rates are settings (REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"], read on every request);
counts live in the Django cache (Redis in production, process memory in the demo). Session (browser) requests
are not counted here."""

from __future__ import annotations

import logging

from django.db import connection
from rest_framework.settings import api_settings
from rest_framework.throttling import SimpleRateThrottle

from accounts.models import ApiToken

logger = logging.getLogger(__name__)


def _cache_down(error: Exception) -> None:
    logger.warning("API throttle skipped: the cache is unreachable (%s: %s)", type(error).__name__, error)


class _PortalThrottle(SimpleRateThrottle):
    """Counts in the cache; when the cache (Redis) is unreachable the request is let through and a warning
    logged: a throttle must not turn a cache outage into a 500 for every token request."""

    def allow_request(self, request, view):
        try:
            return super().allow_request(request, view)
        except Exception as error:  # noqa: BLE001 - any cache client error
            _cache_down(error)
            return True

    def get_rate(self):
        # Read at request time (not when the class was defined) so a changed setting applies at once.
        return api_settings.DEFAULT_THROTTLE_RATES[self.scope]

    def _key(self, ident) -> str:
        # The database's name keeps the counts of several portals (or test processes) sharing one cache apart.
        return f"throttle:{self.scope}:{connection.settings_dict['NAME']}:{ident}"


class TokenAccountThrottle(_PortalThrottle):
    """Requests made with any of one account's API tokens."""

    scope = "token_user"

    def get_cache_key(self, request, view):
        if not isinstance(request.auth, ApiToken):
            return None
        return self._key(request.user.pk)


class TokenAddressThrottle(_PortalThrottle):
    """Token-authenticated requests from one address (whichever accounts they use)."""

    scope = "token_address"

    def get_cache_key(self, request, view):
        if not isinstance(request.auth, ApiToken):
            return None
        return self._key(self.get_ident(request))


class FailedTokenThrottle(_PortalThrottle):
    """Wrong, expired or revoked tokens sent from one address. Past the rate every token request from that address
    is refused with 429 until the window ends, before its token is even looked up (accounts.authentication).

    The window opens at the address's first failure and lasts the rate's period; failures are counted with an
    atomic increment, so parallel guesses cannot slip past the limit."""

    scope = "token_failure"

    def get_cache_key(self, request, view=None):
        return self._key(self.get_ident(request))

    def blocked_for(self, request) -> float | None:
        """Seconds until this address may send a token again, or None when it may now."""
        key = self.get_cache_key(request)
        try:
            if (self.cache.get(key) or 0) < self.num_requests:
                return None
            opened = self.cache.get(f"{key}:opened") or self.timer()
        except Exception as error:  # noqa: BLE001 - any cache client error
            _cache_down(error)
            return None
        return max(opened + self.duration - self.timer(), 1.0)

    def record_failure(self, request) -> None:
        key = self.get_cache_key(request)
        try:
            self.cache.add(f"{key}:opened", self.timer(), self.duration)
            self.cache.add(key, 0, self.duration)
            try:
                self.cache.incr(key)
            except ValueError:  # the window closed between add and incr: this failure opens the next one
                self.cache.add(key, 1, self.duration)
        except Exception as error:  # noqa: BLE001 - any cache client error
            _cache_down(error)
