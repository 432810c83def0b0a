"""A system may not be published under a name that reads like another organisation's published one, and nothing
about a name is told before it is public (leaderboard.publishing.names)."""

from __future__ import annotations

import pytest

from leaderboard.publishing import services
from leaderboard.publishing.names import name_skeleton
from portal.errors import ConflictError
from submissions.models import Submission
from submissions.services import system_register
from tests.factories import SubmissionFactory, SystemFactory

pytestmark = pytest.mark.django_db


def _audited(role_users, organisation, name):
    system = SystemFactory(organisation=organisation, name=name)
    return SubmissionFactory(status="audited", system=system, created_by=role_users["submitter"])


def test_names_that_read_alike_share_a_skeleton():
    assert name_skeleton("Acme_AX-8000") == name_skeleton("acme.ax_8OOO") == name_skeleton("ACME-AX8000")
    assert name_skeleton("Zephyr-Z9") != name_skeleton("Zephyr-Z8")


def test_a_name_like_another_organisations_published_system_is_refused_at_publication(role_users):
    acme, nimbus = role_users["organisations"]["acme"], role_users["organisations"]["nimbus"]
    first = _audited(role_users, acme, "Acme_AX-8000")
    services.publication_schedule(submission=first, actor=role_users["submitter"], mode="now")

    # Nimbus registers a look-alike (registration says nothing about other organisations' names), and has it
    # reviewed and audited; publishing it is refused
    actor = _member(nimbus)
    system = system_register(organisation=nimbus, name="acme.ax_8OOO", description={}, actor=actor)
    squatter = SubmissionFactory(status="audited", system=system, created_by=actor)
    with pytest.raises(ConflictError) as refused:
        services.publication_schedule(submission=squatter, actor=actor, mode="now")
    assert refused.value.code == "system-name-taken"
    assert "Acme_AX-8000" in refused.value.detail and "name of your own" in refused.value.detail
    assert Submission.objects.get(pk=squatter.pk).status == "audited"  # nothing published, nothing changed


def test_an_unpublished_name_is_never_compared(role_users):
    """An organisation's unreleased system name is told to no one: another organisation registers and publishes
    the same name, since nothing public carries it yet."""
    acme, nimbus = role_users["organisations"]["acme"], role_users["organisations"]["nimbus"]
    _audited(role_users, acme, "Unreleased-Z9")  # audited, not published
    actor = _member(nimbus)
    system_register(organisation=nimbus, name="Unreleased-Z9", description={}, actor=actor)
    other = SubmissionFactory(
        status="audited", system=SystemFactory(organisation=nimbus, name="unreleased_z9"), created_by=actor
    )
    publication = services.publication_schedule(submission=other, actor=actor, mode="now")
    assert publication.status == "published"


def test_the_owner_publishes_its_own_name_again(role_users):
    """A second result of the same system, on another benchmark, is the owner's: no clash with itself."""
    acme = role_users["organisations"]["acme"]
    first = _audited(role_users, acme, "Acme_AX-8000")
    services.publication_schedule(submission=first, actor=role_users["submitter"], mode="now")
    second = SubmissionFactory(status="audited", system=first.system, created_by=role_users["submitter"])
    publication = services.publication_schedule(submission=second, actor=role_users["submitter"], mode="now")
    assert publication.status == "published"


def _member(organisation):
    from tests.factories import MembershipFactory, UserFactory

    user = UserFactory()
    MembershipFactory(user=user, organisation=organisation, role="submitter")
    return user
