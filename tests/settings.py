"""Test settings: portal.settings with the local PostgreSQL and Redis as defaults when unset.

Set DATABASE_URL / REDIS_URL to point the suite elsewhere. Tasks run eagerly unless a test
starts a real worker; the broker and cache still talk to the real Redis.
"""

import os
import tempfile

os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/test")
os.environ.setdefault("REDIS_URL", "redis://127.0.0.1:6379/0")
os.environ.setdefault("CELERY_TASK_ALWAYS_EAGER", "1")
os.environ.setdefault("SECRET_KEY", "test-only-secret-key-not-for-any-deployment-0123456789")
os.environ.setdefault("PORTAL_ENDPOINT_KEY", "test-only-endpoint-key-not-for-any-deployment-0123")
os.environ.setdefault("PORTAL_EGRESS_ALLOW_LOOPBACK", "1")
os.environ.setdefault("PORTAL_VAR_DIR", tempfile.mkdtemp(prefix="portal-test-var-"))

from portal.settings import *  # noqa: E402,F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"

# Sign-in failure counters in this process's memory (cleared before each test by tests/conftest.py): every test
# signs in from 127.0.0.1, and concurrent test runs share one Redis.
# Its own LOCATION: local-memory caches of one LOCATION share their store, and clearing this one must not clear
# another (the permission matrix keeps its sessions in one).
CACHES = {  # noqa: F405
    **CACHES,  # noqa: F405
    "login-throttle": {
        "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
        "LOCATION": "portal-login-throttle",
    },
}
PORTAL_LOGIN_THROTTLE_CACHE = "login-throttle"

# One test database per pytest process, so concurrent runs on one server never drop each other's.
if DATABASES["default"]["ENGINE"].endswith("postgresql"):  # noqa: F405
    DATABASES["default"]["TEST"] = {  # noqa: F405
        "NAME": os.environ.get("PORTAL_TEST_DB_NAME") or f"test_portal_{os.getpid()}",
    }

    # The flush between transactional tests empties the audit log, whose trigger refuses TRUNCATE otherwise.
    DATABASES["default"]["ENGINE"] = "tests.pg_backend"  # noqa: F405

# The suite sends thousands of token requests from 127.0.0.1 a minute: throttle limits it never reaches. The tests
# of the limits themselves (tests/accounts/test_api_throttling.py) put back portal.settings' production rates.
PRODUCTION_THROTTLE_RATES = dict(REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"])  # noqa: F405
REST_FRAMEWORK = {  # noqa: F405
    **REST_FRAMEWORK,  # noqa: F405
    "DEFAULT_THROTTLE_RATES": {scope: "1000000/minute" for scope in PRODUCTION_THROTTLE_RATES},
}
