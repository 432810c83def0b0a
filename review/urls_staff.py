"""URLs of the auditor's and the chair's pages (mounted by review.urls under /review/)."""

from django.urls import path

from review import views_audit, views_chair
from spotchecks import views as spotcheck_views

staff_urlpatterns = [
    path("audit/", views_audit.audit_queue, name="audit_queue"),
    path("audit/<int:pk>/", views_audit.attestation, name="attestation"),
    path("audit/<int:pk>/attest/", views_audit.attest, name="attest"),
    path("audit/<int:pk>/evidence/", views_audit.evidence, name="evidence_request"),
    path("audit/<int:pk>/reject/", views_audit.reject, name="audit_reject"),
    path("audit/<int:pk>/recheck/", views_audit.recheck, name="audit_recheck"),
    path("audit/<int:pk>/waive/", views_audit.waiver_grant, name="waiver_grant"),
    # spot-checks (docs/remeasurement.md): start one, the polled panel, a raw output
    path("audit/<int:pk>/spotchecks/start/", spotcheck_views.spotcheck_start, name="spotcheck_start"),
    path("audit/<int:pk>/spotchecks/", spotcheck_views.spotcheck_panel, name="spotcheck_panel"),
    path(
        "audit/<int:pk>/spotchecks/<int:spotcheck_id>/evidence/<int:position>/",
        spotcheck_views.spotcheck_evidence,
        name="spotcheck_evidence",
    ),
    path("waivers/<int:waiver_id>/decide/", views_audit.waiver_decide, name="waiver_decide"),
    path("chair/", views_chair.dashboard, name="chair_dashboard"),
    path("chair/submissions/<int:pk>/", views_chair.chair_submission, name="chair_submission"),
    path("chair/submissions/<int:pk>/assign/", views_chair.assign, name="chair_assign"),
    path("chair/submissions/<int:pk>/draw/", views_chair.draw, name="chair_draw"),
    path("chair/assignments/<int:assignment_id>/release/", views_chair.release, name="chair_release"),
    path("conflicts/", views_chair.conflicts, name="conflicts"),
    path("conflicts/declare/", views_chair.conflict_declare, name="conflict_declare"),
    path("conflicts/<int:conflict_id>/remove/", views_chair.conflict_remove, name="conflict_remove"),
]
