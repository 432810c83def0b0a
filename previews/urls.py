"""URLs of the previews app (mounted at /previews/): the organisation's own pages."""

from django.urls import path

from previews.views import previews as views

app_name = "previews"

urlpatterns = [
    path("", views.preview_list, name="list"),
    path("<int:pk>/", views.preview_detail, name="detail"),
    path("<int:pk>/recheck/", views.preview_recheck, name="recheck"),
    path("<int:pk>/delete/", views.preview_delete, name="delete"),
]
