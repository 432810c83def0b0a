"""Celery tasks of the leaderboard app (scheduled publication of cohorts arrives later)."""
