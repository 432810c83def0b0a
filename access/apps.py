"""App config for access (no models): installs the visibility table as every model's `objects.visible_to`."""

from django.apps import AppConfig


class AccessConfig(AppConfig):
    name = "access"
    verbose_name = "Access"

    def ready(self) -> None:
        from access.visibility import VISIBLE_TO
        from portal.visibility import register

        register(VISIBLE_TO)
