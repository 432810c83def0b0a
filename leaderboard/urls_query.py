"""The buyer's pages of the leaderboard (leaderboard.views.buyer), included by leaderboard/urls.py."""

from django.urls import path

from leaderboard.views import buyer as views_query
from leaderboard.views import tender as views_tender

urlpatterns = [
    path("slo/", views_query.slo, name="slo"),
    path("procurement/", views_query.procurement, name="procurement"),
    path("sizing/", views_tender.sizing, name="sizing"),
    path("claims/", views_tender.claims, name="claims"),
    path("tender/", views_tender.tender_score, name="tender_score"),
    path("levels/", views_tender.levels, name="levels"),
]
