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
    path("tender/save/", views_tender.tender_save, name="tender_save"),
    path("tender/<uuid:pk>/", views_tender.tender_saved, name="tender_saved"),
    path("tender/<uuid:pk>/print/", views_tender.tender_saved_print, name="tender_saved_print"),
    path("tender/<uuid:pk>/score-sheet.csv", views_tender.tender_saved_csv, name="tender_saved_csv"),
    path("tender/<uuid:pk>/edit/", views_tender.tender_saved_edit, name="tender_saved_edit"),
    path("tender/<uuid:pk>/share/", views_tender.tender_saved_share, name="tender_saved_share"),
    path("tender/<uuid:pk>/unshare/", views_tender.tender_saved_unshare, name="tender_saved_unshare"),
    path("tender/<uuid:pk>/delete/", views_tender.tender_saved_delete, name="tender_saved_delete"),
    path("levels/", views_tender.levels, name="levels"),
]
