"""Immutable versions of visible submissions: their stored files and the chair's re-check."""

from __future__ import annotations

import django_filters
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from access.visibility import versions_visible_to
from accounts.permissions import TokenScopeAllows
from portal.downloads import stored_download
from portal.parsers import parse_id
from portal.private_cache import PrivateCachedListMixin
from submissions import uploads
from submissions.api.common import IDEMPOTENCY_PARAMETER, ReadAnyoneWriteAuthenticated
from submissions.api.serializers import CheckRunSummarySerializer, VersionSerializer
from submissions.checks.queue import check_run_requeue
from submissions.idempotency import idempotent
from submissions.models import SubmissionVersion
from submissions.selectors import versions_with_latest_check


class VersionFilter(django_filters.FilterSet):
    # A plain number, not a model choice: a choice field validates against every row and would tell a hidden id
    # (empty list) from a missing one (400).
    submission = django_filters.NumberFilter(field_name="submission_id")

    class Meta:
        model = SubmissionVersion
        fields = ["submission"]


class VersionViewSet(
    PrivateCachedListMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet
):
    """Immutable versions of visible submissions; their stored files; the chair's re-check."""

    serializer_class = VersionSerializer
    permission_classes = [TokenScopeAllows, ReadAnyoneWriteAuthenticated]
    filterset_class = VersionFilter

    def get_queryset(self):
        return versions_with_latest_check(versions_visible_to(self.request.user)).order_by("-id")

    @extend_schema(responses={(200, "application/octet-stream"): OpenApiTypes.BINARY})
    @action(detail=True, methods=["get"], url_path=r"files/(?P<position>\d+)", filterset_class=None)
    def file(self, request, pk=None, position=None):
        """The stored bytes exactly as uploaded (streamed; visibility-checked like the submission)."""
        # get_object() is the viewset's own visibility lookup: a malformed, unknown or hidden id is one 404.
        version_file = get_object_or_404(self.get_object().files, position=parse_id(position))
        return stored_download(uploads.version_file_chunks(version_file), version_file)

    @extend_schema(
        request=None, responses={201: CheckRunSummarySerializer}, parameters=[IDEMPOTENCY_PARAMETER]
    )
    @action(detail=True, methods=["post"], filterset_class=None)
    @idempotent
    def recheck(self, request, pk=None):
        """The chair runs the checks again on this version (a new check run; earlier runs stay)."""
        check_run = check_run_requeue(version=self.get_object(), actor=request.user)
        return Response(CheckRunSummarySerializer(check_run).data, status=status.HTTP_201_CREATED)
