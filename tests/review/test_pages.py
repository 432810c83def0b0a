"""The review queue exists for reviewers; its content arrives with the review issue."""

import pytest

from review.selectors import user_is_reviewer

pytestmark = pytest.mark.django_db


def test_user_is_reviewer(role_users):
    assert user_is_reviewer(role_users["reviewer"])
    assert not user_is_reviewer(role_users["submitter"])
    assert not user_is_reviewer(role_users["anonymous"])
