"""Systems under test with their system_desc.json. Members see their organisations' systems, auditors and
the chair all, everyone the systems of published results; submitters register systems and give each a new
description (a new revision, audited)."""

from __future__ import annotations

import json

import django_filters
from django.conf import settings
from django.db.models import OuterRef, Subquery
from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from access.permissions import can
from access.visibility import systems_visible_to
from accounts.models import Organisation
from accounts.permissions import TokenScopeAllows
from portal.errors import ApplicationError, NotAllowedError
from portal.parsers import PARSER_CLASSES
from portal.private_cache import PrivateCachedListMixin
from submissions import services
from submissions.api.common import IDEMPOTENCY_PARAMETER, ReadAnyoneWriteAuthenticated
from submissions.idempotency import idempotent
from submissions.models import System, SystemDescriptionRevision
from submissions.selectors import organisations_registering_systems, system_description_revisions
from submissions.system_desc import system_desc_read, system_desc_validate


class SystemRevisionSerializer(serializers.Serializer):
    number = serializers.IntegerField()
    sha256 = serializers.CharField()
    changed_keys = serializers.ListField(child=serializers.CharField())
    created_by = serializers.CharField(source="created_by.username", allow_null=True, default=None)
    created_at = serializers.DateTimeField()


class SystemSerializer(serializers.ModelSerializer):
    organisation = serializers.CharField(source="organisation.slug", read_only=True)
    description_revision = serializers.SerializerMethodField()

    class Meta:
        model = System
        fields = [
            "id",
            "organisation",
            "name",
            "description",
            "description_revision",
            "created_at",
            "updated_at",
        ]

    @extend_schema_field(serializers.IntegerField(allow_null=True))
    def get_description_revision(self, system):
        if hasattr(system, "latest_revision_number"):  # annotated by the list
            return system.latest_revision_number
        return system.description_revisions.order_by("-number").values_list("number", flat=True).first()


class SystemDetailSerializer(SystemSerializer):
    revisions = serializers.SerializerMethodField()

    class Meta(SystemSerializer.Meta):
        fields = [*SystemSerializer.Meta.fields, "revisions"]

    @extend_schema_field(SystemRevisionSerializer(many=True))
    def get_revisions(self, system):
        return SystemRevisionSerializer(system_description_revisions(system), many=True).data


class SystemDescriptionInputSerializer(serializers.Serializer):
    description = serializers.JSONField(
        required=False, help_text="The system_desc.json content as a JSON object."
    )
    system_desc = serializers.FileField(
        required=False, help_text="Or the system_desc.json file itself (multipart)."
    )

    def validate(self, attrs):
        if ("description" in attrs) == ("system_desc" in attrs):
            raise serializers.ValidationError(
                "Give exactly one of description (JSON) or system_desc (a file)."
            )
        return attrs


class SystemCreateSerializer(SystemDescriptionInputSerializer):
    organisation = serializers.CharField(
        required=False, help_text="Slug of your organisation (needed when you belong to several)."
    )
    name = serializers.CharField(max_length=100, help_text="As in the bundle's results/<system>/ folder.")


def _description_from(request, values) -> dict:
    """The description given as JSON or as a file, refused with every schema finding (`system-desc-invalid`)."""
    if "system_desc" in values:
        upload = values["system_desc"]
        read = system_desc_read(upload, display=upload.name or "system_desc.json")
        problems, description = read.problems, read.description
    else:
        description = values["description"]
        cap = settings.PORTAL_SYSTEM_DESC_MAX_BYTES
        if len(json.dumps(description, default=str)) > cap:
            raise ApplicationError(
                f"The description is larger than {cap:,} bytes.", code="system-desc-too-large"
            )
        problems = system_desc_validate(description)
    if problems or description is None:
        raise ApplicationError(
            f"The system description has {len(problems)} problem{'s' if len(problems) != 1 else ''}: "
            + "; ".join(f"{p.pointer or '/'} {p.message}" for p in problems[:3]),
            code="system-desc-invalid",
            extra={"problems": [p.as_dict() for p in problems]},
        )
    return description


class SystemFilter(django_filters.FilterSet):
    organisation = django_filters.CharFilter(field_name="organisation__slug")

    class Meta:
        model = System
        fields = ["organisation", "name"]


class SystemViewSet(
    PrivateCachedListMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet
):
    """Systems under test with their system_desc.json: list, register, update the description (history kept)."""

    permission_classes = [TokenScopeAllows, ReadAnyoneWriteAuthenticated]
    filterset_class = SystemFilter
    parser_classes = PARSER_CLASSES

    def get_serializer_class(self):
        return SystemDetailSerializer if self.action == "retrieve" else SystemSerializer

    def get_queryset(self):
        latest_revision = SystemDescriptionRevision.objects.filter(system_id=OuterRef("pk")).order_by(
            "-number"
        )
        return (
            systems_visible_to(self.request.user)
            .annotate(latest_revision_number=Subquery(latest_revision.values("number")[:1]))
            .order_by("organisation__name", "name")
        )

    @extend_schema(
        request={"application/json": SystemCreateSerializer, "multipart/form-data": SystemCreateSerializer},
        responses={201: SystemDetailSerializer},
        parameters=[IDEMPOTENCY_PARAMETER],
    )
    @idempotent
    def create(self, request):
        data = SystemCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        organisations = organisations_registering_systems(request.user)
        if values.get("organisation"):
            organisation = Organisation.objects.filter(slug=values["organisation"]).first()
            if organisation is None:
                raise ApplicationError(
                    f"No organisation {values['organisation']!r}.", code="unknown-organisation"
                )
        elif organisations.count() == 1:
            organisation = organisations.get()
        else:
            raise ApplicationError(
                "Say which organisation the system belongs to (organisation: its slug).",
                code="organisation-required",
            )
        description = _description_from(request, values)
        system = services.system_register(
            organisation=organisation, name=values["name"], description=description, actor=request.user
        )
        return Response(SystemDetailSerializer(system).data, status=status.HTTP_201_CREATED)

    @extend_schema(
        request={
            "application/json": SystemDescriptionInputSerializer,
            "multipart/form-data": SystemDescriptionInputSerializer,
        },
        responses={200: SystemDetailSerializer},
        parameters=[IDEMPOTENCY_PARAMETER],
    )
    @action(detail=True, methods=["post"], url_path="description", filterset_class=None)
    @idempotent
    def update_description(self, request, pk=None):
        """A new system_desc.json for the system: a new revision (the earlier ones stay), audited."""
        system = self.get_object()  # first: outside the visibility table it is a 404, whatever the body
        if not can(request.user, "describe", system):
            raise NotAllowedError(f"Only submitters of {system.organisation.name} can describe its systems.")
        data = SystemDescriptionInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        description = _description_from(request, data.validated_data)
        system = services.system_update_description(
            system=system, description=description, actor=request.user
        )
        return Response(SystemDetailSerializer(system).data)
