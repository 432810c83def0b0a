"""Services for people, catalog and systems: rules enforced, and every write audited."""

import pytest
from django.core.exceptions import ValidationError

from accounts.models import Membership, Organisation
from accounts.services import api_token_issue, global_role_grant, membership_grant, organisation_create
from audit.models import AuditEvent
from catalog.services import benchmark_create
from portal.errors import NotAllowedError
from submissions.models import System
from submissions.services import system_register, system_update_description
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def test_chair_creates_organisation_and_it_is_audited(role_users):
    chair = role_users["chair"]
    organisation = organisation_create(name="Orbital Neocloud", kind="neocloud", actor=chair)
    assert organisation.slug == "orbital-neocloud"
    event = AuditEvent.objects.get(action="organisation.created")
    assert (event.actor, event.object_id, event.data) == (
        chair,
        str(organisation.pk),
        {"name": "Orbital Neocloud", "kind": "neocloud"},
    )


@pytest.mark.parametrize("role", ["submitter", "reviewer", "auditor"])
def test_only_the_chair_creates_organisations(role_users, role):
    with pytest.raises(NotAllowedError):
        organisation_create(name="Sneaky", kind="neocloud", actor=role_users[role])
    assert not Organisation.objects.filter(name="Sneaky").exists()


def test_organisation_kind_is_validated(role_users):
    with pytest.raises(ValidationError):
        organisation_create(name="Odd", kind="mainframe", actor=role_users["chair"])


def test_membership_grant_by_org_admin_only_in_own_org(role_users):
    acme, nimbus = role_users["organisations"]["acme"], role_users["organisations"]["nimbus"]
    org_admin = UserFactory()
    Membership.objects.create(user=org_admin, organisation=acme, role="org_admin")
    newcomer = UserFactory()
    membership_grant(user=newcomer, organisation=acme, role="submitter", actor=org_admin)
    with pytest.raises(NotAllowedError):
        membership_grant(user=newcomer, organisation=nimbus, role="submitter", actor=org_admin)
    # granting twice is a no-op, audited once
    membership_grant(user=newcomer, organisation=acme, role="submitter", actor=org_admin)
    assert AuditEvent.objects.filter(action="membership.granted").count() == 1


def test_global_role_grant_is_chair_only(role_users):
    user = UserFactory()
    with pytest.raises(NotAllowedError):
        global_role_grant(user=user, role="auditor", actor=role_users["auditor"])
    global_role_grant(user=user, role="auditor", actor=role_users["chair"])
    assert AuditEvent.objects.filter(action="global_role.granted", actor=role_users["chair"]).exists()


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


def test_api_token_is_never_written_to_the_audit_log(role_users):
    token = api_token_issue(user=role_users["submitter"], actor=role_users["submitter"])
    event = AuditEvent.objects.get(action="api_token.issued")
    assert token.key not in str(event.data)
    with pytest.raises(NotAllowedError):
        api_token_issue(user=role_users["submitter"], actor=role_users["reviewer"])
