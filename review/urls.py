"""URLs of the review app (mounted at /review/)."""

from django.urls import path

from review import views

app_name = "review"

urlpatterns = [
    path("", views.queue, name="queue"),
]
