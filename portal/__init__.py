"""Django project wiring for the Endpoints Portal: settings, URLs, Celery app. No business logic."""

from portal.celery import app as celery_app

__all__ = ["celery_app"]
