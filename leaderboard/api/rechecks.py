"""API of the chair's re-checks of what is published (leaderboard.publishing.rechecks): the campaigns, start one, the results
of one with what changed, and the decision per result (no action, annotate, open a challenge) with its reason.

Chair-only (403 to anyone else); the services refuse what may not be done as {"code", "detail"} JSON; writes
accept an Idempotency-Key."""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import PermissionDenied
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.routers import BaseRouter

from access.permissions import can
from access.visibility import recheck_campaigns_visible_to, recheck_results_visible_to
from accounts.permissions import TokenScopeAllows
from leaderboard.models import RecheckCampaign, RecheckResult
from leaderboard.publishing import rechecks
from portal.parsers import parse_id
from submissions.api.common import IDEMPOTENCY_PARAMETER
from submissions.idempotency import idempotent


class RecheckCampaignSerializer(serializers.ModelSerializer):
    started_by = serializers.CharField(source="started_by.username", read_only=True, default=None)

    class Meta:
        model = RecheckCampaign
        fields = [
            "id",
            "status",
            "checker_version",
            "rulesets",
            "started_by",
            "reason",
            "created_at",
            "reported_at",
            "summary",
        ]
        read_only_fields = fields


class RecheckResultSerializer(serializers.ModelSerializer):
    public_id = serializers.CharField(source="publication.public_id", read_only=True)
    revision = serializers.IntegerField(source="revision.number", read_only=True)
    check_run = serializers.IntegerField(source="check_run_id", read_only=True)
    check_run_status = serializers.CharField(source="check_run.status", read_only=True)
    published_run = serializers.IntegerField(source="published_run_id", read_only=True)
    decided_by = serializers.CharField(source="decided_by.username", read_only=True, default=None)

    class Meta:
        model = RecheckResult
        fields = [
            "id",
            "campaign",
            "public_id",
            "revision",
            "published_run",
            "check_run",
            "check_run_status",
            "ruleset",
            "changes",
            "status",
            "reason",
            "decided_by",
            "decided_at",
            "annotation",
            "challenge",
        ]
        read_only_fields = fields


class StartSerializer(serializers.Serializer):
    reason = serializers.CharField(max_length=2000, required=False, allow_blank=True, default="")
    everything = serializers.BooleanField(
        required=False, default=False, help_text="Re-check every published revision, up to date or not."
    )


class DecideSerializer(serializers.Serializer):
    decision = serializers.ChoiceField(choices=list(rechecks.DECISIONS))
    reason = serializers.CharField(max_length=2000)


def _chair_only(user) -> None:
    if not can(user, "chair"):
        raise PermissionDenied("Only the chair re-checks published results.")


class ChairRecheckViewSet(mixins.ListModelMixin, viewsets.GenericViewSet):
    """The re-checks, newest first; `start` one (one at a time)."""

    serializer_class = RecheckCampaignSerializer
    permission_classes = [TokenScopeAllows, IsAuthenticated]

    def get_queryset(self):
        return (
            recheck_campaigns_visible_to(self.request.user)
            .select_related("started_by")
            .order_by("-created_at", "-id")
        )

    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)
        _chair_only(request.user)

    @extend_schema(
        request=StartSerializer,
        responses={201: RecheckCampaignSerializer},
        parameters=[IDEMPOTENCY_PARAMETER],
    )
    @action(detail=False, methods=["post"])
    @idempotent
    def start(self, request):
        """Re-check the published revisions checked by another checker version or rule set (409
        `recheck-running` while one runs; 400 `recheck-nothing` when every one is up to date)."""
        data = StartSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        campaign = rechecks.recheck_campaign_start(
            actor=request.user,
            reason=data.validated_data["reason"],
            everything=data.validated_data["everything"],
        )
        return Response(RecheckCampaignSerializer(campaign).data, status=status.HTTP_201_CREATED)


class ChairRecheckResultViewSet(mixins.ListModelMixin, viewsets.GenericViewSet):
    """The results of the re-checks (`?campaign=<id>` for one), each with what changed once reported; `decide`
    one."""

    serializer_class = RecheckResultSerializer
    permission_classes = [TokenScopeAllows, IsAuthenticated]

    def get_queryset(self):
        rows = (
            recheck_results_visible_to(self.request.user)
            .select_related("publication", "revision", "check_run", "decided_by")
            .order_by("-campaign_id", "publication__public_id", "revision__number")
        )
        campaign = parse_id(self.request.query_params.get("campaign", ""))
        return rows.filter(campaign_id=campaign) if campaign is not None else rows

    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)
        _chair_only(request.user)

    @extend_schema(
        parameters=[OpenApiParameter("campaign", int, description="Only this re-check's results.")]
    )
    def list(self, request, *args, **kwargs):
        return super().list(request, *args, **kwargs)

    @extend_schema(
        request=DecideSerializer, responses={200: RecheckResultSerializer}, parameters=[IDEMPOTENCY_PARAMETER]
    )
    @action(detail=True, methods=["post"])
    @idempotent
    def decide(self, request, pk=None):
        """No action, annotate (the reason becomes a public annotation) or open a challenge, with a reason; 409
        `recheck-not-reported` before the report, `state-conflict` once decided."""
        result = get_object_or_404(self.get_queryset(), pk=pk)
        data = DecideSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        result = rechecks.recheck_result_decide(
            result=result,
            actor=request.user,
            decision=data.validated_data["decision"],
            reason=data.validated_data["reason"],
        )
        return Response(RecheckResultSerializer(result).data)


def register(router: BaseRouter) -> None:
    router.register("chair/rechecks", ChairRecheckViewSet, basename="chair-recheck")
    router.register("chair/recheck-results", ChairRecheckResultViewSet, basename="chair-recheck-result")
