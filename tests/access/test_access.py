"""access/: the visibility table per model and can(); the generated role x route x state matrix is
tests/test_route_matrix.py, the submission table tests/submissions/test_visibility.py."""

import pytest
from django.contrib.auth.models import AnonymousUser, Permission
from django.http import Http404

from access.permissions import can
from access.visibility import get_visible_or_404, systems_visible_to, visible_to
from submissions.models import System
from tests.factories import SystemFactory, UserFactory

pytestmark = pytest.mark.django_db


def test_systems_visible_to(role_users):
    acme_system = SystemFactory(organisation=role_users["organisations"]["acme"])
    nimbus_system = SystemFactory(organisation=role_users["organisations"]["nimbus"])
    assert list(systems_visible_to(role_users["submitter"])) == [acme_system]
    assert list(systems_visible_to(role_users["reviewer"])) == [nimbus_system]
    assert set(systems_visible_to(role_users["auditor"])) == {acme_system, nimbus_system}
    assert set(systems_visible_to(role_users["chair"])) == {acme_system, nimbus_system}
    assert list(systems_visible_to(UserFactory())) == []


def test_view_hidden_and_missing_rows_alike(role_users):
    nimbus_system = SystemFactory(organisation=role_users["organisations"]["nimbus"])
    assert can(role_users["reviewer"], "view", nimbus_system)
    assert not can(role_users["submitter"], "view", nimbus_system)
    assert not can(AnonymousUser(), "view", nimbus_system)
    for pk in (nimbus_system.pk, nimbus_system.pk + 1000):
        with pytest.raises(Http404):
            get_visible_or_404(role_users["submitter"], System, pk=pk)


@pytest.mark.parametrize(
    "role, oversees, reads_audit_log, reviews",
    [
        ("anonymous", False, False, False),
        ("submitter", False, False, False),
        ("reviewer", False, False, True),
        ("auditor", True, True, False),
        ("chair", True, True, False),
    ],
)
def test_role_actions(role_users, role, oversees, reads_audit_log, reviews):
    user = role_users[role]
    assert (can(user, "oversee"), can(user, "read_audit_log"), can(user, "review")) == (
        oversees,
        reads_audit_log,
        reviews,
    )


def test_only_the_systems_submitters_and_the_chair_describe_it(role_users):
    acme_system = SystemFactory(organisation=role_users["organisations"]["acme"])
    allowed = {
        role: can(role_users[role], "describe", acme_system) for role in role_users if role != "organisations"
    }
    assert allowed == {
        "anonymous": False,
        "submitter": True,
        "reviewer": False,
        "auditor": False,
        "chair": True,
    }


def test_an_action_or_model_without_a_rule_is_an_error(role_users):
    with pytest.raises(LookupError):
        can(role_users["chair"], "publish")
    with pytest.raises(LookupError):
        visible_to(role_users["chair"], Permission)
