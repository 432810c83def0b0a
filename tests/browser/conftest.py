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
        yield CspWatchingBrowser(browser)
        browser.close()


# Content-Security-Policy violations (and Permissions-Policy header errors) reported by any page of the current test
# (see _no_csp_violations).
CSP_VIOLATIONS: list[str] = []


def _watch_console(context):
    def on_console(message):
        if message.type == "error" and (
            "Content Security Policy" in message.text or "Permissions-Policy" in message.text
        ):
            CSP_VIOLATIONS.append(f"{message.location.get('url', '?')}: {message.text}")

    context.on("console", on_console)
    return context


class CspWatchingBrowser:
    """The Playwright browser, whose every context reports the CSP violations its pages log to the console."""

    def __init__(self, browser):
        self._browser = browser

    def new_context(self, *args, **kwargs):
        return _watch_console(self._browser.new_context(*args, **kwargs))

    def new_page(self, *args, **kwargs):
        context = self.new_context(*args, **kwargs)
        page = context.new_page()
        page.on("close", lambda _page: context.close())
        return page

    def __getattr__(self, name):
        return getattr(self._browser, name)


@pytest.fixture(autouse=True)
def _no_csp_violations():
    """Every browser test fails when a page it opened broke the Content-Security-Policy (an inline script or
    handler, a resource from another site): the console says "Refused to ... Content Security Policy"."""
    CSP_VIOLATIONS.clear()
    yield
    violations, CSP_VIOLATIONS[:] = list(CSP_VIOLATIONS), []
    assert not violations, "Content-Security-Policy violations:\n" + "\n".join(violations)


# The buyer pages' world: the sample AX-8000 curve published through the pipeline as two systems of two organisations
# (name, accelerators, organisation key of role_users).
PUBLISHED_PAIR = (("Acme_AX-8000", 8, "acme"), ("Nimbus_NB-2", 2, "nimbus"))


@pytest.fixture
def published(role_users, storage_dir):
    """The publications of PUBLISHED_PAIR, in its order, on a fresh public cache."""
    from leaderboard.board.cache import public_cache_bump
    from tests.factories import BenchmarkFactory
    from tests.leaderboard.goodput_support import publish_sample_run

    public_cache_bump()
    benchmark = BenchmarkFactory(model_id="llama3_1-8b", display_name="Llama 3.1 8B")
    results = [
        publish_sample_run(
            benchmark=benchmark,
            system_name=name,
            accelerators=count,
            organisation=role_users["organisations"][org],
        )
        for name, count, org in PUBLISHED_PAIR
    ]
    public_cache_bump()
    return results
