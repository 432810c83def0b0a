"""URLs of the review app (mounted at /review/)."""

from review.urls_reviewer import reviewer_urlpatterns  # the reviewer's dashboard, review page, file browser

app_name = "review"

urlpatterns = [
    *reviewer_urlpatterns,
]
