"""`/api/v1/benchmarks/`: the public catalog of benchmarks, their rule sets and tokenizers."""

from __future__ import annotations

import django_filters
from rest_framework import mixins, serializers, viewsets
from rest_framework.permissions import AllowAny

from accounts.permissions import TokenScopeAllows
from catalog.models import Benchmark
from catalog.selectors import benchmark_list


class BenchmarkFilter(django_filters.FilterSet):
    class Meta:
        model = Benchmark
        fields = ["workload", "ruleset_version"]


class BenchmarkViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """The benchmark catalog (public, read-only)."""

    class OutputSerializer(serializers.ModelSerializer):
        ruleset_preview = serializers.BooleanField(
            source="is_preview",
            read_only=True,
            help_text="True for a preview rule set (demos, tests of short runs): its results are not official.",
        )

        class Meta:
            model = Benchmark
            fields = [
                "model_id",
                "display_name",
                "dataset",
                "dataset_sample_count",
                "workload",
                "ruleset_version",
                "ruleset_preview",
                "tokenizer_is_placeholder",
                "tokenizer_note",
            ]

    serializer_class = OutputSerializer
    permission_classes = [TokenScopeAllows, AllowAny]
    filterset_class = BenchmarkFilter
    lookup_field = "model_id"

    def get_queryset(self):
        return benchmark_list()
