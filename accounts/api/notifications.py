"""The caller's notifications (`/api/v1/notifications/`, marked read) and how they are e-mailed
(`/api/v1/notification-preference/`); only the caller's own (access.visibility)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import mixins, serializers, viewsets
from rest_framework.decorators import action
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from access.notifications import notifications_shown_to
from access.visibility import notifications_visible_to
from accounts.models import Notification, NotificationPreference
from accounts.permissions import TokenScopeAllows
from accounts.services.notifications import (
    notification_preference_of,
    notification_preference_set,
    notifications_mark_read,
)
from portal.private_cache import PrivateCachedListMixin
from submissions.api.common import IDEMPOTENCY_PARAMETER
from submissions.idempotency import idempotent


class NotificationSerializer(serializers.Serializer):
    """A notification as the caller may see it now (access.notifications): `hidden` true when it is about a
    submission the caller can no longer read, whose subject is then the kind and the number only, and whose body
    and link are gone."""

    id = serializers.IntegerField(read_only=True)
    kind = serializers.CharField(read_only=True)
    subject = serializers.CharField(read_only=True)
    body = serializers.CharField(read_only=True)
    url = serializers.CharField(read_only=True)
    submission = serializers.IntegerField(read_only=True, allow_null=True)
    hidden = serializers.BooleanField(read_only=True)
    created_at = serializers.DateTimeField(read_only=True)
    read_at = serializers.DateTimeField(read_only=True, allow_null=True)
    emailed_at = serializers.DateTimeField(read_only=True, allow_null=True)
    times = serializers.IntegerField(
        read_only=True,
        help_text="How many events of this kind about the same thing this one groups (1: one).",
    )


def _shown(request, rows):
    return notifications_shown_to(request.user, rows)


class NotificationViewSet(
    PrivateCachedListMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet
):
    """The caller's own notifications, newest first (`?unread=1` for the unread ones); mark one or all read. Each is
    rendered as the caller may see it now (a submission they no longer read shows its number only)."""

    serializer_class = NotificationSerializer
    permission_classes = [TokenScopeAllows, IsAuthenticated]

    def get_queryset(self):
        rows = notifications_visible_to(self.request.user)
        return rows.filter(read_at__isnull=True) if self.request.query_params.get("unread") else rows

    def get_serializer(self, instance=None, *args, **kwargs):
        # Rows become what the caller may see of them now (list, retrieve, and the cached list alike).
        if isinstance(instance, Notification):
            instance = _shown(self.request, [instance])[0]
        elif instance is not None:
            instance = _shown(self.request, instance)
        return super().get_serializer(instance, *args, **kwargs)

    @extend_schema(request=None, responses={200: NotificationSerializer}, parameters=[IDEMPOTENCY_PARAMETER])
    @action(detail=True, methods=["post"])
    @idempotent
    def read(self, request, pk=None):
        notification = self.get_object()
        notifications_mark_read(user=request.user, notification_ids=[notification.pk])
        notification.refresh_from_db()
        return Response(NotificationSerializer(_shown(request, [notification])[0]).data)

    @extend_schema(
        request=None,
        responses=inline_serializer("NotificationsRead", {"marked": serializers.IntegerField()}),
        parameters=[IDEMPOTENCY_PARAMETER],
    )
    @action(detail=False, methods=["post"], url_path="read-all")
    @idempotent
    def read_all(self, request):
        return Response({"marked": notifications_mark_read(user=request.user)})


class NotificationPreferenceSerializer(serializers.Serializer):
    delivery = serializers.ChoiceField(choices=NotificationPreference.Delivery.choices)


class NotificationPreferenceApi(APIView):
    """How the caller's notifications are e-mailed: `immediate` (one e-mail each) or `digest` (one a day)."""

    permission_classes = [TokenScopeAllows, IsAuthenticated]

    @extend_schema(responses=NotificationPreferenceSerializer)
    def get(self, request):
        return Response({"delivery": notification_preference_of(request.user)})

    @extend_schema(
        request=NotificationPreferenceSerializer,
        responses=NotificationPreferenceSerializer,
        parameters=[IDEMPOTENCY_PARAMETER],
    )
    @idempotent
    def put(self, request):
        data = NotificationPreferenceSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        preference = notification_preference_set(user=request.user, delivery=data.validated_data["delivery"])
        return Response({"delivery": preference.delivery})
