"""App config for previews."""

from django.apps import AppConfig


class PreviewsConfig(AppConfig):
    name = "previews"
    verbose_name = "Previews"

    def ready(self) -> None:
        from previews import tasks  # noqa: F401  (registered in every process: the services queue it by name)
