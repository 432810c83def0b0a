"""URLs of the submitter's side of the review (mounted by review.urls under /review/); the panel itself is on
the submission page (submissions:detail), and every write goes back there."""

from django.urls import path

from review import views_submitter

submitter_urlpatterns = [
    path("submissions/<int:pk>/thread/", views_submitter.comment_post, name="submitter_comment"),
    path("submissions/<int:pk>/waivers/", views_submitter.waiver_request, name="waiver_request"),
    path("evidence/<int:evidence_id>/answer/", views_submitter.evidence_answer, name="evidence_answer"),
]
