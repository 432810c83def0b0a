"""The buyer's pages of the leaderboard (views_query), included by leaderboard/urls.py."""

from django.urls import path

from leaderboard import views_query

urlpatterns = [
    path("slo/", views_query.slo, name="slo"),
    path("procurement/", views_query.procurement, name="procurement"),
]
