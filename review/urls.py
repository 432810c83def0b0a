"""URLs of the review app (mounted at /review/), one table by persona: the reviewer's pages (review.views.reviewer),
the auditor's (review.views.auditor), the chair's (review.views.chair, and the chair's re-checks of what is
published, leaderboard.views.chair), and the submitter's writes from the submission page (review.views.submitter;
the panel itself is on the submission page, submissions:detail, and every write goes back there)."""

from django.urls import path

from leaderboard.views import chair as views_rechecks
from review.views import auditor as views_audit
from review.views import chair as views_chair
from review.views import reviewer as views_reviewer
from review.views import submitter as views_submitter
from spotchecks.views import auditor as spotcheck_pages
from spotchecks.views import downloads as spotcheck_downloads

app_name = "review"

urlpatterns = [
    # the reviewer: dashboard, review page, file browser
    path("", views_reviewer.dashboard, name="queue"),
    path("assignments/<int:pk>/accept/", views_reviewer.assignment_accept, name="assignment_accept"),
    path("assignments/<int:pk>/decline/", views_reviewer.assignment_decline, name="assignment_decline"),
    path("submissions/<int:pk>/", views_reviewer.review_page, name="review_page"),
    path("submissions/<int:pk>/review/", views_reviewer.review_create, name="review_create"),
    path("submissions/<int:pk>/comments/", views_reviewer.comment_create, name="comment_create"),
    path(
        "submissions/<int:pk>/comments/<int:comment_pk>/close/",
        views_reviewer.objection_close,
        name="objection_close",
    ),
    path(
        "submissions/<int:pk>/versions/<int:number>/files/<int:position>/",
        views_reviewer.file_browser,
        name="file_browser",
    ),
    # the auditor
    path("audit/", views_audit.audit_queue, name="audit_queue"),
    path("audit/<int:pk>/", views_audit.attestation, name="attestation"),
    path("audit/<int:pk>/attest/", views_audit.attest, name="attest"),
    path("audit/<int:pk>/evidence/", views_audit.evidence, name="evidence_request"),
    path("audit/<int:pk>/reject/", views_audit.reject, name="audit_reject"),
    path("audit/<int:pk>/recheck/", views_audit.recheck, name="audit_recheck"),
    path("audit/<int:pk>/waive/", views_audit.waiver_grant, name="waiver_grant"),
    # spot-checks (docs/remeasurement.md): start one, the polled panel, a raw output
    path("audit/<int:pk>/spotchecks/start/", spotcheck_pages.spotcheck_start, name="spotcheck_start"),
    path("audit/<int:pk>/spotchecks/", spotcheck_pages.spotcheck_panel, name="spotcheck_panel"),
    path(
        "audit/<int:pk>/spotchecks/<int:spotcheck_id>/evidence/<int:position>/",
        spotcheck_downloads.spotcheck_evidence,
        name="spotcheck_evidence",
    ),
    path("waivers/<int:waiver_id>/decide/", views_audit.waiver_decide, name="waiver_decide"),
    # the chair
    path("chair/", views_chair.dashboard, name="chair_dashboard"),
    path("chair/submissions/<int:pk>/", views_chair.chair_submission, name="chair_submission"),
    path("chair/submissions/<int:pk>/assign/", views_chair.assign, name="chair_assign"),
    path("chair/submissions/<int:pk>/draw/", views_chair.draw, name="chair_draw"),
    path("chair/assignments/<int:assignment_id>/release/", views_chair.release, name="chair_release"),
    path("conflicts/", views_chair.conflicts, name="conflicts"),
    path("conflicts/declare/", views_chair.conflict_declare, name="conflict_declare"),
    path("conflicts/<int:conflict_id>/remove/", views_chair.conflict_remove, name="conflict_remove"),
    path("chair/rechecks/", views_rechecks.recheck_list, name="chair_rechecks"),
    path("chair/rechecks/start/", views_rechecks.recheck_start, name="chair_recheck_start"),
    path(
        "chair/rechecks/results/<int:pk>/decide/",
        views_rechecks.recheck_decide,
        name="chair_recheck_decide",
    ),
    # the submitter, from the submission page
    path("submissions/<int:pk>/thread/", views_submitter.comment_post, name="submitter_comment"),
    path("submissions/<int:pk>/waivers/", views_submitter.waiver_request, name="waiver_request"),
    path("evidence/<int:evidence_id>/answer/", views_submitter.evidence_answer, name="evidence_answer"),
]
