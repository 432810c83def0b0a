"""URLs of the reviewer's pages (mounted by review.urls under /review/)."""

from django.urls import path

from review import views_reviewer

reviewer_urlpatterns = [
    path("", views_reviewer.dashboard, name="queue"),
    path("assignments/<int:pk>/accept/", views_reviewer.assignment_accept, name="assignment_accept"),
    path("assignments/<int:pk>/decline/", views_reviewer.assignment_decline, name="assignment_decline"),
    path("submissions/<int:pk>/", views_reviewer.review_page, name="review_page"),
    path("submissions/<int:pk>/review/", views_reviewer.review_create, name="review_create"),
    path("submissions/<int:pk>/comments/", views_reviewer.comment_create, name="comment_create"),
    path(
        "submissions/<int:pk>/comments/<int:comment_pk>/close/",
        views_reviewer.objection_close,
        name="objection_close",
    ),
    path(
        "submissions/<int:pk>/versions/<int:number>/files/<int:position>/",
        views_reviewer.file_browser,
        name="file_browser",
    ),
]
