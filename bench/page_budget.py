"""The weight, requests, LCP, CLS and axe-core violations of every page, in Chromium, against a running portal.

    make demo    (or any portal seeded with manage.py seed_demo; PORT=8000)
    .venv/bin/python bench/page_budget.py [--base http://127.0.0.1:8000] [--roles] [--width 1280] [--throttle]

Walks the pages anonymous visitors reach by links from / (one page of each kind: tests/tools/page_audit.py), each
loaded in a fresh browser context (nothing cached), and prints one row per page: bytes over the wire (compressed
as sent), requests, Largest Contentful Paint, Cumulative Layout Shift, the page's scroll width, and axe-core's
WCAG 2.0/2.1 A+AA violations (serious or critical / all). `--roles` walks every demo user's pages as well (signed in
through the login form; the chair's and the auditor's two-factor code from `manage.py totp_code`). `--throttle`
emulates a slow 4G connection (1.6 Mbit/s down, 150 ms latency) for LCP. The budget these figures are held to is
docs/performance.md ("Page budget"). A script, not a test: nothing asserts a figure.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.tools.page_audit import (  # noqa: E402 - the repository root is on the path from here on
    BLOCKING,
    PERFORMANCE_OBSERVERS,
    Crawl,
    axe_violations,
    page_figures,
)

CHROMIUM = "/usr/bin/chromium"
DEMO_PASSWORDS = {
    "demo-submitter": "demo-submitter-pass",
    "demo-reviewer": "demo-reviewer-pass",
    "demo-zephyr": "demo-zephyr-pass",
    "demo-auditor": "demo-auditor-pass",
    "demo-chair": "demo-chair-pass",
}
PUBLIC_START = (
    "/",
    "/leaderboard/",
    "/leaderboard/slo/?benchmark=llama3_1-8b&ttft_p90_ms_max=100000&interactivity_min=0",
    "/leaderboard/procurement/?model_1=llama3_1-8b&ttft_p90_ms_max_1=100000",
    "/rules/",
    "/api/docs/",
    "/accounts/login/",
)
SIGNED_IN_START = (
    "/dashboard/",
    "/review/",
    "/review/audit/",
    "/review/chair/",
    "/audit/",
    "/accounts/",
    "/previews/",
)


def _context(browser, width: int, throttle: bool):
    context = browser.new_context(viewport={"width": width, "height": 900})
    context.add_init_script(PERFORMANCE_OBSERVERS)
    if throttle:
        page = context.new_page()
        cdp = context.new_cdp_session(page)
        cdp.send(
            "Network.emulateNetworkConditions",
            {"offline": False, "latency": 150, "downloadThroughput": 200_000, "uploadThroughput": 90_000},
        )
        page.close()
    return context


def _sign_in(page, base: str, username: str) -> None:
    page.goto(f"{base}/accounts/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", DEMO_PASSWORDS[username])
    page.click("main button[type=submit]")
    page.wait_for_load_state()
    if "/login/verify/" in page.url:
        code = subprocess.run(
            [sys.executable, "manage.py", "totp_code", username],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        page.fill("input[name=code]", code)
        page.click("main button[type=submit]")
        page.wait_for_load_state()


def _walk(browser, base: str, username: str | None, width: int, throttle: bool, seen: dict) -> list[tuple]:
    rows = []
    context = _context(browser, width, throttle)
    page = context.new_page()
    if username:
        _sign_in(page, base, username)
    crawl = Crawl(start=SIGNED_IN_START + PUBLIC_START if username else PUBLIC_START, pages=seen)

    def visit(page, path):
        # Figures from a load of its own in a fresh context (nothing cached, the session's cookies kept).
        fresh = _context(browser, width, throttle)
        fresh.add_cookies(context.cookies())
        measured = fresh.new_page()
        measured.goto(base + path, wait_until="load")
        figures = page_figures(measured)
        fresh.close()
        violations = axe_violations(page)
        blocking = [v for v in violations if v["impact"] in BLOCKING]
        rows.append((username or "anonymous", width, path, figures, blocking, violations))

    crawl.walk(page, base, visit)
    context.close()
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--base", default="http://127.0.0.1:8000")
    parser.add_argument("--roles", action="store_true", help="every demo user's pages too")
    parser.add_argument("--width", type=int, action="append", help="viewport width(s) in px (default 1280)")
    parser.add_argument("--throttle", action="store_true", help="slow 4G: 1.6 Mbit/s, 150 ms latency")
    parser.add_argument("--details", action="store_true", help="list each serious/critical violation")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    users = [None, *DEMO_PASSWORDS] if args.roles else [None]
    print(
        f"{'user':<15} {'px':>4} {'page':<60} {'KB':>7} {'req':>4} {'LCP ms':>7} {'CLS':>6} {'width':>5} axe s+c/all"
    )
    totals = {"pages": 0, "blocking": 0, "all": 0}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--headless", "--no-sandbox"])
        seen: dict[
            int, dict
        ] = {}  # width -> the kinds of page measured (each once, as the first user shown it)
        for username in users:
            for width in args.width or [1280]:
                for user, px, path, figures, blocking, violations in _walk(
                    browser, args.base.rstrip("/"), username, width, args.throttle, seen.setdefault(width, {})
                ):
                    totals["pages"] += 1
                    totals["blocking"] += len(blocking)
                    totals["all"] += len(violations)
                    print(
                        f"{user:<15} {px:>4} {path[:60]:<60} {figures.weight_bytes / 1024:>7.1f} {figures.requests:>4}"
                        f" {figures.lcp_ms:>7.0f} {figures.cls:>6.3f} {figures.scroll_width_px:>5}"
                        f" {len(blocking)}/{len(violations)}"
                    )
                    if args.details:
                        for violation in blocking:
                            print(f"      {violation['impact']}: {violation['id']} {violation['nodes'][:3]}")
        browser.close()
    print(
        f"{totals['pages']} pages; serious/critical violations (rules failed per page summed): {totals['blocking']};"
        f" all: {totals['all']}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
