"""Celery tasks of the review app (reminders and deadlines arrive with the review issue)."""
