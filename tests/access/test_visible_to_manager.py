"""`Model.objects.visible_to(user)` is the visibility table's rule for that model, asked of the model (selectors
use it without importing access), and a queryset narrows to the visible rows the same way."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import AnonymousUser, Group
from django.core.exceptions import EmptyResultSet

from access.visibility import VISIBLE_TO
from leaderboard.models import Publication
from portal.visibility import rule_for
from submissions.models import Submission
from tests.factories import MembershipFactory, PublicationFactory, SubmissionFactory, UserFactory

pytestmark = pytest.mark.django_db


def _sql(queryset) -> str:
    try:
        return str(queryset.query)
    except EmptyResultSet:  # a rule that is .none() for this user
        return "nothing"


@pytest.mark.parametrize("model", list(VISIBLE_TO), ids=lambda m: m._meta.label)
def test_every_model_of_the_table_answers_visible_to_with_its_rule(model):
    member = MembershipFactory().user
    for user in (AnonymousUser(), member):
        assert _sql(model.objects.visible_to(user)) == _sql(VISIBLE_TO[model](user))


def test_a_model_without_a_rule_is_refused_never_all_rows():
    with pytest.raises(LookupError, match="No visibility rule for auth.Group"):
        rule_for(Group)


def test_a_filtered_queryset_narrows_to_what_the_user_may_see():
    draft = SubmissionFactory(draft=True)
    published = SubmissionFactory(published=True)
    both = Submission.objects.filter(pk__in=[draft.pk, published.pk])

    assert list(both.visible_to(None)) == [published]
    owner = MembershipFactory(organisation=draft.organisation).user
    assert set(both.visible_to(owner)) == {draft, published}
    assert list(both.visible_to(UserFactory())) == [published]


def test_the_public_leaderboard_reads_the_anonymous_row_of_the_table():
    from leaderboard.board.selectors import publications_public

    shown = PublicationFactory()
    scheduled = PublicationFactory(scheduled=True)
    ids = set(publications_public().values_list("pk", flat=True))
    assert shown.pk in ids and scheduled.pk not in ids
    assert ids == set(Publication.objects.visible_to(None).values_list("pk", flat=True))
