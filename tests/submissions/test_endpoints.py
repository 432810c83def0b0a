"""Declared endpoints (submissions.endpoints): who may declare, the credential encrypted and never shown again, and
who sees the endpoint (the organisation, auditors, the chair; anyone only once published and made public)."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import AnonymousUser
from django.test import override_settings

from accounts.models import GlobalRole
from audit.models import AuditEvent
from portal.errors import ApplicationError, NotAllowedError
from submissions.endpoints import endpoint_credential, endpoint_declare, endpoint_view, endpoint_visible_to
from submissions.models import Endpoint
from tests.factories import GlobalRoleFactory, OrganisationFactory, SubmissionFactory, submitter_of

pytestmark = pytest.mark.django_db


def _declare(submission, actor, **kw):
    values = {
        "url": "https://api.example.com/v1/",
        "model_name": "acme-llama-8b",
        "stays_up": True,
        "public": False,
        "credential": "sk-live-123",
    }
    values.update(kw)
    return endpoint_declare(submission=submission, actor=actor, **values)


def test_a_submitter_declares_the_endpoint_and_the_credential_is_stored_encrypted():
    submission = SubmissionFactory(draft=True)
    endpoint = _declare(submission, submitter_of(submission.organisation))
    endpoint.refresh_from_db()
    assert endpoint.url == "https://api.example.com/v1"
    assert "sk-live-123" not in endpoint.credential_encrypted  # encrypted at rest
    assert endpoint_credential(endpoint) == "sk-live-123"  # the worker can read it back
    assert endpoint_view(endpoint)["credential"] == "set"
    assert "sk-live-123" not in str(endpoint_view(endpoint))
    event = AuditEvent.objects.filter(action="submission.endpoint_declared").get()
    assert "sk-live-123" not in str(event.data)  # its keys are masked by the audit log besides


def test_changing_the_endpoint_keeps_the_credential_unless_asked_to_remove_it():
    submission = SubmissionFactory(published=True)
    submitter = submitter_of(submission.organisation)
    _declare(submission, submitter)
    endpoint = _declare(submission, submitter, credential=None, public=True)
    assert endpoint_credential(endpoint) == "sk-live-123" and endpoint.public
    endpoint = _declare(submission, submitter, credential=None, clear_credential=True)
    assert endpoint_credential(endpoint) is None and endpoint_view(endpoint)["credential"] == "not set"
    assert Endpoint.objects.count() == 1


def test_a_changed_key_makes_the_credential_unreadable_not_wrong():
    submission = SubmissionFactory(draft=True)
    endpoint = _declare(submission, submitter_of(submission.organisation))
    with override_settings(PORTAL_ENDPOINT_KEY="another-key-of-at-least-thirty-two-characters"):
        assert endpoint_credential(endpoint) is None


@pytest.mark.parametrize(
    ("url", "code"),
    [
        ("ftp://api.example.com", "endpoint-url-invalid"),
        ("https://user:sk@api.example.com", "endpoint-url-invalid"),
        ("https://api.example.com/?key=sk", "endpoint-url-invalid"),
        ("not a url", "endpoint-url-invalid"),
    ],
)
def test_a_bad_url_is_refused_with_a_stable_code(url, code):
    submission = SubmissionFactory(draft=True)
    with pytest.raises(ApplicationError) as refused:
        _declare(submission, submitter_of(submission.organisation), url=url)
    assert refused.value.code == code
    assert not Endpoint.objects.exists()


def test_only_the_organisations_submitters_declare_and_not_once_withdrawn():
    submission = SubmissionFactory(submitted=True)
    outsider = submitter_of(OrganisationFactory())
    auditor = GlobalRoleFactory(role=GlobalRole.Role.AUDITOR).user
    for actor in (outsider, auditor):
        with pytest.raises(NotAllowedError):
            _declare(submission, actor)
    withdrawn = SubmissionFactory(withdrawn=True)
    with pytest.raises(ApplicationError):
        _declare(withdrawn, submitter_of(withdrawn.organisation))
    assert not Endpoint.objects.exists()


def test_who_sees_the_endpoint():
    submission = SubmissionFactory(published=True)
    _declare(submission, submitter_of(submission.organisation))
    member = submitter_of(submission.organisation)
    auditor = GlobalRoleFactory(role=GlobalRole.Role.AUDITOR).user
    chair = GlobalRoleFactory(role=GlobalRole.Role.CHAIR).user
    other = submitter_of(OrganisationFactory())
    for user in (member, auditor, chair):
        assert endpoint_visible_to(user, submission) is not None
    for user in (other, AnonymousUser()):
        assert endpoint_visible_to(user, submission) is None
    Endpoint.objects.update(public=True)
    assert endpoint_visible_to(AnonymousUser(), submission) is not None  # published and made public
    unpublished = SubmissionFactory(audited=True)
    _declare(unpublished, submitter_of(unpublished.organisation), public=True)
    assert endpoint_visible_to(AnonymousUser(), unpublished) is None  # public only once published
    assert endpoint_visible_to(other, unpublished) is None
    # access.visibility's queryset rule says the same
    from access.visibility import visible_to

    assert set(visible_to(AnonymousUser(), Endpoint).values_list("submission_id", flat=True)) == {
        submission.pk
    }
    assert visible_to(auditor, Endpoint).count() == 2 and visible_to(other, Endpoint).count() == 1
    draft = SubmissionFactory(draft=True)
    _declare(draft, submitter_of(draft.organisation))
    assert endpoint_visible_to(auditor, draft) is None and visible_to(auditor, Endpoint).count() == 2


def test_the_page_form_and_the_api_never_show_the_credential(client):
    submission = SubmissionFactory(draft=True)
    submitter = submitter_of(submission.organisation)
    client.force_login(submitter)
    response = client.post(
        f"/submissions/{submission.pk}/endpoint/",
        {"url": "https://api.example.com", "model_name": "m", "stays_up": "on", "credential": "sk-page-9"},
    )
    assert response.status_code == 302
    page = client.get(f"/submissions/{submission.pk}/").content.decode()
    assert "https://api.example.com" in page and "sk-page-9" not in page
    assert "Credential" in page and ">set<" in page
    api = client.get(f"/api/v1/submissions/{submission.pk}/").json()
    assert api["endpoint"]["credential"] == "set" and "sk-page-9" not in str(api)
    response = client.post(
        f"/api/v1/submissions/{submission.pk}/endpoint/",
        {"url": "https://api2.example.com", "model_name": "m2", "credential": "sk-api-7"},
        content_type="application/json",
    )
    assert response.status_code == 200 and response.json()["credential"] == "set"
    assert "sk-api-7" not in response.content.decode()
    bad = client.post(
        f"/api/v1/submissions/{submission.pk}/endpoint/",
        {"url": "gopher://x", "model_name": "m2"},
        content_type="application/json",
    )
    assert bad.status_code == 400 and bad.json()["code"] == "endpoint-url-invalid"


HOSTILE_URLS = [
    "http://[::1/",  # an unclosed IPv6 bracket: urlsplit raises
    "http://[x]/",  # not an IPv6 address in brackets
    "http://api.example.com:0/v1",  # port 0
    "http://api.example.com:99999/v1",  # beyond 65535
    "http://api.example.com:-1/",
    "http://api.example.com:http/",
    "http://api.example.com/v1/../admin",  # a dot segment in the base path
    "http://api.example.com/v1/%2e%2e/admin",
    "http://api.example.com/v1%2f..%2fadmin",  # an encoded slash
    "http://api.exa mple.com/",
    "http://api.example.com\r\nX-Injected: 1/",
    "http://api_example.com@evil.test/",
    "http://exa\u00admple.com/",  # a soft hyphen: not ASCII
]


@pytest.mark.parametrize("url", HOSTILE_URLS)
def test_a_hostile_url_gets_a_clear_400_in_the_api_and_a_message_on_the_page(client, url):
    submission = SubmissionFactory(draft=True)
    client.force_login(submitter_of(submission.organisation))
    answer = client.post(
        f"/api/v1/submissions/{submission.pk}/endpoint/",
        {"url": url, "model_name": "m"},
        content_type="application/json",
    )
    assert answer.status_code == 400, answer.content
    assert answer.json()["code"] == "endpoint-url-invalid" and answer.json()["detail"]
    page = client.post(
        f"/submissions/{submission.pk}/endpoint/", {"url": url, "model_name": "m"}, follow=True
    )
    assert page.status_code == 200
    assert "Endpoint not saved" in page.content.decode()
    assert not Endpoint.objects.exists()


@pytest.mark.parametrize("credential", ["sk-1\r\nX-Evil: 1", "sk-1\nHost: evil", "sk\x00", "sk\x7f"])
def test_a_credential_with_a_line_break_or_a_control_character_is_refused(client, credential):
    submission = SubmissionFactory(draft=True)
    client.force_login(submitter_of(submission.organisation))
    answer = client.post(
        f"/api/v1/submissions/{submission.pk}/endpoint/",
        {"url": "https://api.example.com/v1", "model_name": "m", "credential": credential},
        content_type="application/json",
    )
    assert answer.status_code == 400
    assert answer.json()["code"] in ("endpoint-credential-invalid", "text-unstorable")
    assert not Endpoint.objects.exists()


def test_an_ipv6_literal_and_a_port_are_accepted():
    submission = SubmissionFactory(draft=True)
    endpoint = _declare(
        submission, submitter_of(submission.organisation), url="http://[2001:4860::8888]:8443/v1"
    )
    assert endpoint.url == "http://[2001:4860::8888]:8443/v1"
