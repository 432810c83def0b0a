"""Services for systems: rules enforced, and every write audited."""

import pytest
from django.core.exceptions import ValidationError

from audit.models import AuditEvent
from portal.errors import NotAllowedError
from submissions.models import System
from submissions.services import system_register, system_update_description

pytestmark = pytest.mark.django_db


def test_submitter_registers_system_for_own_organisation(role_users):
    acme = role_users["organisations"]["acme"]
    system = system_register(
        organisation=acme,
        name="Acme_AX-8000",
        description={"system_name": "Acme AX-8000"},
        actor=role_users["submitter"],
    )
    assert system.organisation == acme
    assert AuditEvent.objects.filter(action="system.registered", object_id=str(system.pk)).exists()


@pytest.mark.parametrize("role", ["reviewer", "auditor"])
def test_outsiders_cannot_register_systems(role_users, role):
    with pytest.raises(NotAllowedError):
        system_register(
            organisation=role_users["organisations"]["acme"],
            name="X1",
            description={},
            actor=role_users[role],
        )


@pytest.mark.parametrize("name", ["Acme AX 8000", "../escape", "", "a" * 101])
def test_system_name_must_fit_a_bundle_folder(role_users, name):
    with pytest.raises(ValidationError):
        system_register(
            organisation=role_users["organisations"]["acme"],
            name=name,
            description={},
            actor=role_users["submitter"],
        )


def test_system_names_are_unique_per_organisation(role_users):
    acme = role_users["organisations"]["acme"]
    system_register(organisation=acme, name="AX", description={}, actor=role_users["submitter"])
    with pytest.raises(ValidationError):
        system_register(organisation=acme, name="AX", description={}, actor=role_users["submitter"])


def test_system_description_update_records_changed_keys(role_users):
    acme = role_users["organisations"]["acme"]
    system = system_register(
        organisation=acme, name="AX", description={"a": 1, "b": 2}, actor=role_users["submitter"]
    )
    system_update_description(
        system=system, description={"a": 1, "b": 3, "c": 4}, actor=role_users["submitter"]
    )
    assert System.objects.get(pk=system.pk).description == {"a": 1, "b": 3, "c": 4}
    assert AuditEvent.objects.get(action="system.description_updated").data["changed"] == ["b", "c"]
    # The replaced description is history, not gone.
    assert [r.description for r in system.description_revisions.order_by("number")] == [
        {"a": 1, "b": 2},
        {"a": 1, "b": 3, "c": 4},
    ]
    with pytest.raises(ValidationError):
        system_update_description(
            system=system, description=["not", "an", "object"], actor=role_users["submitter"]
        )
