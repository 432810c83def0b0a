"""`portal preview` against a live server: the real AIPerf output folders go up as one archive, the check runs,
the points and the web address are printed, and a file no tool wrote ends in a finding and exit 1."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from previews.models import Preview
from tests.previews.support import FIXTURES

pytestmark = pytest.mark.django_db(transaction=True)
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def portal_env(role_users, live_server, storage_dir, sample_catalog):
    from tests.submissions.support import api_token_key

    return {"PORTAL_URL": live_server.url, "PORTAL_TOKEN": api_token_key(role_users["submitter"])}


def _portal(*args, env):
    return subprocess.run(
        [sys.executable, "-m", "checker.cli.main", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **env},
    )


def test_portal_preview_uploads_output_folders_and_prints_the_points(portal_env, sample_catalog):
    benchmark, system = sample_catalog
    folders = [str(FIXTURES / "aiperf" / c) for c in ("c1", "c4", "c8")]
    done = _portal(
        "preview",
        *folders,
        "--system",
        system.name,
        "--benchmark",
        benchmark.model_id,
        "--name",
        "AIPerf",
        env=portal_env,
    )
    assert done.returncode == 0, done.stderr + done.stdout
    preview = Preview.objects.get()
    assert preview.tool == "aiperf" and preview.in_state("checked")
    assert sorted(p["concurrency"] for p in preview.curve["points"]) == [1, 4, 8]
    assert "Not an MLPerf result" in done.stdout
    assert f"on the web: {portal_env['PORTAL_URL']}/previews/{preview.pk}/" in done.stdout
    assert "concurrency@4: system_tps" in done.stdout


def test_portal_preview_of_a_file_no_tool_wrote_fails_with_the_finding(portal_env, sample_catalog, tmp_path):
    benchmark, system = sample_catalog
    stray = tmp_path / "notes.json"
    stray.write_text('{"hello": 1}')
    done = _portal(
        "preview", str(stray), "--system", system.name, "--benchmark", benchmark.model_id, env=portal_env
    )
    assert done.returncode == 1, done.stderr
    assert "[import-unrecognised]" in done.stdout
    unknown = _portal(
        "preview", str(stray), "--system", "Nope", "--benchmark", benchmark.model_id, env=portal_env
    )
    assert unknown.returncode == 2 and "No system 'Nope'" in unknown.stderr
