"""URLs of the review app (mounted at /review/)."""

from review.urls_reviewer import reviewer_urlpatterns  # the reviewer's dashboard, review page, file browser
from review.urls_staff import staff_urlpatterns  # the auditor's and the chair's pages
from review.urls_submitter import submitter_urlpatterns  # the submitter's writes from the submission page

app_name = "review"

urlpatterns = [
    *reviewer_urlpatterns,
    *staff_urlpatterns,
    *submitter_urlpatterns,
]
