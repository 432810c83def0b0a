"""App config for submissions."""

from django.apps import AppConfig


class SubmissionsConfig(AppConfig):
    name = "submissions"
    verbose_name = "Submissions"

    def ready(self) -> None:
        # Register the check pipeline's tasks in every process (web included): the services queue them by
        # name, so that the tasks module can import the services and not the other way round.
        from submissions import tasks  # noqa: F401
