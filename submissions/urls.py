"""URLs of the submissions app (mounted at /): the submitter pages."""

from django.urls import path

from review.lifecycle import BUTTON_TRANSITIONS
from submissions.views import rules as rule_views
from submissions.views import submissions as views
from submissions.views import systems as system_views

app_name = "submissions"

urlpatterns = [
    path("dashboard/", views.dashboard, name="dashboard"),
    path("submissions/new/", views.submission_create, name="create"),
    path("submissions/<int:pk>/", views.submission_detail, name="detail"),
    # One POST route per lifecycle action (submit, withdraw, reject...), named after it.
    *(
        path(
            f"submissions/<int:pk>/{row.action}/",
            views.submission_transition,
            {"action": row.action},
            name=row.action,
        )
        for row in BUTTON_TRANSITIONS
    ),
    path("submissions/<int:pk>/versions/<int:number>/check/", views.check_fragment, name="check_fragment"),
    path("submissions/<int:pk>/endpoint/", views.endpoint_declare_view, name="endpoint"),
    path("submissions/<int:pk>/versions/<int:number>/recheck/", views.version_recheck, name="recheck"),
    path(
        "submissions/<int:pk>/versions/<int:number>/report.json",
        views.version_report_json,
        name="report_json",
    ),
    path("submissions/<int:pk>/versions/<int:number>/summary/", views.version_summary, name="summary"),
    path("submissions/<int:pk>/compare/", views.version_compare, name="compare"),
    path(
        "submissions/<int:pk>/versions/<int:number>/files/<int:position>/",
        views.version_file_download,
        name="download",
    ),
    path("systems/", system_views.system_list, name="systems"),
    path("systems/new/", system_views.system_register, name="system_register"),
    path("systems/<int:pk>/", system_views.system_detail, name="system_detail"),
    path(
        "systems/<int:pk>/description/",
        system_views.system_update_description,
        name="system_update_description",
    ),
    path("rules/", rule_views.rules, name="rules"),
]
