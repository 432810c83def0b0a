"""Public URLs of a published result's re-measurements (mounted at /)."""

from django.urls import path

from spotchecks import views

app_name = "remeasurements"

urlpatterns = [
    path(
        "results/<str:public_id>/remeasurements/<int:spotcheck_id>/evidence/<int:position>/",
        views.remeasurement_evidence,
        name="evidence",
    ),
]
