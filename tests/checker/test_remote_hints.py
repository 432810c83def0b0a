"""`portal submit` / `portal status` print a published result's raw logs uploaded again as a hint before anything
else, with what to do (the finding the portal's check wrote, as its API gives it)."""

from __future__ import annotations

import io

from checker.cli.remote.check_runs import print_check_run


def test_an_upload_of_published_runs_prints_already_published_and_how_to_extend_first():
    finding = {
        "rule": "raw-log-published",
        "severity": "warning",
        "file": "AX-8000_c8.tar.gz:c8/events.jsonl",
        "line": None,
        "point": None,
        "message": "Already published as EP-00003: the raw logs of Acme_AX-8000/llama3_1-8b/r8, "
        "Acme_AX-8000/llama3_1-8b/r16 are the same runs (same SHA-256) as that result's. Extend it or open a revision.",
        "fix": "Withdraw this draft; upload only the new or re-measured points' archives with `portal submit ARCHIVES "
        "--extends EP-00003 --stack TEXT` (a revision of EP-00003).",
        "portal_only": True,
    }
    run = {
        "id": 7,
        "status": "passed",
        "counts": {"error": 0, "warning": 1, "info": 0},
        "findings": [finding],
    }
    out = io.StringIO()
    print_check_run(run, out=out)
    lines = out.getvalue().splitlines()
    assert lines[2] == (
        "  hint: Already published as EP-00003: Withdraw this draft; upload only the new or re-measured points' "
        "archives with `portal submit ARCHIVES --extends EP-00003 --stack TEXT` (a revision of EP-00003)."
    )
    assert any(
        line.startswith("  WARNING raw-log-published (portal only): Already published") for line in lines
    )
