"""Helpers for the extension tests: a published result made from the real sample run archives through the real
services, and run archives re-labelled (another concurrency, another stack or hardware)."""

from __future__ import annotations

import io
import json
import tarfile
from collections.abc import Callable
from pathlib import Path

import yaml
from django.test import override_settings

from leaderboard.publishing import services
from submissions.models import CheckRun, Submission
from tests.states import put
from tests.submissions.support import RUN_ARCHIVES, api_client, api_upload_run_archives


def archive(concurrency: int) -> Path:
    return next(path for path in RUN_ARCHIVES if path.name == f"AX-8000_c{concurrency}.tar.gz")


def relabelled(
    path: Path,
    tmp_path: Path,
    *,
    concurrency: int | None = None,
    description: Callable[[dict], None] | None = None,
    name: str | None = None,
) -> Path:
    """A copy of a run archive: moved to another concurrency (folder, point.yaml, config.yaml) and/or with its
    system_desc.json edited. Written under tmp_path with `name` (default: the original name)."""
    with tarfile.open(path, "r:gz") as source:
        members = [(m, source.extractfile(m).read() if m.isfile() else None) for m in source.getmembers()]
    old_dir = members[0][0].name.split("/")[0]
    new_dir = f"c{concurrency}" if concurrency is not None else old_dir
    out = tmp_path / (name or path.name)
    with tarfile.open(out, "w:gz") as tar:
        for member, data in members:
            member_name = new_dir + member.name[len(old_dir) :]
            if data is not None and concurrency is not None and member.name.endswith("/point.yaml"):
                point = yaml.safe_load(data)
                point["concurrency"] = concurrency
                point["warmup"]["concurrency"] = concurrency
                data = yaml.safe_dump(point, sort_keys=False).encode()
            elif data is not None and concurrency is not None and member.name.endswith("/config.yaml"):
                config = yaml.safe_load(data)
                config["settings"]["load_pattern"]["target_concurrency"] = concurrency
                data = yaml.safe_dump(config, sort_keys=False).encode()
            elif data is not None and description is not None and member.name.endswith("/system_desc.json"):
                loaded = json.loads(data)
                description(loaded)
                data = json.dumps(loaded, indent=2).encode()
            info = tarfile.TarInfo(member_name)
            info.type, info.mode, info.mtime = member.type, member.mode, member.mtime
            if data is None:
                tar.addfile(info)
            else:
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    return out


def checked(user, submission: Submission, paths: list[Path]) -> CheckRun:
    """Upload `paths` as one version of `submission` (eager pipeline) and return its finished check run."""
    with override_settings(PORTAL_UPLOAD_PART_BYTES=256 * 1024):
        body = api_upload_run_archives(api_client(user), submission_id=submission.pk, paths=paths)
    run = CheckRun.objects.get(version_id=body["version"]["id"])
    assert run.status in (CheckRun.Status.PASSED, CheckRun.Status.FAILED), run.error_message
    return run


def to_audited(submission: Submission) -> Submission:
    """Skip review and audit (tested elsewhere): the latest version is the frozen, audited one."""
    version = submission.versions.order_by("-number").first()
    put(Submission.objects.filter(pk=submission.pk), "audited", submitted_version=version)
    submission.refresh_from_db()
    return submission


def published_result(user, system, benchmark, paths: list[Path], *, stack: str = "acme-serve 0.9"):
    """A result published now from `paths` through the real upload, check and publication services."""
    from submissions.services import submission_create

    submission = submission_create(actor=user, system=system, benchmark=benchmark, title="base")
    Submission.objects.filter(pk=submission.pk).update(stack=stack)
    checked(user, submission, paths)
    to_audited(submission)
    return services.publication_schedule(submission=submission, actor=user, mode="now")
