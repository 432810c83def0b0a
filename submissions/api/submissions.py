"""Submissions the caller may see (access.visibility): list, create drafts, the lifecycle actions of
review.lifecycle (submit, withdraw, reject) and the `allowed_actions` of the caller."""

from __future__ import annotations

import django_filters
from drf_spectacular.utils import extend_schema, extend_schema_field, inline_serializer
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from access.visibility import submissions_visible_to
from accounts.permissions import TokenScopeAllows
from catalog.models import Benchmark
from leaderboard.extensions import extension_open
from leaderboard.models import Publication
from portal.errors import ApplicationError
from portal.parsers import parse_id
from portal.private_cache import PrivateCachedListMixin
from review import lifecycle
from submissions import services
from submissions.api.common import IDEMPOTENCY_PARAMETER, ReadAnyoneWriteAuthenticated
from submissions.api.serializers import SubmissionSerializer
from submissions.endpoints import endpoint_declare, endpoint_view, endpoint_visible_to
from submissions.idempotency import idempotent
from submissions.models import Submission
from submissions.selectors import submissions_with_latest, systems_for_new_drafts


class AllowedActionSerializer(serializers.Serializer):
    """A lifecycle action the caller may take now (a row of review.lifecycle); `blocked` says what is
    still missing (e.g. a passing check), when it is."""

    action = serializers.CharField()
    label = serializers.CharField()
    to_status = serializers.ChoiceField(source="target", choices=Submission.Status.choices)
    reason_required = serializers.BooleanField()
    enabled = serializers.BooleanField()
    blocked = serializers.SerializerMethodField()

    @extend_schema_field(
        inline_serializer(
            "LifecycleActionBlocked",
            {"code": serializers.CharField(), "detail": serializers.CharField()},
            allow_null=True,
        )
    )
    def get_blocked(self, allowed):
        return (
            {"code": allowed.blocked_code, "detail": allowed.blocked_detail} if allowed.blocked_code else None
        )


class EndpointSerializer(serializers.Serializer):
    """A declared endpoint as the caller may see it: `credential` is "set" or "not set", never the value."""

    url = serializers.CharField()
    model_name = serializers.CharField()
    stays_up = serializers.BooleanField()
    public = serializers.BooleanField()
    credential = serializers.ChoiceField(choices=["set", "not set"])
    declared_at = serializers.DateTimeField(allow_null=True)


class EndpointDeclareSerializer(serializers.Serializer):
    url = serializers.CharField(max_length=500)
    model_name = serializers.CharField(max_length=200)
    stays_up = serializers.BooleanField(default=False)
    public = serializers.BooleanField(default=False)
    credential = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=4096,
        write_only=True,
        help_text="Omitted: the one set stays.",
    )
    clear_credential = serializers.BooleanField(default=False)


class SubmissionDetailSerializer(SubmissionSerializer):
    allowed_actions = serializers.SerializerMethodField()
    endpoint = serializers.SerializerMethodField()

    class Meta(SubmissionSerializer.Meta):
        fields = [*SubmissionSerializer.Meta.fields, "allowed_actions", "endpoint"]

    @extend_schema_field(EndpointSerializer(allow_null=True))
    def get_endpoint(self, submission):
        return endpoint_view(endpoint_visible_to(self.context["request"].user, submission))

    @extend_schema_field(AllowedActionSerializer(many=True))
    def get_allowed_actions(self, submission):
        user = self.context["request"].user
        return AllowedActionSerializer(lifecycle.allowed_actions(user, submission), many=True).data


class SubmissionCreateSerializer(serializers.Serializer):
    system = serializers.CharField(help_text="Id or name of one of your organisation's systems.")
    benchmark = serializers.CharField(help_text="The benchmark's model_id, e.g. llama3_1-8b.")
    division = serializers.ChoiceField(
        choices=Submission.Division.choices, default=Submission.Division.STANDARDIZED
    )
    availability = serializers.ChoiceField(
        choices=Submission.Availability.choices, default=Submission.Availability.AVAILABLE
    )
    title = serializers.CharField(required=False, allow_blank=True, default="", max_length=200)


def submission_create_from(user, data) -> Submission:
    systems = systems_for_new_drafts(user)
    system_ref = str(data["system"])
    system_id = parse_id(system_ref)
    matches = list(systems.filter(pk=system_id)) if system_id is not None else []
    if not matches:
        matches = list(systems.filter(name=system_ref))
    if len(matches) != 1:
        raise ApplicationError(
            f"No single system {system_ref!r} among your organisations' systems. Register it first: on the "
            "portal's Systems page (/systems/), or POST /api/v1/systems/ with its name and system_desc.json; "
            "or give the id of an existing system.",
            code="unknown-system",
            extra={"system": system_ref, "register_url": "/systems/", "register_api": "/api/v1/systems/"},
        )
    benchmark = Benchmark.objects.filter(model_id=data["benchmark"]).first()
    if benchmark is None:
        raise ApplicationError(f"No benchmark {data['benchmark']!r}.", code="unknown-benchmark")
    return services.submission_create(
        actor=user,
        system=matches[0],
        benchmark=benchmark,
        division=data["division"],
        availability=data["availability"],
        title=data.get("title", ""),
    )


class SubmissionFilter(django_filters.FilterSet):
    status = django_filters.MultipleChoiceFilter(choices=Submission.Status.choices)
    benchmark = django_filters.CharFilter(field_name="benchmark__model_id")
    system = django_filters.CharFilter(field_name="system__name")
    organisation = django_filters.CharFilter(field_name="organisation__slug")
    result = django_filters.CharFilter(
        field_name="publication__public_id",
        help_text="The submission published as this result, e.g. EP-000003.",
    )

    class Meta:
        model = Submission
        fields = ["status", "benchmark", "system", "organisation", "division", "availability"]


