"""URLs of the leaderboard app (mounted at /leaderboard/)."""

from django.urls import path

from leaderboard import views

app_name = "leaderboard"

urlpatterns = [
    path("", views.index, name="index"),
]
