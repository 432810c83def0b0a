"""Role lookups: the building blocks of the visibility table and of every permission check."""

import pytest

from accounts.selectors import organisations_of_user, user_is_auditor, user_is_chair, user_org_ids

pytestmark = pytest.mark.django_db


def test_role_lookups(role_users):
    acme, nimbus = role_users["organisations"]["acme"], role_users["organisations"]["nimbus"]
    assert user_org_ids(role_users["submitter"]) == {acme.pk}
    assert user_org_ids(role_users["reviewer"]) == {nimbus.pk}
    assert user_org_ids(role_users["reviewer"], roles=("submitter",)) == set()
    assert user_org_ids(role_users["anonymous"]) == set()
    assert [user_is_auditor(role_users[r]) for r in ("submitter", "auditor", "chair")] == [False, True, False]
    assert [user_is_chair(role_users[r]) for r in ("submitter", "auditor", "chair")] == [False, False, True]
    assert list(organisations_of_user(role_users["submitter"])) == [acme]


def test_inactive_users_hold_no_global_role(role_users):
    auditor = role_users["auditor"]
    auditor.is_active = False
    auditor.save()
    assert not user_is_auditor(auditor)


def test_anonymous_user_has_no_roles():
    from django.contrib.auth.models import AnonymousUser

    anonymous = AnonymousUser()
    assert (user_org_ids(anonymous), user_is_auditor(anonymous), user_is_chair(anonymous)) == (
        set(),
        False,
        False,
    )
