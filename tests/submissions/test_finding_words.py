"""A finding's sentence reads as words: the field names it quotes from the submitter's files are set as code
(`identifiers_as_code`), file names and paths are left whole, and nothing of the message is trusted as HTML."""

from __future__ import annotations

import pytest
from django.test import Client

from submissions.templatetags.vocabulary import identifiers_as_code
from tests.factories import CheckRunFactory, FindingFactory, SubmissionFactory, SystemFactory


@pytest.mark.parametrize(
    ("message", "shown"),
    [
        (
            "model_name 'llama3_1-8b' is an allowed model",
            "<code>model_name</code> &#x27;llama3_1-8b&#x27; is an allowed model",
        ),
        (
            "Point 1 (low_latency): whole-run duration",
            "Point 1 (<code>low_latency</code>): whole-run duration",
        ),
        (
            "AX-8000_c16.tar.gz:c16/system_desc.json differs in node_types, serving_framework.",
            "AX-8000_c16.tar.gz:c16/system_desc.json differs in <code>node_types</code>, "
            "<code>serving_framework</code>.",
        ),
        ("C_min = 1 <b>", "<code>C_min</code> = 1 &lt;b&gt;"),
        ("Tensor parallel 8 on 1 node", "Tensor parallel 8 on 1 node"),
    ],
)
def test_field_names_are_code_and_the_rest_is_words(message, shown):
    assert identifiers_as_code(message) == shown


@pytest.mark.django_db
def test_the_submission_page_shows_a_findings_field_names_as_code(role_users):
    submission = SubmissionFactory(
        in_review=True,
        system=SystemFactory(organisation=role_users["organisations"]["acme"], name="Acme_AX-8000"),
    )
    run = CheckRunFactory(version=submission.submitted_version, status="failed", findings=[])
    FindingFactory(
        check_run=run,
        severity="warning",
        rule="max-concurrency-declared",
        message="max_supported_concurrency = 64",
    )
    client = Client()
    client.force_login(role_users["submitter"])
    page = client.get(f"/submissions/{submission.pk}/").content.decode()
    assert "<code>max_supported_concurrency</code> = 64" in page
