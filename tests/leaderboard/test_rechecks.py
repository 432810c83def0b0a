"""Re-checks of what is published when a rule set changes version (leaderboard.publishing.rechecks), with a result published
from the real sample run archives through the real upload, check and publication services: a rule-set bump
starts a campaign of re-check runs through the same pipeline, its report lists what changed per result, the
chair decides per result, and nothing published changes by itself."""

from __future__ import annotations

import shutil

import pytest

from audit.models import AuditEvent
from catalog.models import Benchmark
from checker.judge import ruleset as checker_ruleset
from leaderboard.models import Annotation, Challenge, Publication, RecheckCampaign, RecheckResult
from leaderboard.publishing import rechecks
from portal.errors import ApplicationError, ConflictError, NotAllowedError
from submissions.models import CheckRun
from submissions.selectors import check_run_latest
from tests.leaderboard.extension_support import published_result
from tests.states import put
from tests.submissions.support import RUN_ARCHIVES, api_client, make_catalog

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("storage_dir")]

# The preview rule set with one threshold changed: the minimum duration of an ultra-low-concurrency point is 20 s
# instead of 10 minutes, so the sample points that ran 20 s or more no longer draw the point-duration warning.
BUMPED = "endpoints-v1.0-preview-recheck"
BUMPED_YAML = f"""name: {BUMPED}
extends: endpoints-v1.0-preview
preview: true
description: the preview with one threshold changed (tests of re-checks)
points:
  min: 8
"""


@pytest.fixture
def rulesets(tmp_path, monkeypatch):
    """The packaged rule sets plus the bumped one, where the checker looks for them."""
    folder = tmp_path / "rulesets"
    shutil.copytree(checker_ruleset.RULESETS_DIR, folder)
    (folder / f"{BUMPED}.yaml").write_text(BUMPED_YAML)
    monkeypatch.setattr(checker_ruleset, "RULESETS_DIR", folder)
    return folder


@pytest.fixture
def published(role_users):
    benchmark, system = make_catalog(role_users["organisations"]["acme"])
    return published_result(role_users["submitter"], system, benchmark, list(RUN_ARCHIVES))


def _bump(publication: Publication) -> None:
    Benchmark.objects.filter(pk=publication.submission.benchmark_id).update(ruleset_version=BUMPED)


def test_a_rule_set_bump_makes_a_report_of_what_changed_and_the_chair_decides(
    role_users, published, rulesets
):
    chair = role_users["chair"]
    published_run = published.check_run
    frozen = (published.curve, published.headline, published.snapshot)
    with pytest.raises(ApplicationError) as nothing:
        rechecks.recheck_campaign_start(actor=chair)
    assert nothing.value.code == "recheck-nothing"
    _bump(published)

    campaign = rechecks.recheck_campaign_start(actor=chair, reason="points.min raised to 8")
    result = campaign.results.get()
    run = result.check_run
    assert run.purpose == CheckRun.Purpose.RECHECK and run.ruleset == BUMPED
    assert run.in_state("finished"), run.error_message  # eager pipeline in the test
    # The re-check run is never the version's current run.
    assert check_run_latest(published.version).pk == published_run.pk

    # The last run's own step wrote the report: no beat ran, nothing is left for the safety net.
    campaign.refresh_from_db()
    assert campaign.status == "reported"
    assert rechecks.recheck_campaigns_advance() == []
    result.refresh_from_db()
    assert campaign.status == "reported" and campaign.summary == {"results": 1, "changed": 1, "unchanged": 0}
    changes = result.changes
    assert changes["ruleset"] == ["endpoints-v1.0-preview", BUMPED]
    assert changes["verdict"] == ["failed", "failed"]
    # The one threshold: seven points pass the point count no more.
    assert [(f["rule"], f["old_severity"], f["severity"]) for f in changes["findings"]["changed"]] == [
        ("point-count", "info", "error")
    ]
    assert changes["findings"]["changed"][0]["messages"] == ["7 points < minimum 8."]
    # The official checker's rules did not change: the portal now disagrees with it on the point count.
    assert [f["rule"] for f in changes["findings"]["new"]] == ["official-checker-disagreement"]
    assert changes["findings"]["gone"] == []
    assert changes["metrics"] == []  # the same raw logs recompute the same numbers

    # Only the chair decides, once, with a reason.
    with pytest.raises(NotAllowedError):
        rechecks.recheck_result_decide(
            result=result, actor=role_users["auditor"], decision="annotate", reason="x"
        )
    with pytest.raises(ApplicationError):
        rechecks.recheck_result_decide(result=result, actor=chair, decision="annotate", reason=" ")
    rechecks.recheck_result_decide(
        result=result, actor=chair, decision="annotate", reason="Seven points; the rule now asks for eight."
    )
    result.refresh_from_db()
    assert result.status == "annotated" and result.decided_by == chair
    assert Annotation.objects.get(publication=published).text == (
        f"Re-checked with {BUMPED}: Seven points; the rule now asks for eight."
    )
    with pytest.raises(ConflictError):
        rechecks.recheck_result_decide(result=result, actor=chair, decision="no_action", reason="again")

    # Nothing published changed by itself: the same run, curve, headline and frozen record.
    published.refresh_from_db()
    assert published.check_run_id == published_run.pk
    assert (published.curve, published.headline, published.snapshot) == frozen
    assert check_run_latest(published.version).pk == published_run.pk
    actions = list(AuditEvent.objects.filter(action__startswith="recheck.").values_list("action", flat=True))
    assert sorted(actions) == ["recheck.annotated", "recheck.reported", "recheck.started"]

    # Up to date now: only a re-check of every revision starts, and the chair may open a challenge from it.
    with pytest.raises(ApplicationError):
        rechecks.recheck_campaign_start(actor=chair)
    again = rechecks.recheck_campaign_start(actor=chair, everything=True)
    second = again.results.get()
    second.refresh_from_db()
    assert RecheckCampaign.objects.get(pk=again.pk).status == "reported"
    assert second.changes["findings"] == changes["findings"]  # still against the run it was published with
    rechecks.recheck_result_decide(
        result=second, actor=chair, decision="challenge", reason="Point count below the new minimum."
    )
    challenge = Challenge.objects.get(publication=published)
    assert challenge.status == "open" and challenge.organisation is None and challenge.raised_by == chair
    assert RecheckResult.objects.get(pk=second.pk).challenge_id == challenge.pk
    assert not Publication.objects.get(pk=published.pk).is_retracted


