"""API of the audit: the auditor's queue and a submission's audit (readiness, our verdict beside the official
checker's), attest, request evidence, re-run the checks; evidence requests (the submitter answers); waivers
(the submitter asks, the chair or an auditor decides, or grants directly).

Querysets start from access.visibility (404 for what the caller may not see); the services refuse what the
caller may not do, as {"code", "detail"} JSON; writes accept an Idempotency-Key.
"""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound, PermissionDenied
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.routers import BaseRouter

from access.permissions import can
from access.visibility import (
    evidence_requests_visible_to,
    submissions_visible_to,
    versions_visible_to,
    waivers_visible_to,
)
from accounts.permissions import TokenScopeAllows
from portal.errors import ApplicationError
from review import selectors
from review.models import EvidenceRequest, Waiver
from review.services.attestations import attestation_record, evidence_answer, evidence_request
from review.services.waivers import (
    waiver_decide,
    waiver_grant_directly,
    waiver_request,
    waivers_decide_group,
    waivers_request_group,
)
from submissions.api.common import IDEMPOTENCY_PARAMETER
from submissions.api.serializers import CheckRunSummarySerializer
from submissions.checks.queue import check_run_requeue
from submissions.idempotency import idempotent
from submissions.models import Submission
from submissions.selectors import check_run_latest, check_run_official


class WaiverSerializer(serializers.ModelSerializer):
    version = serializers.IntegerField(source="version_id", read_only=True)
    submission = serializers.IntegerField(source="version.submission_id", read_only=True)
    requested_by = serializers.CharField(source="requested_by.username", default=None, read_only=True)
    decided_by = serializers.CharField(source="decided_by.username", default=None, read_only=True)

    class Meta:
        model = Waiver
        fields = [
            "id",
            "submission",
            "version",
            "rule",
            "point",
            "file",
            "status",
            "request_reason",
            "requested_by",
            "decision_reason",
            "decided_by",
            "created_at",
            "decided_at",
        ]
        read_only_fields = fields


class EvidenceRequestSerializer(serializers.ModelSerializer):
    submission = serializers.IntegerField(source="submission_id", read_only=True)
    version = serializers.IntegerField(source="version_id", read_only=True)
    auditor = serializers.CharField(source="auditor.username", read_only=True)
    answered_by = serializers.CharField(source="answered_by.username", default=None, read_only=True)

    class Meta:
        model = EvidenceRequest
        fields = [
            "id",
            "submission",
            "version",
            "auditor",
            "question",
            "due_at",
            "status",
            "answer",
            "answered_by",
            "answered_at",
            "created_at",
        ]
        read_only_fields = fields


class AuditQueueItemSerializer(serializers.ModelSerializer):
    system = serializers.CharField(source="system.name")
    organisation = serializers.CharField(source="organisation.slug")
    benchmark = serializers.CharField(source="benchmark.model_id")
    submitted_version = serializers.IntegerField(source="submitted_version.number", default=None)
    ready = serializers.SerializerMethodField()
    missing = serializers.SerializerMethodField()

    class Meta:
        model = Submission
        fields = [
            "id",
            "system",
            "organisation",
            "benchmark",
            "status",
            "status_changed_at",
            "submitted_version",
            "ready",
            "missing",
        ]

    def _readiness(self, submission):
        cache = self.context.setdefault("readiness", {})
        if submission.pk not in cache:
            cache[submission.pk] = selectors.attestation_readiness(submission)
        return cache[submission.pk]

    def get_ready(self, submission) -> bool:
        return self._readiness(submission).ready

    def get_missing(self, submission) -> list[str]:
        return self._readiness(submission).missing


class AuditDetailSerializer(AuditQueueItemSerializer):
    check = serializers.SerializerMethodField()
    official = serializers.SerializerMethodField()
    waivers = serializers.SerializerMethodField()
    evidence_requests = serializers.SerializerMethodField()

    class Meta(AuditQueueItemSerializer.Meta):
        fields = [*AuditQueueItemSerializer.Meta.fields, "check", "official", "waivers", "evidence_requests"]

    def _run(self, submission):
        version = submission.submitted_version
        return check_run_latest(version) if version is not None else None

    def get_check(self, submission) -> dict | None:
        run = self._run(submission)
        return CheckRunSummarySerializer(run).data if run is not None else None

    def get_official(self, submission) -> dict | None:
        """The official checker's verdict on the same run (CheckRun.report["official"]), without its results."""
        run = self._run(submission)
        official = check_run_official(run) if run is not None else None
        return {k: v for k, v in official.items() if k != "results"} if official else None

    @extend_schema_field(WaiverSerializer(many=True))
    def get_waivers(self, submission):
        version = submission.submitted_version
        return WaiverSerializer(selectors.waivers_of(version), many=True).data if version else []

    @extend_schema_field(EvidenceRequestSerializer(many=True))
    def get_evidence_requests(self, submission):
        return EvidenceRequestSerializer(
            EvidenceRequest.objects.filter(submission=submission), many=True
        ).data


