"""Public URLs of published results (mounted at /): result pages, their data and bundle files, challenges, and a
system's history."""

from django.urls import path

from leaderboard.views import downloads as download_views
from leaderboard.views import evidence as evidence_views
from leaderboard.views import public as views
from leaderboard.views import publication as publication_views

app_name = "results"

urlpatterns = [
    path("results/<str:public_id>/", views.result, name="detail"),
    path(
        "results/<str:public_id>/points.json", download_views.result_data, {"fmt": "json"}, name="data_json"
    ),
    path("results/<str:public_id>/points.csv", download_views.result_data, {"fmt": "csv"}, name="data_csv"),
    path("results/<str:public_id>/files/<int:position>/", download_views.result_file, name="file"),
    path(
        "results/<str:public_id>/revisions/<int:number>/evidence-pack/",
        evidence_views.evidence_pack_revision,
        name="evidence_pack",
    ),
    path(
        "results/<str:public_id>/annotations/<int:annotation_id>/evidence-pack/",
        evidence_views.evidence_pack_annotation,
        name="annotation_evidence_pack",
    ),
    path("results/<str:public_id>/challenge/", publication_views.challenge_raise, name="challenge"),
    path(
        "results/challenges/<int:pk>/resolve/", publication_views.challenge_resolve, name="challenge_resolve"
    ),
    path("systems/<int:system_id>/history/", views.system_history, name="system_history"),
]
