"""`portal submit` as a first-time submitter meets it, against a live server (PostgreSQL, local storage): the
system and benchmark read from the files, the draft it goes to said, the web address printed, progress as plain
lines when stderr is not a terminal, `--json`, and where to make a token when the portal refuses one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from submissions.models import CheckRun, Submission, SubmissionVersion
from tests.states import put
from tests.submissions.support import RUN_ARCHIVES, make_catalog

pytestmark = pytest.mark.django_db(transaction=True)
ROOT = Path(__file__).resolve().parents[2]
BUNDLE = ROOT / "tests/checker/fixtures/bundle/AcmeCompute"  # two systems: Acme_AX-8000 and Acme_AX-4000


@pytest.fixture
def portal_env(role_users, live_server, storage_dir, settings):
    from tests.submissions.support import api_token_key

    settings.PORTAL_UPLOAD_PART_BYTES = 64 * 1024
    make_catalog(role_users["organisations"]["acme"])
    token = api_token_key(role_users["submitter"])
    return {"PORTAL_URL": live_server.url, "PORTAL_TOKEN": token}


def _portal(*args, env):
    return subprocess.run(
        [sys.executable, "-m", "checker.cli.main", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **env},
    )


def test_submit_reads_system_and_benchmark_from_the_files_and_prints_the_web_address(portal_env):
    first = _portal("submit", *map(str, RUN_ARCHIVES[:2]), env=portal_env)
    assert first.returncode == 0, first.stderr
    submission = Submission.objects.get()
    assert (submission.system.name, submission.benchmark.model_id) == ("Acme_AX-8000", "llama3_1-8b")
    assert "Acme_AX-8000 on llama3_1-8b (read from the files); creating a new draft" in first.stderr
    address = f"{portal_env['PORTAL_URL']}/submissions/{submission.pk}/?version=1#check"
    assert f"on the web: {address}" in first.stdout
    # Not a terminal: the upload progress is plain lines, not a carriage-return bar.
    assert f"uploading {RUN_ARCHIVES[0].name}: 100%" in first.stderr and "\r" not in first.stderr
    assert "verifying" in first.stderr

    # Fixed files, same command: a new draft (never a guess at the open one), naming the open one and the option.
    second = _portal("submit", str(RUN_ARCHIVES[0]), env=portal_env)
    assert second.returncode == 0, second.stderr
    assert (
        f"creating a new draft (open already: #{submission.pk} (draft); to add a version to one instead, run "
        f"again with --submission {submission.pk})" in second.stderr
    )
    assert Submission.objects.count() == 2
    assert SubmissionVersion.objects.filter(submission=submission).count() == 1

    # --submission adds a version to the one it names, and says so before uploading.
    third = _portal("submit", str(RUN_ARCHIVES[0]), "--submission", str(submission.pk), env=portal_env)
    assert third.returncode == 0, third.stderr
    assert SubmissionVersion.objects.filter(submission=submission).count() == 2
    assert f"/submissions/{submission.pk}/?version=2#check" in third.stdout
    assert Submission.objects.count() == 2


def test_submit_never_adds_a_version_to_a_submission_in_review(portal_env):
    first = _portal("submit", str(RUN_ARCHIVES[0]), "-q", env=portal_env)
    assert first.returncode == 0, first.stderr
    submission = Submission.objects.get()
    put(Submission.objects.filter(pk=submission.pk), "in_review")
    refused = _portal("submit", str(RUN_ARCHIVES[0]), "--submission", str(submission.pk), env=portal_env)
    assert refused.returncode == 2, refused.stderr
    assert SubmissionVersion.objects.filter(submission=submission).count() == 1


def test_submit_asks_for_the_system_only_when_the_files_name_several(portal_env):
    ambiguous = _portal("submit", str(BUNDLE), env=portal_env)
    assert ambiguous.returncode == 2
    assert "the files name 2 systems (Acme_AX-4000, Acme_AX-8000): give --system NAME" in ambiguous.stderr
    assert "--benchmark" not in ambiguous.stderr.split("(or --submission")[0]  # one benchmark: not asked
    assert not Submission.objects.exists()
    chosen = _portal("submit", str(BUNDLE), "--system", "Acme_AX-8000", "--wait", env=portal_env)
    assert "Acme_AX-8000 on llama3_1-8b (read from the files)" in chosen.stderr
    assert (
        "uploading the Acme_AX-8000/llama3_1-8b curve only (leaving out Acme_AX-4000/llama3_1-8b)"
        in chosen.stdout
    )
    submission = Submission.objects.get()
    assert submission.system.name == "Acme_AX-8000"
    # Only that curve went up: its seven points, and not one submission-scope error for the other system's.
    run = CheckRun.objects.get(version__submission=submission)
    assert run.in_state("finished"), run.error_message
    assert set(run.point_metrics.values_list("system", flat=True)) == {"Acme_AX-8000"}
    assert not run.findings.filter(rule="submission-scope").exists()


def test_submit_names_an_unregistered_system_read_from_the_files(portal_env):
    from submissions.models import System

    System.objects.all().delete()
    result = _portal("submit", str(RUN_ARCHIVES[0]), env=portal_env)
    assert result.returncode == 2
    assert "no system 'Acme_AX-8000'" in result.stderr and "/systems/" in result.stderr


def test_submit_json_prints_status_findings_and_points(portal_env):
    result = _portal("submit", *map(str, RUN_ARCHIVES[:3]), "--json", env=portal_env)
    run = CheckRun.objects.get()
    assert result.returncode == {"passed": 0, "failed": 1}[run.status], result.stderr
    report = json.loads(result.stdout)  # stdout is the JSON only: every message went to stderr
    submission = Submission.objects.get()
    assert report["submission"] == submission.pk and report["version"] == 1
    assert report["url"] == f"{portal_env['PORTAL_URL']}/submissions/{submission.pk}/?version=1#check"
    assert report["status"] == run.status and report["counts"] == run.counts
    assert len(report["findings"]) == run.findings.count()
    assert all(isinstance(f["portal_only"], bool) for f in report["findings"])
    keys = sorted(p["key"] for p in report["points"])
    assert keys == sorted(run.point_metrics.values_list("key", flat=True))
    assert all(p["key"].rsplit("/", 1)[1].startswith("r") for p in report["points"])
    assert {p["region"] for p in report["points"]} <= {
        "low_latency",
        "low_concurrency",
        "med_concurrency",
        "high_concurrency",
        "margin",
        "offline",
        None,
    }


def test_submit_says_where_to_create_a_token(portal_env):
    url = portal_env["PORTAL_URL"]
    missing = _portal("submit", str(RUN_ARCHIVES[0]), env={"PORTAL_URL": url, "PORTAL_TOKEN": ""})
    assert missing.returncode == 2
    assert "no API token given" in missing.stderr and f"{url}/accounts/tokens/" in missing.stderr
    refused = _portal("submit", str(RUN_ARCHIVES[0]), env={"PORTAL_URL": url, "PORTAL_TOKEN": "not-a-token"})
    assert refused.returncode == 2
    assert "refused the API token" in refused.stderr and f"{url}/accounts/tokens/" in refused.stderr
    status = _portal("status", "1", env={"PORTAL_URL": url, "PORTAL_TOKEN": "not-a-token"})
    assert status.returncode == 2 and f"{url}/accounts/tokens/" in status.stderr
    assert not Submission.objects.exists()


def test_submit_draws_a_progress_bar_on_a_terminal(portal_env):
    import pty
    import select

    leader, follower = pty.openpty()  # stderr is a terminal here, stdout is not
    process = subprocess.Popen(
        [sys.executable, "-m", "checker.cli.main", "submit", *map(str, RUN_ARCHIVES[:2]), "--wait"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=follower,
        env={**os.environ, **portal_env},
    )
    os.close(follower)
    seen = b""
    while True:
        ready, _, _ = select.select([leader], [], [], 300)
        if not ready:
            break
        try:
            chunk = os.read(leader, 4096)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        seen += chunk
    stdout, _ = process.communicate(timeout=300)
    os.close(leader)
    assert process.returncode in (0, 1), seen.decode(errors="replace")
    text = seen.decode(errors="replace")
    assert f"\r{RUN_ARCHIVES[0].name}" in text and "100%" in text and "[####" in text  # the bar, redrawn
    assert "uploading " not in text  # not the plain lines meant for logs
    assert "on the web: " in stdout.decode()


def test_submit_wait_shows_the_checks_progress_from_a_real_worker(
    role_users, live_server, live_pipeline, settings
):
    from tests.submissions.support import api_token_key

    settings.PORTAL_UPLOAD_PART_BYTES = 64 * 1024
    make_catalog(role_users["organisations"]["acme"])
    env = {
        "PORTAL_URL": live_server.url,
        "PORTAL_TOKEN": api_token_key(role_users["submitter"]),
    }
    live_pipeline(PORTAL_CHECK_TEST_POINT_DELAY_S=2)  # each point takes a moment: the client sees it running
    result = _portal("submit", *map(str, RUN_ARCHIVES[:2]), "--wait", "--timeout", "240", env=env)
    run = CheckRun.objects.get()
    assert result.returncode == {"passed": 0, "failed": 1}[run.status], result.stderr
    # Not a terminal: one plain line per change of the check's state, then the result on stdout.
    lines = [line for line in result.stderr.splitlines() if line.startswith("checking: ")]
    assert lines, result.stderr
    assert all(a != b for a, b in zip(lines, lines[1:], strict=False)), (
        lines
    )  # a line per change, not per poll
    assert any("recomputing load points" in line or "waiting for a worker" in line for line in lines), lines
    assert f"check run {run.pk}: {run.status}" in result.stdout
    assert f"/submissions/{run.version.submission_id}/?version=1#check" in result.stdout


def test_submit_extends_a_published_result_with_new_points(portal_env, role_users):
    from catalog.models import Benchmark
    from leaderboard.models import Publication
    from submissions.models import System
    from tests.leaderboard.extension_support import published_result

    # portal_env's catalog: the sample system and benchmark
    system = System.objects.get(name="Acme_AX-8000")
    benchmark = Benchmark.objects.filter(model_id="llama3_1-8b").first()
    publication = published_result(role_users["submitter"], system, benchmark, list(RUN_ARCHIVES))
    extension_archive = ROOT / "tests/checker/fixtures/extension/AX-8000-v1.1_c48.tar.gz"
    needs_stack = _portal(
        "submit", str(extension_archive), "--extends", publication.public_id, env=portal_env
    )
    assert needs_stack.returncode == 2 and "--extends needs --stack TEXT" in needs_stack.stderr
    opened = _portal(
        "submit",
        str(extension_archive),
        "--extends",
        publication.public_id,
        "--stack",
        "acme-serve 1.1",
        "--software",
        "acme-serve 0.9 -> 1.1",
        env=portal_env,
    )
    assert opened.returncode == 0, opened.stderr
    extension = Submission.objects.get(extends=publication.submission)
    assert f"extension of {publication.public_id} opened: draft #{extension.pk}" in opened.stderr
    assert extension.stack == "acme-serve 1.1" and extension.versions.count() == 1
    assert Publication.objects.count() == 1