class NotesSerializer(serializers.Serializer):
    notes = serializers.CharField(max_length=10000)


class EvidenceCreateSerializer(serializers.Serializer):
    question = serializers.CharField(max_length=5000)
    due_days = serializers.IntegerField(min_value=1, max_value=60, required=False)


class AnswerSerializer(serializers.Serializer):
    answer = serializers.CharField(max_length=20000)


class WaiverRequestSerializer(serializers.Serializer):
    version = serializers.IntegerField(help_text="Id of the version whose finding is to be waived.")
    rule = serializers.CharField(max_length=100)
    point = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")
    file = serializers.CharField(max_length=2000, required=False, allow_blank=True, default="")
    reason = serializers.CharField(max_length=2000)


class WaiverDecisionSerializer(serializers.Serializer):
    grant = serializers.BooleanField()
    reason = serializers.CharField(max_length=2000)


class WaiverGroupRequestSerializer(serializers.Serializer):
    version = serializers.IntegerField(help_text="Id of the version whose findings are to be waived.")
    rule = serializers.CharField(
        max_length=100, help_text="Every error finding of this rule without a waiver..."
    )
    points = serializers.ListField(
        child=serializers.CharField(max_length=200, allow_blank=True),
        required=False,
        max_length=1000,
        help_text="...or only those at these points (omit for all).",
    )
    reason = serializers.CharField(max_length=2000, help_text="One justification for the lot.")


class WaiverGroupDecisionSerializer(serializers.Serializer):
    waivers = serializers.ListField(
        child=serializers.IntegerField(), min_length=1, max_length=1000, help_text="Ids of requested waivers."
    )
    grant = serializers.BooleanField()
    reason = serializers.CharField(max_length=2000)


class AuditViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """The auditor's queue (peer-reviewed submissions, oldest first) and one submission's audit; attest, request
    evidence, re-run the checks. Auditors and the chair only (403); a hidden submission is a 404."""

    permission_classes = [TokenScopeAllows, IsAuthenticated]

    def get_serializer_class(self):
        return AuditQueueItemSerializer if self.action == "list" else AuditDetailSerializer

    def get_queryset(self):
        if self.action == "list":
            visible = submissions_visible_to(self.request.user).values("pk")
            return selectors.audit_queue().filter(pk__in=visible)
        return submissions_visible_to(self.request.user).select_related("submitted_version")

    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)
        if self.action == "list" and not can(request.user, "oversee"):
            raise PermissionDenied("Only auditors and the chair have an audit queue.")

    def get_object(self):
        submission = super().get_object()  # 404 first: outside the visibility table
        if not can(self.request.user, "oversee"):
            raise PermissionDenied("Only auditors and the chair audit submissions.")
        return submission

    @extend_schema(
        request=NotesSerializer, responses={201: AuditDetailSerializer}, parameters=[IDEMPOTENCY_PARAMETER]
    )
    @action(detail=True, methods=["post"])
    @idempotent
    def attest(self, request, pk=None):
        """peer_reviewed -> audited (auditors; notes required; needs attestation readiness, else 409)."""
        submission = self.get_object()
        data = NotesSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        attestation_record(submission=submission, actor=request.user, notes=data.validated_data["notes"])
        submission.refresh_from_db()
        return Response(AuditDetailSerializer(submission).data, status=status.HTTP_201_CREATED)

    @extend_schema(
        request=EvidenceCreateSerializer,
        responses={201: EvidenceRequestSerializer},
        parameters=[IDEMPOTENCY_PARAMETER],
    )
    @action(detail=True, methods=["post"], url_path="request-evidence")
    @idempotent
    def request_evidence(self, request, pk=None):
        """Ask the submitter a question with a deadline (auditors); attestation waits for the answer."""
        submission = self.get_object()
        data = EvidenceCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        evidence = evidence_request(
            submission=submission,
            actor=request.user,
            question=data.validated_data["question"],
            due_days=data.validated_data.get("due_days"),
        )
        return Response(EvidenceRequestSerializer(evidence).data, status=status.HTTP_201_CREATED)

    @extend_schema(
        request=None, responses={201: CheckRunSummarySerializer}, parameters=[IDEMPOTENCY_PARAMETER]
    )
    @action(detail=True, methods=["post"])
    @idempotent
    def recheck(self, request, pk=None):
        """Run the checks again on the frozen version (auditors and the chair; earlier runs stay)."""
        submission = self.get_object()
        if submission.submitted_version is None:
            raise ApplicationError("No version was submitted.", code="no-frozen-version")
        run = check_run_requeue(version=submission.submitted_version, actor=request.user)
        return Response(CheckRunSummarySerializer(run).data, status=status.HTTP_201_CREATED)


class EvidenceRequestViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Evidence requests between the auditors and the submitting organisation; the submitter answers."""

    serializer_class = EvidenceRequestSerializer
    permission_classes = [TokenScopeAllows, IsAuthenticated]

    def get_queryset(self):
        return evidence_requests_visible_to(self.request.user).select_related("auditor", "answered_by")

    @extend_schema(
        request=AnswerSerializer,
        responses={200: EvidenceRequestSerializer},
        parameters=[IDEMPOTENCY_PARAMETER],
    )
    @action(detail=True, methods=["post"])
    @idempotent
    def answer(self, request, pk=None):
        """The submitting organisation's answer (files go in the thread or a new version)."""
        evidence = self.get_object()
        data = AnswerSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        evidence = evidence_answer(request=evidence, actor=request.user, answer=data.validated_data["answer"])
        return Response(EvidenceRequestSerializer(evidence).data)


class WaiverViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Waivers of failing findings, one version each: the submitter asks (POST), the chair or an auditor
    decides; `grant` waives a finding nobody asked about."""

    serializer_class = WaiverSerializer
    permission_classes = [TokenScopeAllows, IsAuthenticated]

    def get_queryset(self):
        return waivers_visible_to(self.request.user).select_related("version", "requested_by", "decided_by")

    def _version(self, version_id: int):

        return get_object_or_404(versions_visible_to(self.request.user), pk=version_id)

    @extend_schema(
        request=WaiverRequestSerializer, responses={201: WaiverSerializer}, parameters=[IDEMPOTENCY_PARAMETER]
    )
    @idempotent
    def create(self, request):
        """Ask for a waiver of an error finding of your organisation's version, saying why."""
        return self._waive(request, waiver_request)

    @extend_schema(
        request=WaiverRequestSerializer, responses={201: WaiverSerializer}, parameters=[IDEMPOTENCY_PARAMETER]
    )
    @action(detail=False, methods=["post"])
    @idempotent
    def grant(self, request):
        """The chair or an auditor waives an error finding directly (no request needed), with a reason."""
        return self._waive(request, waiver_grant_directly)

    @extend_schema(
        request=WaiverGroupRequestSerializer,
        responses={201: WaiverSerializer(many=True)},
        parameters=[IDEMPOTENCY_PARAMETER],
    )
    @action(detail=False, methods=["post"], url_path="request-group")
    @idempotent
    def request_group(self, request):
        """Ask at once, with one justification, for a waiver of every error finding of one rule (or those at the
        points given) of your organisation's version: one waiver each, one notification to the deciders."""
        data = WaiverGroupRequestSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        waivers = waivers_request_group(
            version=self._version(values["version"]),
            actor=request.user,
            rule=values["rule"],
            reason=values["reason"],
            points=values.get("points"),
        )
        return Response(WaiverSerializer(waivers, many=True).data, status=status.HTTP_201_CREATED)

    @extend_schema(
        request=WaiverGroupDecisionSerializer,
        responses={200: WaiverSerializer(many=True)},
        parameters=[IDEMPOTENCY_PARAMETER],
    )
    @action(detail=False, methods=["post"], url_path="decide-group")
    @idempotent
    def decide_group(self, request):
        """Grant or refuse several requested waivers at once with one reason (the chair or an auditor): all or
        none are decided; one notification per submission and rule. A waiver you may not see is a 404."""
        data = WaiverGroupDecisionSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        wanted = list(dict.fromkeys(values["waivers"]))
        found = {waiver.pk: waiver for waiver in self.get_queryset().filter(pk__in=wanted)}
        missing = [pk for pk in wanted if pk not in found]
        if missing:
            raise NotFound(f"No waiver {', '.join(map(str, missing))} that you can see.")
        waivers = waivers_decide_group(
            waivers=[found[pk] for pk in wanted],
            actor=request.user,
            grant=values["grant"],
            reason=values["reason"],
        )
        return Response(WaiverSerializer(waivers, many=True).data)

    def _waive(self, request, service):
        """One finding (version, rule, point, file) and a reason, through `service`."""
        data = WaiverRequestSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        waiver = service(
            version=self._version(values["version"]),
            actor=request.user,
            rule=values["rule"],
            point=values["point"],
            file=values["file"],
            reason=values["reason"],
        )
        return Response(WaiverSerializer(waiver).data, status=status.HTTP_201_CREATED)

    @extend_schema(
        request=WaiverDecisionSerializer,
        responses={200: WaiverSerializer},
        parameters=[IDEMPOTENCY_PARAMETER],
    )
    @action(detail=True, methods=["post"])
    @idempotent
    def decide(self, request, pk=None):
        """Grant or refuse a requested waiver (the chair or an auditor), with a reason; 409 once decided."""
        waiver = self.get_object()
        if not can(request.user, "oversee"):
            raise PermissionDenied("Only the chair or an auditor can decide a waiver.")
        data = WaiverDecisionSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        waiver = waiver_decide(
            waiver=waiver,
            actor=request.user,
            grant=data.validated_data["grant"],
            reason=data.validated_data["reason"],
        )
        return Response(WaiverSerializer(waiver).data)


def register(router: BaseRouter) -> None:
    router.register("audit", AuditViewSet, basename="audit")
    router.register("evidence-requests", EvidenceRequestViewSet, basename="evidence-request")
    router.register("waivers", WaiverViewSet, basename="waiver")
