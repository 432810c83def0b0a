"""API of the submissions app: systems, submissions, their versions, uploads and check runs.

Every queryset starts from access.visibility: what a user may not see answers 404.
"""

from __future__ import annotations

from rest_framework.routers import BaseRouter

from submissions.api.checks import CheckRunViewSet
from submissions.api.submissions import SubmissionViewSet
from submissions.api.systems import SystemViewSet
from submissions.api.uploads import UploadViewSet
from submissions.api.versions import VersionViewSet


def register(router: BaseRouter) -> None:
    router.register("submissions", SubmissionViewSet, basename="submission")
    router.register("versions", VersionViewSet, basename="version")
    router.register("check-runs", CheckRunViewSet, basename="check-run")
    router.register("uploads", UploadViewSet, basename="upload")
    router.register("systems", SystemViewSet, basename="system")
