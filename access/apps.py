"""App config for access (no models)."""

from django.apps import AppConfig


class AccessConfig(AppConfig):
    name = "access"
    verbose_name = "Access"
