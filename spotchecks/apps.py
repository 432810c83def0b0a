"""App config for spot-checks (audit by re-measurement, docs/remeasurement.md)."""

from django.apps import AppConfig


class SpotchecksConfig(AppConfig):
    name = "spotchecks"
    verbose_name = "Spot-checks"

    def ready(self) -> None:
        from spotchecks import tasks  # noqa: F401  (registered in every process: the services queue it by name)
