"""URLs of the audit app (mounted at /audit/)."""

from django.urls import path

from audit.views import log as views

app_name = "audit"

urlpatterns = [
    path("", views.event_list, name="event_list"),
    path("head", views.head, name="head"),
]
