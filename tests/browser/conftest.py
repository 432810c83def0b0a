"""Browser fixtures: Debian's chromium driven by Playwright (never `playwright install`).

A missing chromium skips the browser tests locally but FAILS them under CI=true.
"""

from __future__ import annotations

import os
import shutil

import pytest

from tests.conftest import IN_CI
from tests.submissions.conftest import live_pipeline  # noqa: F401 - a real celery worker for the live-check tests

CHROMIUM = os.environ.get("PORTAL_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@pytest.fixture
def plain_http(settings):
    """The live server speaks plain http on loopback: cookies must not be Secure-only."""
    settings.SESSION_COOKIE_SECURE = settings.CSRF_COOKIE_SECURE = False


@pytest.fixture
def browser_catalog(role_users):
    """(benchmark, system) the sample run archives were made for, as the demo registers the system."""
    from tests.factories import BenchmarkFactory, SystemFactory

    system = SystemFactory(
        organisation=role_users["organisations"]["acme"],
        sample=True,
        description={"system_name": "Acme AX-8000"},
    )
    return BenchmarkFactory(sample=True), system


@pytest.fixture(scope="session")
def chromium():
    problem = None
    if not (os.path.isfile(CHROMIUM) or shutil.which(CHROMIUM)):
        problem = f"chromium not found at {CHROMIUM} (apt-get install -y chromium)"
    try:
        from playwright.sync_api import sync_playwright
    except ImportError as exc:
        problem = f"the playwright package is missing ({exc})"
    if problem:
        if IN_CI:
            pytest.fail(f"{problem}; CI must run the browser tests.")
        pytest.skip(problem)
    # Playwright's sync API runs its own event loop; Django must allow its ORM calls in that thread.
    os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()
