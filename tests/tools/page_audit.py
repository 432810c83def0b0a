"""What a page costs and whom it fails, measured in Chromium: axe-core's WCAG 2.0/2.1 A and AA rules, the bytes and
requests it takes, its Largest Contentful Paint and Cumulative Layout Shift; and the pages a user reaches by links.

Read by the browser suite (tests/browser/test_accessibility.py: 0 serious or critical violations on every page of
every role) and by bench/page_budget.py (the public pages' budget, docs/performance.md). axe-core is the copy the
`axe-playwright-python` package installs (pyproject's dev extra), injected into the page: nothing is fetched.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache
from importlib.resources import files
from urllib.parse import urldefrag, urlsplit

WCAG_AA_TAGS = ("wcag2a", "wcag2aa", "wcag21a", "wcag21aa")
BLOCKING = ("serious", "critical")
# Not pages of ours to walk into: static files, downloads (and every link marked `download`), sign-out, Django's
# admin, the API's JSON (its browsable pages are DRF's), raw files of a submission, the public log's plain text.
SKIP = re.compile(
    r"^/(admin|static|media|api/v1|api/schema|healthz|audit/head|accounts/(logout|sign-out)|logout|log)\b"
    r"|/(download|export|files|raw)s?/|\.(zip|gz|npz|csv|json|txt|pdf)$"
)


@cache
def axe_source() -> str:
    return (files("axe_playwright_python") / "axe.min.js").read_text()


def axe_violations(page, *, exclude: tuple[str, ...] = ()) -> list[dict]:
    """axe-core's violations of WCAG 2.0/2.1 A and AA on the page as it is now: [{id, impact, help, nodes}]."""
    if not page.evaluate("typeof window.axe === 'object'"):
        page.evaluate(axe_source())
    context = {"exclude": [[selector] for selector in exclude]} if exclude else None
    results = page.evaluate(
        "([context, tags]) => axe.run(context || document,"
        " {runOnly: {type: 'tag', values: tags}, resultTypes: ['violations']})",
        [context, list(WCAG_AA_TAGS)],
    )
    return [
        {
            "id": violation["id"],
            "impact": violation["impact"],
            "help": violation["help"],
            "nodes": [
                " ".join(node["target"][0:1]) if node["target"] else "?" for node in violation["nodes"]
            ],
        }
        for violation in results["violations"]
    ]


# Installed before any page script: the browser reports LCP and layout shifts to observers, buffered from the start.
PERFORMANCE_OBSERVERS = """
window.__lcp = 0; window.__cls = 0;
new PerformanceObserver((list) => { for (const e of list.getEntries()) window.__lcp = e.startTime; })
  .observe({type: 'largest-contentful-paint', buffered: true});
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) if (!e.hadRecentInput) window.__cls += e.value;
}).observe({type: 'layout-shift', buffered: true});
"""


@dataclass
class PageFigures:
    """One page load in a fresh context (nothing cached): bytes over the wire, requests, LCP, CLS, page width."""

    weight_bytes: int
    requests: int
    lcp_ms: float
    cls: float
    scroll_width_px: int


def page_figures(page) -> PageFigures:
    """Figures of the page just loaded; call after the load event (page.goto waits for it)."""
    page.wait_for_timeout(300)  # the last LCP candidate and late shifts are reported after the load event
    figures = page.evaluate(
        """() => {
          const nav = performance.getEntriesByType('navigation')[0];
          const resources = performance.getEntriesByType('resource');
          const bytes = resources.reduce((sum, r) => sum + (r.transferSize || 0), nav ? nav.transferSize : 0);
          return {bytes, requests: 1 + resources.length, lcp: window.__lcp || 0, cls: window.__cls || 0,
                  width: document.scrollingElement.scrollWidth};
        }"""
    )
    return PageFigures(
        weight_bytes=int(figures["bytes"]),
        requests=int(figures["requests"]),
        lcp_ms=round(float(figures["lcp"]), 1),
        cls=round(float(figures["cls"]), 4),
        scroll_width_px=int(figures["width"]),
    )


def page_kind(path: str) -> str:
    """A page's shape without its ids: /results/12/ and /results/13/ are one kind of page."""
    url = urlsplit(path)
    parts = [
        "{id}" if re.search(r"\d", part) and part not in ("v1", "llama3_1-8b") else part
        for part in url.path.split("/")
    ]
    return "/".join(parts) + (
        "?" + "&".join(sorted(k.split("=")[0] for k in url.query.split("&"))) if url.query else ""
    )


@dataclass
class Crawl:
    """The pages one user reaches by following links from where they start, one of each kind. Several users'
    crawls may share `pages`: a kind of page one user was shown is not opened again for the next."""

    start: tuple[str, ...]
    limit: int = 120
    pages: dict[str, str] = field(default_factory=dict)  # kind -> the first path of that kind

    def links(self, page) -> list[str]:
        hrefs = page.eval_on_selector_all(
            "a[href]:not([download])", "links => links.map(a => a.getAttribute('href'))"
        )
        out = []
        for href in hrefs:
            link = urldefrag(href)[0]
            if not link.startswith("/") or link.startswith("//") or SKIP.search(link):
                continue
            out.append(link)
        return out

    def walk(self, page, base: str, visit) -> None:
        """Open each new kind of page (breadth first), call visit(page, path) on it, follow its links."""
        queue = list(self.start)
        opened: set[str] = set()
        while queue and len(self.pages) < self.limit:
            path = queue.pop(0)
            kind = page_kind(path)
            if kind in self.pages or kind in opened:
                continue
            opened.add(kind)
            response = page.goto(base + path)
            if response is None or "text/html" not in (response.headers.get("content-type") or ""):
                continue
            landed = urlsplit(page.url)
            landed_path = landed.path + (f"?{landed.query}" if landed.query else "")
            if page_kind(landed_path) in self.pages and landed_path != path:
                continue  # a redirect to a page already seen (the login page, a landing page)
            if response.status >= 400:
                # A refusal (403, 404) is one page whatever was asked, and the kind stays open for a user who may.
                if f"HTTP {response.status}" in self.pages:
                    continue
                kind = f"HTTP {response.status}"
            self.pages[kind] = path
            visit(page, path)
            queue.extend(link for link in self.links(page) if page_kind(link) not in self.pages)


def missing_references(page) -> list[str]:
    """aria-describedby, aria-labelledby, aria-controls, aria-errormessage and label[for] naming an id the page
    does not have: help or an error a screen reader never reads."""
    return page.evaluate(
        """() => {
          const out = [];
          for (const attr of ['aria-describedby', 'aria-labelledby', 'aria-controls', 'aria-errormessage']) {
            for (const el of document.querySelectorAll('[' + attr + ']')) {
              for (const id of el.getAttribute(attr).split(/\\s+/).filter(Boolean)) {
                if (!document.getElementById(id)) out.push(el.tagName.toLowerCase() + '[' + attr + '=' + id + ']');
              }
            }
          }
          for (const label of document.querySelectorAll('label[for]')) {
            if (!document.getElementById(label.htmlFor)) out.push('label[for=' + label.htmlFor + ']');
          }
          return out;
        }"""
    )
