"""What templates ask instead of comparing a status (submissions/templatetags/workflow.py): `{% allowed obj
"action" as may %}` answers from the object's own workflow table for the request's user, `obj|in_state:"name"` from
the model's named states."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import AnonymousUser
from django.template import Context, Template
from django.test import RequestFactory

from access.templatetags.workflow import TABLES
from accounts.models import GlobalRole
from portal.policy import registered_policies
from review.models import ReviewAssignment
from tests.factories import GlobalRoleFactory, ReviewAssignmentFactory, WaiverFactory
from tests.states import put

pytestmark = pytest.mark.django_db

WAIVER_FORM = Template(
    '{% load workflow %}{% allowed waiver "grant" as may %}{% if may %}form{% else %}-{% endif %}'
)


def _render(template: Template, user, **context) -> str:
    request = RequestFactory().get("/")
    request.user = user
    return template.render(Context({"request": request, **context}))


def test_every_table_is_found_from_its_object():
    assert {policy.name for policy in registered_policies()} == {policy.name for policy in TABLES.values()}
    for model, policy in TABLES.items():
        assert set(policy.states) <= set(model.states.sets), model


def test_the_waiver_form_shows_to_the_chair_and_auditors_while_it_is_requested():
    waiver = WaiverFactory()
    chair = GlobalRoleFactory(role=GlobalRole.Role.CHAIR).user
    auditor = GlobalRoleFactory(role=GlobalRole.Role.AUDITOR).user
    submitter = waiver.version.submission.created_by
    assert _render(WAIVER_FORM, chair, waiver=waiver) == "form"
    assert _render(WAIVER_FORM, auditor, waiver=waiver) == "form"
    assert _render(WAIVER_FORM, submitter, waiver=waiver) == "-"
    assert _render(WAIVER_FORM, AnonymousUser(), waiver=waiver) == "-"
    put(waiver, waiver.Status.GRANTED)  # as the page reads it after the decision
    assert _render(WAIVER_FORM, chair, waiver=waiver) == "-"


def test_nobody_releases_for_the_schedule_from_a_page_without_a_user():
    assignment = ReviewAssignmentFactory()
    template = Template('{% load workflow %}{% allowed assignment "release" as may %}{{ may }}')
    assert template.render(Context({"assignment": assignment})) == "False"
    chair = assignment.assigned_by
    assert _render(template, chair, assignment=assignment) == "True"
    assert _render(template, assignment.reviewer, assignment=assignment) == "False"


def test_in_state_reads_the_named_sets_and_a_verdicts_words():
    template = Template("{% load workflow %}{% if obj|in_state:name %}yes{% else %}no{% endif %}")
    invited = put(ReviewAssignment(), ReviewAssignment.Status.INVITED)
    declined = put(ReviewAssignment(), ReviewAssignment.Status.DECLINED)
    assert template.render(Context({"obj": invited, "name": "active"})) == "yes"
    assert template.render(Context({"obj": invited, "name": "ended"})) == "no"
    assert template.render(Context({"obj": declined, "name": "ended"})) == "yes"
    assert template.render(Context({"obj": None, "name": "active"})) == "no"
    assert template.render(Context({"obj": {"status": "passed"}, "name": "passed"})) == "yes"
    assert template.render(Context({"obj": {"status": "not_run"}, "name": "passed"})) == "no"
