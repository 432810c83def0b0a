"""What the steps of a check share: the attempt's compare-and-set guard and heartbeat, local copies of the version's
files, the token counter and the caps of a version, and findings and reports as rows PostgreSQL can store."""

from __future__ import annotations

import functools
import json
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

from django.conf import settings
from django.utils import timezone
from tokenizers import Tokenizer

from catalog.selectors import benchmark_chat_template, benchmark_tokenizer_json
from checker.judge.portal_rules import SubmissionScope
from checker.read.inputs import Limits
from checker.recompute.tokens import TokenCounter
from checker.report import json_safe
from submissions.models import CheckRun, Finding, SubmissionVersion
from submissions.storage import StoredFile, fetch_to_folder

HEARTBEAT_EVERY_S = 2.0


def is_current(run_id: int, attempt: int, *, lock: bool = False) -> CheckRun | None:
    runs = CheckRun.objects.filter(CheckRun.states.q("running"), pk=run_id, attempts=attempt)
    if lock:
        runs = runs.select_for_update()
    return runs.first()


def heartbeat(run_id: int, attempt: int, **fields) -> bool:
    """Prove the attempt is alive; False when the run moved on (then the caller should stop)."""
    return bool(
        CheckRun.objects.filter(CheckRun.states.q("running"), pk=run_id, attempts=attempt).update(
            heartbeat_at=timezone.now(), **fields
        )
    )


class Beat:
    """A checker progress callback that heart-beats at most every HEARTBEAT_EVERY_S seconds."""

    def __init__(self, run_id: int, attempt: int):
        self.run_id, self.attempt = run_id, attempt
        self.last = 0.0

    def __call__(self, stage: str = "", done: int = 0, total: int = 0, message: str = "") -> None:
        now = time.monotonic()
        if now - self.last >= HEARTBEAT_EVERY_S:
            self.last = now
            heartbeat(self.run_id, self.attempt)


@contextmanager
def fetched(version: SubmissionVersion, *, positions: set[int] | None = None, beat: Beat | None):
    """Local copies of the version's stored files (all of them, or those at `positions`), in upload order,
    under their own names, in a private folder removed on exit; served by the worker's cache when it can."""
    files = [f for f in version.files.order_by("position") if positions is None or f.position in positions]
    stored = [
        StoredFile(
            storage_key=f.storage_key, sha256=f.sha256, size_bytes=f.size_bytes, filename=f.original_filename
        )
        for f in files
    ]
    with tempfile.TemporaryDirectory(prefix=f"portal-v{version.pk}-") as folder:
        paths = fetch_to_folder(stored, Path(folder) / "files", on_chunk=beat)
        yield [(f.position, path) for f, path in zip(files, paths, strict=True)], Path(folder)


@functools.lru_cache(maxsize=8)
def _tokenizer_from_text(text: str):
    return Tokenizer.from_str(text)


def token_counter_for(version: SubmissionVersion) -> TokenCounter:
    benchmark = version.submission.benchmark
    return TokenCounter(
        _tokenizer_from_text(benchmark_tokenizer_json(benchmark)), chat=benchmark_chat_template(benchmark)
    )


def scope_of(submission) -> SubmissionScope:
    """What the portal-only rules need to know about the submission, as plain data."""
    system = submission.system
    revision = system.description_revisions.order_by("-number").values_list("number", flat=True).first()
    return SubmissionScope(
        submission_label=f"submission #{submission.pk}",
        system=system.name,
        model=submission.benchmark.model_id,
        registered_description=system.description if isinstance(system.description, dict) else {},
        registered_revision=revision,
    )


def storable_text(text: str) -> str:
    """Text PostgreSQL can store (text and jsonb hold no NUL and only valid UTF-8): a NUL shows as \\u0000 and a
    lone surrogate (bytes that were not UTF-8) as its escape. The checker already escapes what it quotes; this
    keeps one overlooked character from failing the whole check."""
    if "\x00" in text:
        text = text.replace("\x00", "\\u0000")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


def finding_rows(check_run: CheckRun, step: str, findings) -> list[Finding]:
    return [
        Finding(
            check_run=check_run,
            step=step,
            rule=storable_text(f.rule),
            severity=f.severity,
            file=storable_text(f.file or ""),
            line=f.line,
            pointer=storable_text(f.pointer or ""),
            point=storable_text(f.point or ""),
            message=storable_text(f.message),
            fix=storable_text(f.fix or ""),
        )
        for f in findings
    ]


def _storable(value):
    if isinstance(value, str):
        return storable_text(value)
    if isinstance(value, dict):
        return {storable_text(str(k)): _storable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_storable(v) for v in value]
    return value


def json_storable(value):
    return (
        _storable(json.loads(json.dumps(json_safe(value), default=str, allow_nan=False)))
        if value is not None
        else None
    )


def limits_for(version: SubmissionVersion) -> Limits:
    """The checker's caps for every step of a check of `version`; the inflation cap is taken of the version's size
    (every step, whichever files it opens, has the same cap)."""
    return Limits(
        max_inflation=float(settings.PORTAL_CHECK_MAX_INFLATION), inflation_basis_bytes=version.size_bytes
    )
