"""WCAG 2.1 AA in Chromium (issue 39): axe-core's WCAG 2.0/2.1 A and AA rules find no serious or critical
violation on any page of the seeded demo, as anonymous visitors and every demo role see it, at 1280 and 390 px;
and no page scrolls sideways at 390 px.

The world is `manage.py seed_demo` (every review and audit state, published, annotated and retracted results). Each
role's pages are those reached by links from where that role starts (tests/tools/page_audit.py Crawl), one page of
each kind: a kind already audited for an earlier role is not audited again (the layout around it is the same).
axe-core is the copy `axe-playwright-python` installs (pyproject's dev extra): nothing is fetched.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

import pytest
from django.core.management import call_command

from tests.browser.signin import pass_second_factor
from tests.tools.page_audit import BLOCKING, Crawl, axe_violations, missing_references

pytestmark = pytest.mark.django_db(transaction=True)

# Who walks the portal, in order; the demo's own passwords (submissions/demo.py DEMO_USERS).
ROLES = (
    None,
    "demo-submitter",
    "demo-reviewer",
    "demo-reviewer3",
    "demo-zephyr",
    "demo-auditor",
    "demo-chair",
)
PUBLIC_START = (
    "/",
    "/leaderboard/",
    "/leaderboard/slo/?benchmark=llama3_1-8b&ttft_p90_ms_max=100000&interactivity_min=0",
    "/leaderboard/procurement/?model_1=llama3_1-8b&ttft_p90_ms_max_1=100000",
    "/leaderboard/slo/?benchmark=llama3_1-8b&ttft_p90_ms_max=-1",  # an error answer
    "/rules/",
    "/api/docs/",
    "/accounts/login/",
)
SIGNED_IN_START = (
    "/dashboard/",
    "/systems/",
    "/previews/",
    "/review/",
    "/review/audit/",
    "/review/chair/",
    "/review/chair/rechecks/",
    "/review/conflicts/",
    "/audit/",
    "/accounts/",
    "/accounts/notifications/",
    "/accounts/tokens/",
    "/accounts/two-factor/",
    "/accounts/organisations/",
    "/accounts/roles/",
)


@pytest.fixture
def demo_world(settings, tmp_path, plain_http):
    from django.core import mail

    from tests.factories import BenchmarkFactory

    settings.STORAGES = {
        **settings.STORAGES,
        "default": {
            "BACKEND": "django.core.files.storage.FileSystemStorage",
            "OPTIONS": {"location": str(tmp_path)},
        },
    }
    settings.CELERY_TASK_ALWAYS_EAGER = True
    BenchmarkFactory(sample=True)  # the catalog migration ships it; transactional tests flush it
    call_command("seed_demo", stdout=open("/dev/null", "w"))  # noqa: SIM115
    mail.outbox = []


def _sign_in(page, base: str, username: str) -> None:
    page.goto(f"{base}/accounts/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", f"{username}-pass")
    page.click("main button[type=submit]")
    pass_second_factor(page, username)
    page.wait_for_load_state()
    assert "/accounts/login/" not in page.url, f"{username} could not sign in"


def _audit(chromium, base: str, width: int) -> tuple[dict, list[str]]:
    seen: dict[str, str] = {}
    failures: list[str] = []
    for username in ROLES:
        context = chromium.new_context(viewport={"width": width, "height": 900})
        page = context.new_page()
        page.set_default_timeout(30_000)
        if username:
            _sign_in(page, base, username)
        crawl = Crawl(start=(SIGNED_IN_START if username else ()) + PUBLIC_START, pages=seen)

        def visit(page, path, who=username or "anonymous"):
            for violation in axe_violations(page):
                if violation["impact"] in BLOCKING:
                    failures.append(
                        f"{who} {width}px {path}: {violation['impact']} {violation['id']} ({violation['help']}) "
                        f"at {violation['nodes'][:3]}"
                    )
            for reference in missing_references(page):
                failures.append(f"{who} {width}px {path}: {reference} names no element of the page")
            scroll_width = page.evaluate("document.scrollingElement.scrollWidth")
            if scroll_width > width + 1:
                failures.append(f"{who} {width}px {path}: the page scrolls sideways ({scroll_width} px wide)")

        crawl.walk(page, base, visit)
        context.close()
    return seen, failures


@pytest.mark.parametrize("width", [1280, 390])
def test_every_page_of_every_role_has_no_serious_axe_violation(chromium, live_server, demo_world, width):
    seen, failures = _audit(chromium, live_server.url, width)
    kinds = set(seen)
    # The walk reached the pages of every role, not a login page over and over.
    for expected in (
        "/",
        "/dashboard/",
        "/review/",
        "/review/audit/",
        "/review/chair/",
        "/audit/",
        "/api/docs/",
    ):
        assert expected in kinds, (expected, sorted(kinds))
    assert any(kind.startswith("/results/") for kind in kinds) and any("/submissions/" in k for k in kinds)
    assert len(kinds) >= 40, sorted(kinds)
    assert not failures, (
        f"{len(failures)} serious or critical violations on {len(kinds)} pages:\n" + "\n".join(failures)
    )


# Each role's journey by keyboard alone: sign in, then follow links (Tab until the link whose address matches, Enter)
# to where the role works, and reach what they act with there. Nothing is clicked.
JOURNEYS = {
    "buyer": (None, [r"/leaderboard/$", r"/leaderboard/llama3_1-8b/$", r"/results/EP-\d+/$"], ".marker"),
    "submitter": ("demo-submitter", [r"/dashboard/$", r"/submissions/\d+/$"], "main button[type=submit]"),
    "reviewer": ("demo-reviewer", [r"/review/$", r"/review/submissions/\d+/$"], "main textarea"),
    "auditor": ("demo-auditor", [r"/review/audit/$", r"/review/audit/\d+/$"], "main button[type=submit]"),
    "chair": (
        "demo-chair",
        [r"/review/chair/$", r"/review/chair/submissions/\d+/$"],
        "main button[type=submit]",
    ),
}


def _tab_until(page, test: str, arg, limit: int = 250) -> None:
    for _ in range(limit):
        page.keyboard.press("Tab")
        if page.evaluate(test, arg):
            return
    raise AssertionError(f"Tab never reached {arg} on {page.url}")


LINK_MATCHES = """(pattern) => { const a = document.activeElement;
  return a.tagName === 'A' && !a.getAttribute('href').startsWith('#') && new RegExp(pattern).test(new URL(a.href).pathname); }"""
FIELD_IS = "(name) => document.activeElement.name === name"
ELEMENT_MATCHES = "(selector) => document.activeElement.matches(selector)"
# A focused element must show it: an outline or a ring (the browser's default counts), never outline: none alone.
FOCUS_SHOWN = """() => { const a = document.activeElement, s = getComputedStyle(a);
  return (s.outlineStyle !== 'none' && parseFloat(s.outlineWidth) > 0) || s.boxShadow !== 'none'
    || a.classList.contains('marker'); }"""


def _sign_in_by_keyboard(page, base: str, username: str) -> None:
    from tests.accounts.support import totp_code, totp_device_for

    page.goto(f"{base}/accounts/login/")
    _tab_until(page, FIELD_IS, "username")
    page.keyboard.type(username)
    _tab_until(page, FIELD_IS, "password")
    page.keyboard.type(f"{username}-pass")
    with page.expect_navigation():
        page.keyboard.press("Enter")
    if "/login/verify/" in page.url:
        from django.contrib.auth import get_user_model

        _tab_until(page, FIELD_IS, "code")
        page.keyboard.type(totp_code(totp_device_for(get_user_model().objects.get(username=username))))
        with page.expect_navigation():
            page.keyboard.press("Enter")
    assert "/accounts/login/" not in page.url, f"{username} could not sign in by keyboard"


def test_each_roles_journey_by_keyboard_alone(chromium, live_server, demo_world):
    base = live_server.url
    for role, (username, links, control) in JOURNEYS.items():
        context = chromium.new_context(viewport={"width": 1280, "height": 900})
        page = context.new_page()
        page.set_default_timeout(30_000)
        if username:
            _sign_in_by_keyboard(page, base, username)
        else:
            page.goto(f"{base}/")
        for pattern in links:
            _tab_until(page, LINK_MATCHES, pattern)
            assert page.evaluate(FOCUS_SHOWN), f"{role}: the focus on the link to {pattern} is not shown"
            with page.expect_navigation():
                page.keyboard.press("Enter")
            assert re.search(pattern, urlsplit(page.url).path), (
                f"{role}: Enter on {pattern} led to {page.url}"
            )
        _tab_until(page, ELEMENT_MATCHES, control)
        assert page.evaluate(FOCUS_SHOWN), f"{role}: the focus on {control} is not shown"
        context.close()
