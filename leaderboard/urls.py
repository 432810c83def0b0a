"""URLs of the leaderboard app (mounted at /leaderboard/): benchmark leaderboards, compare, and the submitter's
choice of publication date."""

from django.urls import include, path

from leaderboard.views import extensions as views_extensions
from leaderboard.views import public as views
from leaderboard.views import publication as publication_views

app_name = "leaderboard"

urlpatterns = [
    path("", views.index, name="index"),
    path("", include("leaderboard.urls_query")),  # slo/, procurement/: before <model_id>/
    path("submissions/<int:pk>/publish/", publication_views.publication_choose, name="publication_choose"),
    path("submissions/<int:pk>/extend/", views_extensions.extension_open, name="extension_open"),
    path("<str:model_id>/", views.benchmark, name="benchmark"),
    path("<str:model_id>/compare/", views.compare, name="compare"),
]
