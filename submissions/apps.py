"""App config for submissions."""

from django.apps import AppConfig


class SubmissionsConfig(AppConfig):
    name = "submissions"
    verbose_name = "Submissions"

    def ready(self) -> None:
        # Register the check pipeline's tasks in every process (web included): the services queue them by
        # name, so that the tasks module can import the services and not the other way round.
        # Every database connection counts the writes that make cached signed-in pages stale (off unless the
        # cache is shared: settings.PORTAL_PRIVATE_CACHE).
        from portal import private_cache
        from submissions import tasks  # noqa: F401

        private_cache.install()
