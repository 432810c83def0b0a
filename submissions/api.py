"""API of the submissions app: the public benchmark catalog and the caller's identity."""

from __future__ import annotations

import django_filters
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import mixins, serializers, viewsets
from rest_framework.permissions import AllowAny, IsAuthenticated
from rest_framework.response import Response
from rest_framework.routers import BaseRouter
from rest_framework.views import APIView

from submissions.models import Benchmark
from submissions.selectors import benchmark_list, user_roles


class BenchmarkFilter(django_filters.FilterSet):
    class Meta:
        model = Benchmark
        fields = ["workload", "ruleset_version"]


class BenchmarkViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """The benchmark catalog (public, read-only)."""

    class OutputSerializer(serializers.ModelSerializer):
        class Meta:
            model = Benchmark
            fields = [
                "model_id",
                "display_name",
                "dataset",
                "dataset_sample_count",
                "workload",
                "ruleset_version",
                "tokenizer_is_placeholder",
            ]

    serializer_class = OutputSerializer
    permission_classes = [AllowAny]
    filterset_class = BenchmarkFilter
    lookup_field = "model_id"

    def get_queryset(self):
        return benchmark_list()


class MeApi(APIView):
    """Who the caller is and what they may act as (useful to check an API token)."""

    permission_classes = [IsAuthenticated]

    @extend_schema(
        responses=inline_serializer(
            "Me",
            {
                "username": serializers.CharField(),
                "organisations": serializers.DictField(
                    child=serializers.ListField(child=serializers.CharField())
                ),
                "auditor": serializers.BooleanField(),
                "chair": serializers.BooleanField(),
            },
        )
    )
    def get(self, request):
        return Response({"username": request.user.get_username(), **user_roles(request.user)})


def register(router: BaseRouter) -> None:
    router.register("benchmarks", BenchmarkViewSet, basename="benchmark")
