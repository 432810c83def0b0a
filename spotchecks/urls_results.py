"""Public URLs of a published result's re-measurements (mounted at /)."""

from django.urls import path

from spotchecks.views import acceptance, downloads

app_name = "remeasurements"

urlpatterns = [
    path("results/<str:public_id>/acceptance/", acceptance.acceptance, name="acceptance"),
    path(
        "results/<str:public_id>/remeasurements/<int:spotcheck_id>/evidence/<int:position>/",
        downloads.remeasurement_evidence,
        name="evidence",
    ),
]
