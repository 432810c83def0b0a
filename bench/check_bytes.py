"""Benchmark: bytes the check pipeline reads from storage for one version (issue 8, "Download once").

    python bench/check_bytes.py [--workdir DIR] [--keep]

What it does:
  1. In a temporary folder: a throwaway SQLite database (migrated), local file storage, tasks run in-process
     (no REDIS_URL), and `manage.py seed_demo`, which uploads the sample AX-8000 curve (seven run archives
     with their raw logs) and the AX-4000 bundle through the portal's own services.
  2. Counts every byte read through the storage backend (FileSystemStorage.open, wrapped) while the chair
     re-checks each demo version (a new check run: start, one task per load point, the join), and prints,
     per version: its stored bytes, the bytes read, the ratio read/stored and how many times a stored file
     was opened.
  3. Runs the re-check three times per version: "cold" (the worker's cache emptied first: one worker that
     checks the whole version), "warm" (everything already cached) and "nocache" (cache cap 0: every task
     keeps only the files of its last task, as a worker shared with other versions would).

This is a script, not a test: nothing asserts. In-process tasks mean one worker; a real deployment with
several workers reads each point archive on the worker that checks it, and the shared files once per
worker (docs/performance.md).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


class _Counter:
    def __init__(self) -> None:
        self.bytes = 0
        self.opens = 0


def _count_storage_reads(counter: _Counter) -> None:
    from django.core.files.storage import FileSystemStorage

    original_open = FileSystemStorage._open

    def counting_open(self, name, mode="rb"):
        handle = original_open(self, name, mode)
        counter.opens += 1
        read = handle.file.read

        def counted(*args):
            data = read(*args)
            counter.bytes += len(data)
            return data

        handle.file.read = counted
        return handle

    FileSystemStorage._open = counting_open


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", help="folder for the database and storage (default: a temporary one)")
    parser.add_argument("--keep", action="store_true", help="keep the working folder")
    args = parser.parse_args(argv)
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="bench-check-bytes-"))
    for name in ("DATABASE_URL", "REDIS_URL", "STORAGE_BACKEND"):
        os.environ.pop(name, None)
    os.environ["PORTAL_VAR_DIR"] = str(workdir)
    os.environ["DJANGO_SETTINGS_MODULE"] = "portal.settings"
    sys.path.insert(0, str(ROOT))
    try:
        import django

        django.setup()
        from django.conf import settings
        from django.contrib.auth import get_user_model
        from django.core.management import call_command

        call_command("migrate", verbosity=0)
        call_command("seed_demo", verbosity=0)

        from submissions.checks.queue import check_run_create
        from submissions.models import SubmissionVersion

        cache_cap = getattr(settings, "PORTAL_CHECK_CACHE_MAX_BYTES", 0)
        counter = _Counter()
        _count_storage_reads(counter)
        chair = get_user_model().objects.get(username="demo-chair")
        print(
            f"{'version':<34} {'files':>5} {'stored':>12} {'pass':>5} {'read':>12} {'read/stored':>11} {'opens':>6}"
        )
        for version in SubmissionVersion.objects.order_by("pk"):
            stored = sum(f.size_bytes for f in version.files.all())
            files = version.files.count()
            for label in ("cold", "warm", "nocache"):
                if label != "warm":
                    shutil.rmtree(settings.PORTAL_CHECK_CACHE_DIR, ignore_errors=True)
                settings.PORTAL_CHECK_CACHE_MAX_BYTES = 0 if label == "nocache" else cache_cap
                before_bytes, before_opens = counter.bytes, counter.opens
                check_run = check_run_create(version=version, actor=chair)
                check_run.refresh_from_db()
                read = counter.bytes - before_bytes
                print(
                    f"{str(version)[:34]:<34} {files:>5} {stored:>12,} {label:>5} {read:>12,} "
                    f"{read / stored:>11.2f} {counter.opens - before_opens:>6}  ({check_run.status})"
                )
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
