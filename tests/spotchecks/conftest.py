"""The pipeline tests' real `celery worker` (tests/submissions/conftest.py), for the spot-check queue."""

from tests.submissions.conftest import live_pipeline  # noqa: F401