class ReasonSerializer(serializers.Serializer):
    reason = serializers.CharField(max_length=2000)


class ExtensionOpenSerializer(serializers.Serializer):
    stack = serializers.CharField(
        max_length=200, help_text="The software stack the new points carry on the curve."
    )
    software = serializers.CharField(max_length=2000, required=False, allow_blank=True, default="")
    configuration = serializers.CharField(max_length=2000, required=False, allow_blank=True, default="")
    system_description_revision = serializers.IntegerField(required=False, allow_null=True, default=None)
    hardware_changed = serializers.BooleanField(
        required=False, default=False, help_text="True is refused: a hardware change is a new submission."
    )
    title = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")


class SubmissionViewSet(
    PrivateCachedListMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet
):
    """Submissions the caller may see (DESIGN.md visibility); create drafts; the lifecycle actions (submit,
    withdraw, reject); a single submission lists the `allowed_actions` of the caller."""

    serializer_class = SubmissionSerializer
    permission_classes = [TokenScopeAllows, ReadAnyoneWriteAuthenticated]
    filterset_class = SubmissionFilter

    def get_queryset(self):
        return (
            submissions_with_latest(submissions_visible_to(self.request.user))
            .select_related("submitted_version")
            .defer("system__description")  # the row names the system; its description is /api/v1/systems/
            .order_by("-id")
        )

    @extend_schema(
        request=SubmissionCreateSerializer,
        responses={201: SubmissionSerializer},
        parameters=[IDEMPOTENCY_PARAMETER],
    )
    @idempotent
    def create(self, request):
        data = SubmissionCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        submission = submission_create_from(request.user, data.validated_data)
        return Response(SubmissionSerializer(submission).data, status=status.HTTP_201_CREATED)

    def get_serializer_class(self):
        return SubmissionSerializer if self.action == "list" else SubmissionDetailSerializer

    def _transition(self, request, action: str):
        """One row of review.lifecycle; refusals are 403/409 JSON with a stable code."""
        submission = self.get_object()  # first: outside the visibility table it is a 404, whatever the body
        reason = ""
        if lifecycle.transition_row(action).reason_required:
            data = ReasonSerializer(data=request.data)
            data.is_valid(raise_exception=True)
            reason = data.validated_data["reason"]
        lifecycle.SUBMISSION.take(request.user, submission, action, reason=reason)
        submission.refresh_from_db()
        return Response(self.get_serializer(submission).data)

    @extend_schema(
        request=ExtensionOpenSerializer,
        responses={201: SubmissionDetailSerializer},
        parameters=[IDEMPOTENCY_PARAMETER],
    )
    @action(detail=True, methods=["post"])
    @idempotent
    def extend(self, request, pk=None):
        """Open an extension of this published result (docs/extensions.md): a new draft for only the new or
        re-measured load points, checked with the published curve; 400 `extension-hardware-change` when the
        hardware changed (a new submission), 409 `extension-open` while another extension is on its way."""
        submission = self.get_object()
        data = ExtensionOpenSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        publication = Publication.objects.filter(submission_id=submission.result_root_id).first()
        if publication is None:
            raise ApplicationError("Only a published result can be extended.", code="state-conflict")
        extension = extension_open(
            publication=publication,
            actor=request.user,
            description_revision=data.validated_data.pop("system_description_revision"),
            **data.validated_data,
        )
        return Response(SubmissionDetailSerializer(extension, context={"request": request}).data, status=201)

    @extend_schema(
        request=EndpointDeclareSerializer,
        responses={200: EndpointSerializer},
        parameters=[IDEMPOTENCY_PARAMETER],
    )
    @action(detail=True, methods=["post"], url_path="endpoint", url_name="endpoint")
    @idempotent
    def declare_endpoint(self, request, pk=None):
        """Declare (or change) the endpoint of the system under test (docs/remeasurement.md): submitters of the
        organisation, until withdrawn or rejected. The credential is kept encrypted and never returned."""
        submission = self.get_object()
        data = EndpointDeclareSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        endpoint = endpoint_declare(
            submission=submission,
            actor=request.user,
            url=values["url"],
            model_name=values["model_name"],
            stays_up=values["stays_up"],
            public=values["public"],
            credential=values.get("credential") or None,
            clear_credential=values["clear_credential"],
        )
        return Response(endpoint_view(endpoint))


def _transition_endpoint(row):
    """The API endpoint of one button row of the submission's table: POST /api/v1/submissions/{id}/{action}/."""

    def endpoint(self, request, pk=None):
        return self._transition(request, row.action)

    endpoint.__name__ = row.action
    sources = ", ".join(row.sources)
    endpoint.__doc__ = (
        f"{sources} -> {row.target} ({row.who}){'; needs ' + row.needs if row.needs else ''}. "
        "Refusals: 403 `permission_denied` (who), 409 `state-conflict` (state) or the precondition's code."
    )
    return extend_schema(
        request=ReasonSerializer if row.reason_required else None,
        responses={200: SubmissionDetailSerializer},
        parameters=[IDEMPOTENCY_PARAMETER],
    )(
        action(detail=True, methods=["post"], url_path=row.action, url_name=row.action.replace("_", "-"))(
            idempotent(endpoint)
        )
    )


# The API's action endpoints come from the table, as the pages' routes do (submissions/urls.py).
for _row in lifecycle.BUTTON_TRANSITIONS:
    setattr(SubmissionViewSet, _row.action, _transition_endpoint(_row))
