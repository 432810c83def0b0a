"""`/api/v1/me/`: the caller's username, organisations and roles."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.permissions import TokenScopeAllows
from accounts.selectors import user_roles


class MeApi(APIView):
    """Who the caller is and what they may act as (useful to check an API token)."""

    permission_classes = [TokenScopeAllows, IsAuthenticated]

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
