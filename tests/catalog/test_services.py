"""Services of the benchmark catalog."""

import pytest
from django.core.exceptions import ValidationError

from catalog.services import benchmark_create

pytestmark = pytest.mark.django_db


def test_benchmark_create_refuses_tokenizer_path_outside_folder(role_users):
    with pytest.raises(ValidationError):
        benchmark_create(
            model_id="evil",
            display_name="Evil",
            dataset="d",
            workload="chat",
            tokenizer_path="../../etc/passwd",
            actor=role_users["chair"],
        )