def test_the_beat_starts_a_re_check_only_when_told_and_only_the_chair_starts_one(
    role_users, published, rulesets, settings
):
    _bump(published)
    with pytest.raises(NotAllowedError):
        rechecks.recheck_campaign_start(actor=role_users["submitter"])
    settings.PORTAL_RECHECK_AUTOMATIC = False
    assert rechecks.recheck_start_if_due() is None and not RecheckCampaign.objects.exists()
    settings.PORTAL_RECHECK_AUTOMATIC = True
    campaign_id = rechecks.recheck_start_if_due()
    campaign = RecheckCampaign.objects.get(pk=campaign_id)
    assert campaign.started_by is None and campaign.rulesets == {"llama3_1-8b": BUMPED}
    assert campaign.status == "reported"  # its last run wrote the report
    # The safety net: a campaign whose runs ended while its report was not written (a worker lost between the
    # last run's end and the report) is not decided on until the beat's pass writes it.
    put(RecheckCampaign.objects.filter(pk=campaign_id), "running", reported_at=None)
    with pytest.raises(ConflictError):  # one campaign at a time
        rechecks.recheck_campaign_start(actor=role_users["chair"], everything=True)
    with pytest.raises(ConflictError) as early:
        rechecks.recheck_result_decide(
            result=RecheckResult.objects.get(campaign_id=campaign_id),
            actor=role_users["chair"],
            decision="no_action",
            reason="fine",
        )
    assert early.value.code == "recheck-not-reported"
    assert rechecks.recheck_campaigns_advance() == [campaign_id]
    assert rechecks.recheck_campaigns_advance() == []
    assert AuditEvent.objects.filter(action="recheck.reported").count() == 2
    assert rechecks.recheck_start_if_due() is None  # this bump was re-checked already

    # The chair's API: the campaigns, one report, a decision; 403 to anyone else.
    chair_api = api_client(role_users["chair"])
    assert api_client(role_users["auditor"]).get("/api/v1/chair/rechecks/").status_code == 403
    campaigns = chair_api.get("/api/v1/chair/rechecks/").json()["results"]
    assert [(c["id"], c["status"], c["started_by"]) for c in campaigns] == [(campaign_id, "reported", None)]
    report = chair_api.get(f"/api/v1/chair/recheck-results/?campaign={campaign_id}").json()["results"]
    assert [(r["public_id"], r["revision"], r["status"]) for r in report] == [
        (published.public_id, 1, "pending")
    ]
    assert [f["rule"] for f in report[0]["changes"]["findings"]["changed"]] == ["point-count"]
    url = f"/api/v1/chair/recheck-results/{report[0]['id']}/decide/"
    assert (
        api_client(role_users["submitter"]).post(url, {"decision": "no_action", "reason": "x"}).status_code
        == 403
    )
    assert chair_api.post(url, {"decision": "no_action", "reason": ""}, format="json").status_code == 400
    decided = chair_api.post(url, {"decision": "no_action", "reason": "A preview rule set."}, format="json")
    assert decided.status_code == 200 and decided.json()["status"] == "no_action"
    again = chair_api.post(url, {"decision": "annotate", "reason": "later"}, format="json")
    assert again.status_code == 409 and again.json()["code"] == "state-conflict"
    assert AuditEvent.objects.filter(action="recheck.no_action").count() == 1
    assert not Annotation.objects.exists() and not Challenge.objects.exists()
