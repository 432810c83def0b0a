"""WCAG 2.1 AA in Chromium (issue 39): axe-core's WCAG 2.0/2.1 A and AA rules find no serious or critical
violation on any page of the seeded demo, as anonymous visitors and every demo role see it, at 1280 and 390 px;
and no page scrolls sideways at 390 px.

The world is `manage.py seed_demo` (every review and audit state, published, annotated and retracted results). Each
role's pages are those reached by links from where that role starts (tests/tools/page_audit.py Crawl), one page of
each kind: a kind already audited for an earlier role is not audited again (the layout around it is the same).
axe-core is the copy `axe-playwright-python` installs (pyproject's dev extra): nothing is fetched.
"""

from __future__ import annotations

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
