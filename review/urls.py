"""URLs of the review app (mounted at /review/)."""

from django.urls import path

from leaderboard.views import chair as views_rechecks  # the chair's re-checks (leaderboard.rechecks)
from review.urls_reviewer import reviewer_urlpatterns  # the reviewer's dashboard, review page, file browser
from review.urls_staff import staff_urlpatterns  # the auditor's and the chair's pages
from review.urls_submitter import submitter_urlpatterns  # the submitter's writes from the submission page

app_name = "review"

urlpatterns = [
    *reviewer_urlpatterns,
    *staff_urlpatterns,
    *submitter_urlpatterns,
    path("chair/rechecks/", views_rechecks.recheck_list, name="chair_rechecks"),
    path("chair/rechecks/start/", views_rechecks.recheck_start, name="chair_recheck_start"),
    path(
        "chair/rechecks/results/<int:pk>/decide/",
        views_rechecks.recheck_decide,
        name="chair_recheck_decide",
    ),
]
