"""App config for the audit log."""

from django.apps import AppConfig


class AuditConfig(AppConfig):
    name = "audit"
    verbose_name = "Audit"

    def ready(self):
        from audit import system_checks  # noqa: F401 - registers the deploy check
