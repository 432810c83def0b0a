"""The pipeline tests' real `celery worker` (tests/submissions/conftest.py), for the preview check on the judge queue."""

from tests.submissions.conftest import live_pipeline  # noqa: F401
