"""Every page of the seeded demo, as each demo user sees it, written to a folder; and two such folders compared.

A layout change (code moved between modules, renamed, split) must not change a page. This script renders every
GET page reachable by links from each demo user's landing pages (the Django test client, one process, no server),
masks what differs between two renderings of the same data (CSRF tokens, the nonce of a page, the session's
times, the two-factor secret a setup page makes afresh), and writes one file per page; `--compare A B` lists the
pages that differ and shows the first lines that do. Run it with the same seeded demo database for both checkouts (copy the var folder first: browsing writes
sessions and marks notifications read):

    cp -a var-seeded /tmp/a && PORTAL_VAR_DIR=/tmp/a python tests/tools/page_snapshot.py --out /tmp/pages-before
    (in the other checkout) cp -a var-seeded /tmp/b && PORTAL_VAR_DIR=/tmp/b python tests/tools/page_snapshot.py \
        --out /tmp/pages-after
    python tests/tools/page_snapshot.py --compare /tmp/pages-before /tmp/pages-after

Not a test: nothing here runs under pytest (the file name does not start with test_).
"""

from __future__ import annotations

import argparse
import difflib
import hashlib
import os
import re
import sys
from collections import deque
from pathlib import Path
from urllib.parse import urldefrag, urlsplit

ROOT = Path(__file__).resolve().parents[2]

USERS = (
    None,
    "demo-submitter",
    "demo-reviewer",
    "demo-nimbus",
    "demo-zephyr",
    "demo-auditor",
    "demo-chair",
)
START = ("/", "/leaderboard/", "/review/", "/audit/", "/previews/", "/accounts/", "/api/v1/")
SKIP = re.compile(
    r"^/(admin|static|media|accounts/(logout|sign-out)|logout)\b|/(download|export)s?/|\.(zip|gz|npz|csv)$"
)
HREF = re.compile(r'href="(/[^"#]*)"|"(?:url|next|previous|[a-z_]+_url)": ?"http://127\.0\.0\.1(/[^"#]*)"')

MASKS = (
    (re.compile(r'(name="csrfmiddlewaretoken" value=")[^"]+'), r"\1<csrf>"),
    (re.compile(r'(name="csrf-token" content=")[^"]+'), r"\1<csrf>"),
    (re.compile(r'(data-csrf(?:-token)?=")[^"]+'), r"\1<csrf>"),
    (re.compile(r'(nonce=")[^"]+'), r"\1<nonce>"),
    (re.compile(r"(data-secret>)[^<]+"), r"\1<new two-factor secret>"),  # made afresh on each visit
    (re.compile(r"(data-qr>)<svg.*?</svg>", re.S), r"\1<its QR code>"),
    (re.compile(r"\b\d+(?:\xa0|\s)(?:seconds?|minutes?|hours?)(?: ago)?\b"), "<time ago>"),
    (re.compile(r"\bnow\b|\bjust now\b"), "<now>"),
    (re.compile(r"<time ago>(?:,\s*<time ago>)+"), "<time ago>"),  # "1 hour, 5 minutes" an hour later
)


def mask(text: str) -> str:
    for pattern, replacement in MASKS:
        text = pattern.sub(replacement, text)
    return text


def file_name(path: str) -> str:
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", path.strip("/")) or "index"
    return f"{slug[:120]}-{hashlib.sha256(path.encode()).hexdigest()[:8]}.html"


def crawl(client, limit: int) -> dict[str, tuple[int, str]]:
    seen: dict[str, tuple[int, str]] = {}
    queue = deque(START)
    queued = set(START)
    while queue and len(seen) < limit:
        path = queue.popleft()
        response = client.get(path)
        kind = response.get("Content-Type", "")
        if response.status_code in (301, 302, 303, 307, 308):
            body = f"redirect {response.status_code} -> {response.get('Location', '')}\n"
        elif response.streaming:
            body = f"{kind}: streamed\n"
        elif any(text in kind for text in ("text/", "json")):
            body = response.content.decode("utf-8", "replace")
        else:
            body = f"{kind}: {len(response.content)} bytes\n"
        seen[path] = (response.status_code, mask(body))
        for page_link, api_link in HREF.findall(body):
            link = urldefrag((page_link or api_link).replace("&amp;", "&"))[0]
            if urlsplit(link).netloc or SKIP.search(link) or link in queued:
                continue
            queued.add(link)
            queue.append(link)
    return seen


def snapshot(out: Path, limit: int) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.test import Client

    from tests.accounts.support import install_verified_force_login

    install_verified_force_login()
    for username in USERS:
        client = Client(HTTP_HOST="127.0.0.1")
        if username is not None:
            client.force_login(get_user_model().objects.get(username=username))
        pages = crawl(client, limit)
        folder = out / (username or "anonymous")
        folder.mkdir(parents=True, exist_ok=True)
        index = []
        for path, (status, body) in sorted(pages.items()):
            name = file_name(path)
            (folder / name).write_text(body)
            index.append(f"{status}\t{path}\t{name}")
        (folder / "index.tsv").write_text("\n".join(index) + "\n")
        print(f"{username or 'anonymous'}: {len(pages)} pages")


def compare(a: Path, b: Path) -> int:
    differing = 0
    total = 0
    for index_a in sorted(a.glob("*/index.tsv")):
        user = index_a.parent.name
        rows_a = {line.split("\t")[1]: line.split("\t") for line in index_a.read_text().splitlines()}
        index_b = b / user / "index.tsv"
        rows_b = {line.split("\t")[1]: line.split("\t") for line in index_b.read_text().splitlines()}
        for path in sorted(set(rows_a) | set(rows_b)):
            total += 1
            if path not in rows_a or path not in rows_b:
                differing += 1
                print(f"{user} {path}: only in {'the second' if path in rows_b else 'the first'}")
                continue
            status_a, _, name = rows_a[path]
            status_b, _, _ = rows_b[path]
            text_a = mask((a / user / name).read_text())
            text_b = mask((b / user / name).read_text())
            if status_a != status_b or text_a != text_b:
                differing += 1
                print(f"{user} {path}: differs (status {status_a} / {status_b})")
                diff = difflib.unified_diff(text_a.splitlines(), text_b.splitlines(), lineterm="", n=0)
                for line in list(diff)[2:12]:
                    print("    " + line[:160])
    print(f"{total} pages compared, {differing} differ")
    return 1 if differing else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, help="folder to write the pages to")
    parser.add_argument("--compare", type=Path, nargs=2, metavar=("A", "B"), help="compare two snapshots")
    parser.add_argument("--limit", type=int, default=600, help="pages per user at most (default 600)")
    args = parser.parse_args()
    if args.compare:
        return compare(*args.compare)
    if not args.out:
        parser.error("give --out DIR or --compare A B")
    snapshot(args.out, args.limit)
    return 0


if __name__ == "__main__":
    sys.exit(main())
