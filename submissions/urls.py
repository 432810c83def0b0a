"""URLs of the submissions app (mounted at /)."""

from django.urls import path

from submissions import views

app_name = "submissions"

urlpatterns = [
    path("dashboard/", views.dashboard, name="dashboard"),
]
