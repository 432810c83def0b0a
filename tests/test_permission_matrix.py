"""The generated permission matrix over the demo world: every role x every route of the URL conf x every state.

The world is `manage.py seed_demo` (every review state through the real services, Zephyr Silicon's embargoed
Unreleased-Z9 in review; AX-8000 and AX-4000 published, one annotated and one retracted result, the audited one
waiting for its cohort: results pages 404 for it), plus a withdrawn submission, built once for the module and committed
(the checks and e-mails run after commit, as in the demo); every test and every request runs in a transaction
rolled back after it, so POSTs change nothing for the next cell. When the module ends the database is flushed and
given back the state the migrations left (serialized_rollback's copy), for the tests that follow.

Roles are relative to each submission: anonymous, a member of the submitting organisation, a member of another,
a reviewer of an organisation in conflict with it, its assigned reviewer, a reviewer nobody assigned, an auditor,
the chair. What each may see is DESIGN.md's visibility table, written out below (never asked of access/). A
route tests/routes.py does not declare fails `test_every_route_is_declared`: declare it there when it lands.

Each (route, state) asks every role at least once (`_plan`): Unreleased-Z9 by every role on every route, other
submissions of a state in rotation, and the signed-in roles a submission is hidden from (refused alike, 404) by
one of them in rotation. Every write (POST, PUT) is measured: PostgreSQL's per-transaction row counters
(pg_stat_xact_user_tables) before and after the request, so a refusal (400/403/404/409, or a page that says so)
must write no row in any table, and a write route whose workflow row (WRITE_ACTIONS: the table and action of
review.lifecycle, submissions.workflow or leaderboard.workflow) forbids the object's current state, or asked by a
role the route's `who` leaves out, must write nothing whatever it answers: a write accepted in a state the policy
forbids fails the matrix. API refusals carry a code (403 `permission_denied`, 409 with the refusal's code).
Every body is searched for what the role may not see: the name Unreleased-Z9, and each hidden submission's title
and id (as /submissions/<id>/, /audit/<id>/, "submission #<id>", "submission": <id>).
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field

import pytest
from django.core import mail
from django.core.management import call_command
from django.db import transaction
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from rest_framework.test import APIClient

from tests.routes import (
    ANON,
    ASSIGNED,
    AUDITOR,
    CHAIR,
    CONFLICTED,
    FLOW,
    LIST,
    LOGIN,
    ONLY,
    OTHER,
    OWN,
    OWN_ROW_PKS,
    PUBLIC,
    RESULT,
    ROLES,
    ROUTES,
    SUBJECT,
    SUBJECT_WRITE,
    UNASSIGNED,
    Route,
)

Z9 = "Unreleased-Z9"

# serialized_rollback: pytest-django keeps a copy of the migrated database, which the module restores at its end.
pytestmark = pytest.mark.django_db(serialized_rollback=True)

STATES = (
    "draft",
    "submitted",
    "in_review",
    "changes_requested",
    "peer_reviewed",
    "audited",
    "published",
    "withdrawn",
    "rejected",
)


def expected_visible(role: str, status: str) -> bool:
    """DESIGN.md "Visibility", written out independently of access/visibility.py."""
    if status == "published":
        return True
    return {
        ANON: False,
        OWN: True,  # all of its own organisation's submissions in every state
        OTHER: False,
        CONFLICTED: False,  # a conflict hides the submission, assigned or not
        ASSIGNED: status != "draft",  # assigned submissions from `submitted` on; never drafts
        UNASSIGNED: False,
        AUDITOR: status != "draft",  # every non-draft submission
        CHAIR: status != "draft",
    }[role]


def _route_names(patterns, namespace: str | None = None):
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            inner = pattern.namespace or namespace
            if inner == "admin":
                continue  # the Django admin: staff only, guarded by Django itself
            yield from _route_names(pattern.url_patterns, inner if pattern.namespace else namespace)
        elif isinstance(pattern, URLPattern) and pattern.name:
            yield f"{namespace}:{pattern.name}" if namespace else pattern.name


SERVED = set(_route_names(get_resolver().url_patterns))


def test_every_route_is_declared():
    undeclared = SERVED - set(ROUTES)
    assert not undeclared, f"routes with no expectation in the permission matrix: {sorted(undeclared)}"


# --- The world ----------------------------------------------------------------------------------


@dataclass
class Subject:
    """One submission of the world and the ids its routes take."""

    status: str
    pk: int
    title: str
    organisation_id: int
    users: dict  # role -> user (None: anonymous)
    ids: dict = field(default_factory=dict)  # `pk` kind -> url kwargs
    published: bool = False  # its publication is published (retracted ones keep their page)
    system_public: bool = False  # its system has a published result (the public history exists)


@dataclass
class World:
    subjects: dict  # status -> [Subject]
    users: list  # every user a request is made as (None included)
    hidden: dict  # user pk (None: anonymous) -> [(Subject)] that user may not see
    emails: list
    clients: dict = field(default_factory=dict)


def _relation(user, submission, *, members, reviewers, conflicts, assigned, roles) -> str:
    """The role `user` holds towards `submission`, read from the world's rows (memberships, conflicts,
    assignments, global roles): the matrix's own bookkeeping, not access/."""
    if user is None:
        return ANON
    own_orgs = members.get(user.pk, set())
    if submission.organisation_id in own_orgs:
        return OWN
    if "chair" in roles.get(user.pk, set()):
        return CHAIR
    if "auditor" in roles.get(user.pk, set()):
        return AUDITOR
    blocked = {b for a, b in conflicts if a == submission.organisation_id} | {
        a for a, b in conflicts if b == submission.organisation_id
    }
    if own_orgs & blocked:
        return CONFLICTED
    if (user.pk, submission.pk) in assigned:
        return ASSIGNED
    return UNASSIGNED if user.pk in reviewers else OTHER


def _build_world() -> World:
    from django.contrib.auth import get_user_model

    from accounts.models import GlobalRole, Membership, Notification, Organisation
    from leaderboard.demo import AX8000_TITLE
    from leaderboard.models import Annotation, Challenge, Publication
    from review.demo import Z9_TITLE
    from review.models import Comment, Conflict, EvidenceRequest, ReviewAssignment, Waiver
    from review.services.assignments import assignment_create
    from review.services.conflicts import conflict_declare
    from spotchecks.models import SpotCheck
    from submissions.models import Submission, Upload
    from tests.factories import (
        BenchmarkFactory,
        MembershipFactory,
        OrganisationFactory,
        ReviewAssignmentFactory,
        SubmissionFactory,
        UserFactory,
        submission_take,
    )

    BenchmarkFactory(sample=True)  # the catalog migration ships it; transactional tests flush it
    mail.outbox = []
    call_command("seed_demo", stdout=open("/dev/null", "w"))  # noqa: SIM115
    emails = list(mail.outbox)

    User = get_user_model()
    demo = {user.username: user for user in User.objects.filter(username__startswith="demo-")}
    acme = Organisation.objects.get(slug="acmecompute")
    zephyr = Organisation.objects.get(slug="zephyr-silicon")
    nimbus = Organisation.objects.get(slug="nimbuscloud")  # publishes the demo's Nimbus NB-2
    chair = demo["demo-chair"]
    # Roles the demo does not hold for every submission: a reviewer nobody assigns (Quill University) and one
    # whose organisation the chair declared in conflict with every submitting organisation.
    unassigned = UserFactory(username="matrix-unassigned", email="matrix-unassigned@example.com")
    MembershipFactory(
        user=unassigned, organisation=Organisation.objects.get(slug="quill-university"), role="reviewer"
    )
    rival = OrganisationFactory(name="Rival Accelerators", slug="rival-accelerators")
    conflicted = UserFactory(username="matrix-conflicted", email="matrix-conflicted@example.com")
    MembershipFactory(user=conflicted, organisation=rival, role="reviewer")
    for organisation in (acme, zephyr, nimbus):
        conflict_declare(
            organisation=rival, other=organisation, kind="competitor", reason="matrix", actor=chair
        )
    # The state the demo does not show: withdrawn (after submitting and being assigned). Published ones are the
    # demo's: AX-8000 and AX-4000, one annotated and one retracted after challenges (leaderboard.demo).
    system = Submission.objects.filter(organisation=acme).first().system
    withdrawn = SubmissionFactory(submitted=True, system=system, title="Matrix: withdrawn after assignment")
    assignment_create(submission=withdrawn, reviewer=demo["demo-reviewer"], actor=chair)
    submission_take(withdrawn, "withdraw", demo["demo-submitter"], reason="matrix")
    # Extensions of the demo's AX-8000 result in every state the demo does not show (it has one published as
    # revision 2 and one in review): each with its own stack label, which the public result must never show
    # before the extension is published.
    root = Submission.objects.get(title=AX8000_TITLE)
    reviewer = demo["demo-reviewer"]
    for state in STATES:
        if state in ("published", "in_review"):
            continue
        extension = SubmissionFactory(
            status=state,
            system=root.system,
            benchmark=root.benchmark,
            extends=root,
            stack=f"matrix-stack-{state}",
            title=f"Matrix: extension {state}",
            frozen_version=state != "draft",
        )
        if state != "draft":
            ReviewAssignmentFactory(
                accepted=True,
                submission=extension,
                reviewer=reviewer,
                organisation=reviewer.memberships.get().organisation,
                assigned_by=chair,
            )
    members: dict[int, set] = {}
    reviewers = set()
    for user_id, organisation_id, role in Membership.objects.values_list(
        "user_id", "organisation_id", "role"
    ):
        members.setdefault(user_id, set()).add(organisation_id)
        if role == "reviewer":
            reviewers.add(user_id)
    roles: dict[int, set] = {}
    for user_id, role in GlobalRole.objects.values_list("user_id", "role"):
        roles.setdefault(user_id, set()).add(role)
    conflicts = set(Conflict.objects.values_list("organisation_id", "other_id"))
    assigned = set(
        ReviewAssignment.objects.filter(status__in=("invited", "accepted")).values_list(
            "reviewer_id", "submission_id"
        )
    )
    relation_of = dict(
        members=members, reviewers=reviewers, conflicts=conflicts, assigned=assigned, roles=roles
    )

    public_systems = set(
        Publication.objects.filter(status=Publication.Status.PUBLISHED).values_list(
            "submission__system_id", flat=True
        )
    )
    subjects: dict[str, list] = {}
    for submission in Submission.objects.select_related("system").order_by("pk"):
        owners = {
            acme.pk: demo["demo-submitter"],
            zephyr.pk: demo["demo-zephyr"],
            nimbus.pk: demo["demo-nimbus"],
        }
        own = owners[submission.organisation_id]
        other = demo["demo-submitter"] if own == demo["demo-zephyr"] else demo["demo-zephyr"]
        assignment = (
            ReviewAssignment.objects.filter(submission=submission, status__in=("invited", "accepted"))
            .order_by("reviewer__username")
            .first()
        )
        users = {
            ANON: None,
            OWN: own,
            OTHER: other,
            CONFLICTED: conflicted,
            ASSIGNED: assignment.reviewer if assignment else demo["demo-reviewer"],  # drafts: nobody can be
            UNASSIGNED: unassigned,
            AUDITOR: demo["demo-auditor"],
            CHAIR: chair,
        }
        for role, user in users.items():  # the world really gives each user that role
            if role != ASSIGNED or submission.status != "draft":
                assert _relation(user, submission, **relation_of) == role, (submission.title, role, user)
        subject = Subject(
            submission.status, submission.pk, submission.title, submission.organisation_id, users
        )
        version = submission.versions.order_by("-number").first()
        ids = subject.ids
        ids["submission"] = {"pk": submission.pk}
        ids["system"] = {"pk": submission.system_id}
        if version is not None:
            ids["version_number"] = {"pk": submission.pk, "number": version.number}
            ids["file"] = {"pk": submission.pk, "number": version.number, "position": 0}
            ids["version"] = {"pk": version.pk}
            ids["version_file"] = {"pk": version.pk, "position": 0}
            run = version.check_runs.order_by("-pk").first()
            if run is not None:
                ids["check_run"] = {"pk": run.pk}
        upload = Upload.objects.filter(submission=submission).order_by("created_at").first()
        if upload is not None:
            ids["upload"] = {"pk": upload.pk}
            ids["upload_part"] = {"pk": upload.pk, "index": 0}
        if assignment is not None:
            ids["assignment"] = {"pk": assignment.pk, "assignment_id": assignment.pk}
        comment = Comment.objects.filter(submission=submission).order_by("pk").first()
        if comment is not None:
            ids["comment"] = {"pk": comment.pk, "comment_pk": comment.pk}
        waiver = Waiver.objects.filter(version__submission=submission).order_by("pk").first()
        if waiver is not None:
            ids["waiver"] = {"pk": waiver.pk, "waiver_id": waiver.pk}
        evidence = EvidenceRequest.objects.filter(submission=submission).first()
        if evidence is not None:
            ids["evidence"] = {"pk": evidence.pk}
        publication = Publication.objects.filter(submission=submission).first()
        if publication is not None:
            ids["public_id"] = {"public_id": publication.public_id}
            ids["public_file"] = {"public_id": publication.public_id, "position": 0}
            ids["public_pack"] = {"public_id": publication.public_id, "number": 1}
            annotation = Annotation.objects.filter(publication=publication).order_by("pk").first()
            if annotation is not None:
                ids["public_annotation_pack"] = {
                    "public_id": publication.public_id,
                    "annotation_id": annotation.pk,
                }
            subject.published = publication.status == Publication.Status.PUBLISHED
        ids["system_history"] = {"system_id": submission.system_id}
        subject.system_public = submission.system_id in public_systems
        challenge = Challenge.objects.filter(publication__submission=submission).order_by("pk").first()
        if challenge is not None:
            ids["challenge"] = {"pk": challenge.pk}
        spot_check = SpotCheck.objects.filter(submission=submission).order_by("pk").first()
        if spot_check is not None:  # the demo's NB-2 result, re-measured
            ids["spotcheck"] = {"pk": submission.pk, "spotcheck_id": spot_check.pk, "position": 0}
            ids["spotcheck_api"] = {"pk": spot_check.pk}
            if publication is not None:
                ids["public_spotcheck"] = {
                    "public_id": publication.public_id,
                    "spotcheck_id": spot_check.pk,
                    "position": 0,
                }
        subjects.setdefault(submission.status, []).append(subject)
    assert set(subjects) == set(STATES), sorted(subjects)
    (z9,) = [s for s in subjects["in_review"] if s.title == Z9_TITLE]
    assert z9.users[OWN] == demo["demo-zephyr"]

    everyone = [
        None,
        *User.objects.filter(
            pk__in={u.pk for s in sum(subjects.values(), []) for u in s.users.values() if u}
        ),
    ]
    hidden: dict = {}
    all_subjects = sum(subjects.values(), [])
    by_pk = {s.pk: s for s in all_subjects}
    submissions = {s.pk: s for s in Submission.objects.all()}
    for user in [None, *User.objects.all()]:
        hidden[getattr(user, "pk", None)] = [
            by_pk[pk]
            for pk, submission in submissions.items()
            if not expected_visible(_relation(user, submission, **relation_of), submission.status)
        ]
    # Per-user ids: a notification of the own member, and a conflict the chair declared.
    world = World(subjects=subjects, users=everyone, hidden=hidden, emails=emails)
    world.notification_of = {
        user.pk: Notification.objects.filter(user=user).values_list("pk", flat=True).first()
        for user in everyone
        if user
    }
    world.conflict_id = Conflict.objects.filter(organisation=rival).values_list("pk", flat=True).first()
    world.z9 = z9
    model_id, public_ids = None, []
    ranked = Publication.objects.filter(status=Publication.Status.PUBLISHED, retracted_at__isnull=True)
    for pub in ranked.order_by("pk"):
        model_id = model_id or pub.submission.benchmark.model_id
        if pub.submission.benchmark.model_id == model_id:
            public_ids.append(pub.public_id)
    world.compare = (model_id, public_ids[:4])
    world.relation_of = relation_of
    for user in everyone:  # logged in once, committed: each test's rollback keeps the sessions and tokens
        _client(world, user, api=True)
        _client(world, user, api=False)
    from accounts.models import ApiToken

    world.preview_of = _previews_of(everyone)
    world.api_token_of = {
        user.pk: ApiToken.objects.filter(user=user).values_list("pk", flat=True).first()
        for user in everyone
        if user
    }
    return world


def _previews_of(everyone) -> dict:
    """user pk -> a preview of the user's (first) organisation: one per organisation of the world, still checking
    (its files are the real vLLM bench outputs; the check is not run here)."""
    from accounts.models import Membership
    from previews.models import Preview
    from submissions.models import Submission
    from tests.previews.support import VLLM

    out = {}
    for user in everyone:
        if not user:
            continue
        membership = (
            Membership.objects.filter(user=user).select_related("organisation").order_by("pk").first()
        )
        if membership is None:
            continue
        system = membership.organisation.systems.order_by("pk").first()
        submission = Submission.objects.filter(organisation=membership.organisation).first()
        if system is None or submission is None:
            continue
        preview = Preview.objects.filter(
            organisation=membership.organisation
        ).first() or Preview.objects.create(
            organisation=membership.organisation,
            system=system,
            benchmark=submission.benchmark,
            name=f"{membership.organisation.slug} preview",
            files=[
                {"name": VLLM[0].name, "size_bytes": VLLM[0].stat().st_size, "sha256": "", "storage_key": ""}
            ],
        )
        out[user.pk] = preview.pk
    return out


@pytest.fixture(scope="module")
def world(django_db_setup, django_db_blocker, tmp_path_factory):
    from django.conf import settings
    from django.test.utils import override_settings

    media = tmp_path_factory.mktemp("matrix-media")
    storages = {
        **settings.STORAGES,
        "default": {
            "BACKEND": "django.core.files.storage.FileSystemStorage",
            "OPTIONS": {"location": str(media)},
        },
    }
    # Sessions in local memory: a login is only the carrier of who asks (one query less per request).
    caches = {
        **settings.CACHES,
        "matrix-sessions": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
    }
    with (
        override_settings(
            STORAGES=storages,
            CELERY_TASK_ALWAYS_EAGER=True,
            CACHES=caches,
            SESSION_ENGINE="django.contrib.sessions.backends.cache",
            SESSION_CACHE_ALIAS="matrix-sessions",
        ),
        django_db_blocker.unblock(),
    ):
        try:
            yield _build_world()
        finally:
            from django.db import connection

            call_command("flush", interactive=False, verbosity=0, inhibit_post_migrate=True)
            connection.creation.deserialize_db_from_string(connection._test_serialized_contents)
            # The copy is restored with its own ids while flush restarted every sequence at 1: move each sequence
            # past its table's ids, or the next test's INSERT collides with a restored row (catalog_benchmark).
            from django.apps import apps
            from django.core.management.color import no_style

            with connection.cursor() as cursor:
                for statement in connection.ops.sequence_reset_sql(no_style(), apps.get_models()):
                    cursor.execute(statement)


def _client(world: World, user, api: bool):
    from tests.factories import ApiTokenFactory

    key = (getattr(user, "pk", None), api)
    if key not in world.clients:
        if api:
            client = APIClient()
            if user is not None:
                client.credentials(HTTP_AUTHORIZATION=f"Token {ApiTokenFactory(user=user).key}")
        else:
            client = Client()
            if user is not None:
                client.force_login(user)
        # One handler per client class: each new handler loads the middleware (WhiteNoise scans the static
        # files); a handler holds no per-client state here (no force_authenticate).
        client.handler = _HANDLERS.setdefault(type(client.handler), client.handler)
        world.clients[key] = client
    return world.clients[key]


_HANDLERS: dict = {}


# Tables a request writes whatever it asks (the token's "last used", sign-in bookkeeping): not a write of the route.
UNWRITTEN = {"accounts_apitoken", "knox_authtoken"}


def _rows_written() -> dict[str, int]:
    """Rows inserted, updated or deleted so far in this transaction, per table (PostgreSQL's own counters:
    every table, whatever code wrote it)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT relname, n_tup_ins + n_tup_upd + n_tup_del FROM pg_stat_xact_user_tables "
            "WHERE n_tup_ins + n_tup_upd + n_tup_del > 0"
        )
        return {name: count for name, count in cursor.fetchall() if name not in UNWRITTEN}


def _request(
    world: World,
    user,
    method: str,
    url: str,
    *,
    fresh: bool = False,
    written: list | None = None,
    extra: dict | None = None,
):
    """One request, rolled back: a POST that succeeds changes nothing for the next cell of the matrix. `fresh`: a
    client of its own (logout and password flows end the shared client's session). `written`: filled with the
    tables the request wrote rows of (measured before the rollback)."""
    api = url.startswith("/api/")
    with transaction.atomic():
        before = _rows_written() if written is not None else None
        if fresh:
            client = Client()
            if user is not None:
                client.force_login(user)
        else:
            client = _client(world, user, api)
        if method == "put":
            response = client.put(url, b"x", content_type="application/octet-stream")
        elif method == "post":
            data = {
                "reason": "matrix",
                "body": "matrix",
                "notes": "matrix",
                "question": "matrix",
                **(extra or {}),
            }
            response = client.post(url, data, format="json") if api else client.post(url, data)
        else:
            response = client.get(url)
        if written is not None:
            after = _rows_written()
            written.extend(sorted(name for name, count in after.items() if count != before.get(name, 0)))
        transaction.set_rollback(True)
    return response


def _body(response) -> str:
    if getattr(response, "streaming", False):
        return b"".join(response.streaming_content).decode("utf-8", "replace")
    return response.content.decode("utf-8", "replace")


def _leaks(world: World, user, body: str) -> list[str]:
    """What the body shows that `user` may not see."""
    found = []
    for subject in world.hidden[getattr(user, "pk", None)]:
        if subject is world.z9 and Z9 in body:
            found.append(Z9)
        for title in {subject.title, html.escape(subject.title)}:
            if title in body:
                found.append(f"title of #{subject.pk} ({subject.status})")
        pk = subject.pk
        pattern = rf'/submissions/{pk}/|/audit/{pk}/|submission #{pk}\b|"submission(?:_id)?":\s*{pk}\b'
        if re.search(pattern, body, flags=re.IGNORECASE):
            found.append(f"id of #{pk} ({subject.status})")
    return found


def _login_redirect(response) -> bool:
    return response.status_code == 302 and "/accounts/login/" in response["Location"]


def _kwarg_names(name: str) -> set[str]:
    from django.urls import get_resolver

    namespace, _, short = name.rpartition(":")
    resolver = get_resolver()
    for part in filter(None, namespace.split(":")):
        resolver = resolver.namespace_dict[part][1]
    names = set()
    for possibility, _pattern, _defaults, _converters in resolver.reverse_dict.getlist(short):
        for _result, params in possibility:
            names |= set(params)
    return names - {"format"}


def _subject_kwargs(name: str, route: Route, subject: Subject, world: World, user):
    if route.pk in OWN_ROW_PKS:
        own = getattr(world, f"{route.pk}_of")
        pk = own.get(getattr(user, "pk", None)) or own.get(subject.users[OWN].pk)
        return {"pk": pk}
    if route.pk == "conflict":
        return {"pk": world.conflict_id, "conflict_id": world.conflict_id}
    return subject.ids.get(route.pk)


def _kwargs_for(name: str, kwargs: dict, subject: Subject) -> dict:
    """The route's own kwargs: an object named by `<object>_id` / `<object>_pk`; `pk` beside one of them is the
    submission's (review/submissions/<pk>/comments/<comment_pk>/close/)."""
    names = _kwarg_names(name)
    named_object = any(key.endswith(("_id", "_pk")) for key in names)
    out = {}
    for key in names:
        if key == "pk" and named_object:
            out[key] = subject.pk
        elif key in kwargs:
            out[key] = kwargs[key]
        elif key.endswith(("_id", "_pk")):
            out[key] = kwargs.get("pk")
    return out


# --- The matrix ----------------------------------------------------------------------------------

DECLARED = sorted(name for name in ROUTES if name in SERVED)
NON_SUBJECT = [n for n in DECLARED if ROUTES[n].kind not in (SUBJECT, SUBJECT_WRITE, RESULT)]
SUBJECT_ROUTES = [n for n in DECLARED if ROUTES[n].kind in (SUBJECT, SUBJECT_WRITE, RESULT)]


def _fixed_url(name: str, route: Route, world: World) -> str:
    if route.pk == "compare":  # 2-4 published results of one benchmark
        model_id, public_ids = world.compare
        assert len(public_ids) >= 2, public_ids
        return reverse(name, kwargs={"model_id": model_id}) + "?ids=" + ",".join(public_ids)
    if route.pk == "benchmark":
        return reverse(name, kwargs={"model_id": "llama3_1-8b"})
    if route.pk == "log":  # the demo's publications made the log's first leaves
        values = {"size": 1, "index": 0}
        return reverse(name, kwargs={key: values[key] for key in _kwarg_names(name)}) + route.query
    if route.pk == "reset":
        return reverse(name, kwargs={"uidb64": "MQ", "token": "set-password"})
    if route.pk == "account":  # an organisation's, an invitation's or a global role's page (rolled back)
        values = {"slug": "acmecompute", "token": "not-a-token", "pk": 1, "user_id": 1}
        return reverse(name, kwargs={key: values[key] for key in _kwarg_names(name)})
    return reverse(name) + route.query


@pytest.mark.parametrize("name", NON_SUBJECT)
def test_non_object_routes_per_role(name, world):
    route = ROUTES[name]
    url = _fixed_url(name, route, world)
    failures = []
    # Not one submission's route: what it answers depends on who asks, and every state's users are asked once
    # (each body is still searched for every submission that user may not see, in every state).
    seen = set()
    for state in STATES:
        for subject in world.subjects[state]:
            for role in ROLES:
                user = subject.users[role]
                if (getattr(user, "pk", None), role) in seen or (name in USER_BLIND and user is not None):
                    continue
                seen.add((getattr(user, "pk", None), role))
                _check_non_object(world, name, route, url, role, user, state, failures)
    assert not failures, f"{name}: " + "; ".join(failures)


# The API schema and its viewers are the same document for everyone: asked anonymously only (each takes a second).
USER_BLIND = {"api-schema", "api-docs", "api-redoc"}


def _check_non_object(world, name, route, url, role, user, state, failures) -> None:
    response = _request(world, user, route.method, url, fresh=route.kind == FLOW)
    code = response.status_code
    ok = code < 500
    if route.kind == PUBLIC:
        ok = code == 200
    elif route.kind in (LOGIN, LIST, ONLY) and user is None:
        ok = _login_redirect(response) or code in (401, 403) or (route.kind == LIST and code == 200)
    elif route.kind == LOGIN and route.method == "get":
        ok = code == 200
    elif route.kind == LIST:
        ok = code in (200, 403)
    elif route.kind == ONLY and route.method == "get":
        ok = code == 200 if role in route.who else code in (403, 404)
    if not ok:
        failures.append(f"{role} ({state}): {code}")
    leaks = _leaks(world, user, _body(response))
    if leaks:
        failures.append(f"{role} ({state}) sees {leaks}")


def _object_expectation(
    route: Route,
    role: str,
    subject: Subject,
    user,
    world: World,
    kwargs,
    response,
    state_permits: bool = True,
) -> bool:
    code = response.status_code
    if (
        route.kind == RESULT
    ):  # public once published, to everyone; before that to nobody, its own members included
        public = subject.system_public if route.pk == "system_history" else subject.published
        if route.method != "get":
            if user is None:
                return _login_redirect(response)
            return code < 500 and code != 404 if public else code == 404
        return code == 200 if public else code == 404
    page = route.kind == SUBJECT_WRITE and not response.get("Content-Type", "").startswith("application/json")
    refused = (302, 400, 403, 404, 409) if page else (400, 403, 404, 409)
    if (
        route.pk == "system"
    ):  # a system is public once it has a published result; only its organisation writes
        return code < 500 and (route.kind == SUBJECT or role == OWN or code in (*refused, 401))
    if route.pk in OWN_ROW_PKS:  # each user's own, whatever the submission
        mine = getattr(world, f"{route.pk}_of").get(getattr(user, "pk", None)) == kwargs["pk"]
        visible, allowed = mine, mine
    elif route.pk == "conflict":  # not a submission's: `who` alone decides
        visible, allowed = user is not None, role in route.who
    else:
        # a write the workflow table forbids in this state is refused to everyone, `who` included
        visible, allowed = expected_visible(role, subject.status), role in route.who and state_permits
    if user is None:
        return _login_redirect(response) or code in (401, 403, 404) or (code == 200 and visible)
    if not visible:
        return code == 404
    if route.kind == SUBJECT:
        return code in route.ok if allowed else code in (*route.ok, 403, 404)
    return code < 500 and (code != 404 if allowed else code in refused)


def _asked_url(name: str, route: Route, subject: Subject, world: World, user) -> str | None:
    """The route's URL for this subject and user; None when the subject has no such object."""
    kwargs = _subject_kwargs(name, route, subject, world, user)
    if not kwargs or any(value is None for value in kwargs.values()):
        return None
    return reverse(name, kwargs=_kwargs_for(name, kwargs, subject)) + route.query


# Roles whose visibility is not the submission's (a user's own notifications, the chair's conflicts, systems
# public once they have a published result): never grouped.
UNGROUPED_PKS = {"notification", "api_token", "conflict", "system"}


def _plan(name: str, route: Route, state: str, world: World) -> list[tuple[Subject, str]]:
    """Which (subject, role) pairs of one (route, state) are asked: every role of the matrix at least once.

    - Unreleased-Z9 (in review) is asked by every role, on every route: the embargo is the product's promise.
    - Another submission in the same state is asked by one role in two (rotating with the route), the state's
      cell being covered by Z9 for the others; with several (published), one per role, rotating.
    - The signed-in roles the submission is hidden from (other member, conflicted and unassigned reviewer; in a
      draft also the assigned reviewer, the auditor and the chair) all get the same 404 through the same
      lookup: one of them asks, rotating with the route and the state, so each asks about 1/n of the routes
      in each state. Anonymous, the own member and every role that sees the submission always ask.
    """
    route_index = SUBJECT_ROUTES.index(name)
    state_index = STATES.index(state)
    pairs = []
    for role_index, role in enumerate(ROLES):
        # the submissions of this state the route has an object of (a comment, a waiver, ...)
        subjects = [s for s in world.subjects[state] if _asked_url(name, route, s, world, s.users[role])]
        others = [s for s in subjects if s is not world.z9]
        has_z9 = len(others) < len(subjects)
        for position, subject in enumerate(others):
            if has_z9 and (role_index + route_index) % 2:
                continue
            if len(others) > 1 and position != (role_index + route_index) % len(others):
                continue
            pairs.append((subject, role))
        if has_z9:
            pairs.append((world.z9, role))
    if route.pk in UNGROUPED_PKS:
        return pairs
    planned = []
    for subject, role in pairs:
        hidden = [r for r in ROLES if r not in (ANON, OWN) and not expected_visible(r, subject.status)]
        if subject is world.z9 or role not in hidden:
            planned.append((subject, role))
        elif role == hidden[(route_index + state_index) % len(hidden)]:
            planned.append((subject, role))
    return planned


# --- Writes: which row of which workflow table each write route takes --------------------------------------------
# (table, actions, the object of the table the route acts on). The matrix asks the table only which states the
# action may be taken in: a write accepted in another state fails, whoever asks. Who may is the matrix's own
# `who` above, written independently of the policy. Routes on objects without a status (systems, conflicts,
# notifications, tokens) are in NO_STATUS_WRITES: refused means nothing written there too.


def _workflow():
    from leaderboard import workflow as leaderboard_workflow
    from review import lifecycle
    from submissions import workflow as submissions_workflow

    return lifecycle, submissions_workflow, leaderboard_workflow


def _object(kind: str, kwargs: dict, subject: Subject):
    from leaderboard.models import Challenge, Publication
    from review.models import Comment, EvidenceRequest, ReviewAssignment, Waiver
    from submissions.models import Submission, Upload

    if kind == "submission":
        return Submission.objects.get(pk=subject.pk)
    if kind == "publication":
        return Publication.objects.filter(submission_id=subject.pk).first()
    model = {
        "comment": Comment,
        "assignment": ReviewAssignment,
        "waiver": Waiver,
        "evidence": EvidenceRequest,
        "upload": Upload,
        "upload_part": Upload,
        "challenge": Challenge,
    }[kind]
    return model.objects.get(pk=kwargs["pk"])


def _sub(*actions):
    return ("SUBMISSION", actions, "submission")


WRITE_ACTIONS: dict[str, tuple] = {
    "submissions:submit": _sub("submit"),
    "submissions:resubmit": _sub("resubmit"),
    "submissions:withdraw": _sub("withdraw"),
    "submissions:reject": _sub("reject"),
    "submissions:recheck": _sub("recheck", "requeue_check", "audit_recheck"),
    "submissions:endpoint": _sub("declare_endpoint"),
    "review:spotcheck_start": _sub("spot_check"),
    "api:submission-endpoint": _sub("declare_endpoint"),
    "api:submission-submit": _sub("submit"),
    "api:submission-withdraw": _sub("withdraw"),
    "api:submission-reject": _sub("reject"),
    "api:submission-resubmit": _sub("resubmit"),
    "api:submission-extend": ("PUBLICATION", ("extend",), "publication"),
    "api:version-recheck": _sub("recheck", "requeue_check", "audit_recheck"),
    "api:upload-finish": ("UPLOAD", ("finish",), "upload"),
    "api:upload-part": ("UPLOAD", ("put_part",), "upload_part"),
    "api:upload-sign": (
        "UPLOAD",
        ("put_part",),
        "upload",
    ),  # the part URLs of a direct upload: parts, by another door
    "review:review_create": _sub("review"),
    "review:comment_create": _sub("comment", "object"),
    "review:objection_close": ("OBJECTION", ("resolve", "overrule"), "comment"),
    "review:assignment_accept": ("ASSIGNMENT", ("accept",), "assignment"),
    "review:assignment_decline": ("ASSIGNMENT", ("decline",), "assignment"),
    "api:review-assignment-accept": ("ASSIGNMENT", ("accept",), "assignment"),
    "api:review-assignment-decline": ("ASSIGNMENT", ("decline",), "assignment"),
    "api:comment-close": ("OBJECTION", ("resolve", "overrule"), "comment"),
    "review:submitter_comment": _sub("comment"),
    "review:waiver_request": _sub("request_waiver"),
    "review:evidence_answer": ("EVIDENCE_REQUEST", ("answer",), "evidence"),
    "api:evidence-request-answer": ("EVIDENCE_REQUEST", ("answer",), "evidence"),
    "review:attest": _sub("attest"),
    "api:audit-attest": _sub("attest"),
    "review:evidence_request": _sub("request_evidence"),
    "api:audit-request-evidence": _sub("request_evidence"),
    "review:audit_reject": _sub("reject"),
    "review:audit_recheck": _sub("requeue_check", "audit_recheck"),
    "api:audit-recheck": _sub("requeue_check", "audit_recheck"),
    "review:waiver_grant": _sub("waive"),
    "review:waiver_decide": ("WAIVER", ("grant", "refuse"), "waiver"),
    "api:waiver-decide": ("WAIVER", ("grant", "refuse"), "waiver"),
    "review:chair_assign": _sub("assign"),
    "review:chair_draw": _sub("assign"),
    "review:chair_release": ("ASSIGNMENT", ("release",), "assignment"),
    "api:chair-assignment-release": ("ASSIGNMENT", ("release",), "assignment"),
    "results:challenge_resolve": ("CHALLENGE", ("dismissed", "annotated", "retracted"), "challenge"),
    "leaderboard:publication_choose": _sub("publish"),
    "leaderboard:extension_open": ("PUBLICATION", ("extend",), "publication"),
}
NO_STATUS_WRITES = {
    "submissions:system_update_description",
    "api:system-update-description",
    "review:conflict_remove",
    "api:notification-read",
    "accounts:token_revoke",
    "results:challenge",  # a RESULT route: the publication's `challenge` row, judged by the RESULT rule
    # A preview is its organisation's own row (OWN_ROW_PKS), whatever the submission's state; its own table
    # (previews/workflow.py) is judged in tests/previews/.
    "previews:recheck",
    "previews:delete",
    "api:preview-recheck",
}
WRITE_ROUTES = sorted(n for n in SUBJECT_ROUTES if ROUTES[n].method != "get")
# The codes a refusal of the policy carries in the API (403 who, 409 state or a precondition), and DRF's own.
REFUSAL_CODES = {403: {"permission_denied", "not_authenticated", "authentication_failed"}}


def test_every_write_route_has_its_row():
    assert set(WRITE_ROUTES) == set(WRITE_ACTIONS) | NO_STATUS_WRITES, sorted(
        set(WRITE_ROUTES) ^ (set(WRITE_ACTIONS) | NO_STATUS_WRITES)
    )
    tables = dict(zip(("lifecycle", "submissions", "leaderboard"), _workflow(), strict=True))
    names = {**vars(tables["lifecycle"]), **vars(tables["submissions"]), **vars(tables["leaderboard"])}
    for name, (table, actions, _kind) in WRITE_ACTIONS.items():
        policy = names[table]
        for action in actions:
            policy.rule(action)  # every action named is a row of its table (else: unknown-action)
        assert name in SERVED, name


def _state_permits(name: str, kwargs: dict, subject: Subject) -> tuple[bool, str]:
    """Does the route's table let its action happen in the object's current state (whoever asks)?"""
    lifecycle, submissions_workflow, leaderboard_workflow = _workflow()
    table, actions, kind = WRITE_ACTIONS[name]
    policy = {**vars(lifecycle), **vars(submissions_workflow), **vars(leaderboard_workflow)}[table]
    obj = _object(kind, kwargs, subject)
    if obj is None:
        return False, "no such object"
    if table == "PUBLICATION" and obj.submission_id != subject.pk:
        return False, "not this submission's"
    return any(policy.state_allows(obj, action) for action in actions), policy.state_of(obj)


def _table_allows(name: str, kwargs: dict, subject: Subject, user) -> bool:
    """Does the route's table let `user` (who and state) take one of its actions on the object now?"""
    lifecycle, submissions_workflow, leaderboard_workflow = _workflow()
    table, actions, kind = WRITE_ACTIONS[name]
    policy = {**vars(lifecycle), **vars(submissions_workflow), **vars(leaderboard_workflow)}[table]
    obj = _object(kind, kwargs, subject)
    if obj is None or user is None or (table == "PUBLICATION" and obj.submission_id != subject.pk):
        return False
    return any(policy.allowed(user, obj, action) for action in actions)


def _refused_as_not_allowed(response) -> bool:
    """The answer says who may not: a 403, or a page that redirects with the policy's refusal ("Only ... can")."""
    if response.status_code == 403:
        return True
    queued = getattr(getattr(response.wsgi_request, "_messages", None), "_queued_messages", [])
    return any(message.level_tag == "error" and "Only " in str(message) for message in queued)


def _write_expectation(name, route, role, subject, user, world, kwargs, response, written) -> str:
    """'' when the write cell holds: a refusal (by code, or a page that wrote nothing) writes nothing; a write
    the table forbids in this state, or by a role the matrix does not allow, is refused and writes nothing;
    an API refusal carries the policy's code."""
    code = response.status_code
    if route.kind == RESULT or name not in WRITE_ACTIONS and name not in NO_STATUS_WRITES:
        return ""
    if code in (400, 401, 403, 404, 409) and written:
        return f"refused with {code} but wrote {written}"
    is_json = response.get("Content-Type", "").startswith("application/json")
    if is_json and code in REFUSAL_CODES:
        detail_code = response.json().get("code", "")
        if detail_code not in REFUSAL_CODES[code]:
            return f"{code} with code {detail_code!r}, not the policy's"
    if is_json and code == 409 and not response.json().get("code"):
        return "409 without a code"
    if name in NO_STATUS_WRITES:
        allowed_role = role in route.who or route.pk in OWN_ROW_PKS or route.pk == "system"
        if not allowed_role and written:
            return f"{role} may not, but it wrote {written}"
        return ""
    permits, state = _state_permits(name, kwargs, subject)
    visible = expected_visible(role, subject.status)
    if (not permits or role not in route.who or not visible) and written:
        why = f"the table forbids it in {state}" if not permits else f"{role} may not"
        return f"{why}, but it answered {code} and wrote {written}"
    if (
        role in route.who
        and visible
        and _table_allows(name, kwargs, subject, user)
        and _refused_as_not_allowed(response)
    ):
        # the other direction: the table lets this actor take the row in this state, so the service must not say
        # who may not (a precondition's 409 or a body's 400 is the service's to give)
        return f"the table lets {role} do it in {state}, but it answered {code} (not allowed)"
    if not permits and is_json and visible and role in route.who and code not in (400, 409):
        # the table forbids the state to everyone: the one the route lets in hears 409 (with the refusal's stable
        # code), or 400 when the body was refused first
        return f"{code} where the table forbids the state ({state})"
    if written and code >= 400:
        return f"answered {code} but wrote {written}"
    return ""


def _write_data(name: str, subject: Subject) -> dict | None:
    """What a write needs to be effective where the table allows it, so that the state alone decides: a waiver
    names an error finding of the latest version's latest check (else the service's finding-not-found would
    refuse it in every state, and a waiver asked for after peer review would go unseen)."""
    if name == "review:spotcheck_start":  # a point of the claim, so that who, state and endpoint alone decide
        from spotchecks.selectors import claim_of
        from submissions.models import Submission

        points = claim_of(Submission.objects.get(pk=subject.pk)).points
        return {"concurrency": points[0]["concurrency"]} if points else None
    if name not in ("review:waiver_request", "review:waiver_grant"):
        return None
    from review.models import Waiver
    from submissions.models import Finding

    findings = Finding.objects.filter(
        check_run__version__submission_id=subject.pk, severity="error"
    ).order_by("-check_run__version__number", "-check_run_id", "pk")
    waived = set(
        Waiver.objects.filter(version__submission_id=subject.pk).values_list(
            "version_id", "rule", "point", "file"
        )
    )
    finding = next(  # one nobody asked to waive yet, else the service's waiver-exists refuses in every state
        (
            f
            for f in findings.select_related("check_run")
            if (f.check_run.version_id, f.rule, f.point, f.file) not in waived
        ),
        findings.first(),
    )
    if finding is None:
        return None
    return {"rule": finding.rule, "point": finding.point, "file": finding.file}


WRITE_COUNTS: dict[str, int] = {}


@pytest.mark.parametrize("state", STATES)
@pytest.mark.parametrize("name", SUBJECT_ROUTES)
def test_object_routes_per_role_and_state(name, state, world):
    route = ROUTES[name]
    failures = []
    for subject, role in _plan(name, route, state, world):
        user = subject.users[role]
        kwargs = _subject_kwargs(name, route, subject, world, user)
        url = _asked_url(name, route, subject, world, user)
        written: list | None = [] if route.method != "get" else None
        permits = _state_permits(name, kwargs, subject)[0] if name in WRITE_ACTIONS else True
        response = _request(world, user, route.method, url, written=written, extra=_write_data(name, subject))
        body = _body(response)  # read once: a streamed download is consumed by reading it
        if not _object_expectation(route, role, subject, user, world, kwargs, response, permits):
            failures.append(f"#{subject.pk} {role}: {response.status_code} {body[:120]!r}")
        if written is not None:
            WRITE_COUNTS["cells"] = WRITE_COUNTS.get("cells", 0) + 1
            WRITE_COUNTS["effective" if written else "nothing written"] = (
                WRITE_COUNTS.get("effective" if written else "nothing written", 0) + 1
            )
            problem = _write_expectation(name, route, role, subject, user, world, kwargs, response, written)
            if problem:
                failures.append(f"#{subject.pk} {role}: {problem}")
        leaks = _leaks(world, user, body)
        if leaks:
            failures.append(f"#{subject.pk} {role} sees {leaks}")
    assert not failures, f"{name} [{state}]: " + "; ".join(failures)


def test_seeding_emails_never_carry_z9(world):
    """E-mails carry a submission's number and a link, never a system name or a comment's text (issue 19): the
    reviewer's comment naming Unreleased-Z9 reaches its thread's readers as a link only."""
    from django.contrib.auth import get_user_model

    assert world.emails, "the demo sends notification e-mails"
    carrying = [m for m in world.emails if Z9 in m.subject or Z9 in m.body]
    assert not carrying, [(m.to, m.subject) for m in carrying]
    assert any(f"submission #{world.z9.pk}" in m.subject for m in world.emails)
    # No e-mail anywhere names a hidden submission's title to someone who may not see it.
    for message in world.emails:
        for address in message.to:
            user = get_user_model().objects.filter(email=address).first()
            assert not _leaks(world, user, message.subject + message.body), (address, message.subject)


@pytest.mark.parametrize("state", STATES)
def test_publication_choice_is_the_own_submitters_on_an_audited_submission(state, world):
    """Choosing "now" publishes only when the submitting organisation's submitter asks on an audited submission;
    for anyone else and in any other state nothing is published (rolled back after each request)."""
    from leaderboard.models import Publication, PublicationRevision
    from submissions.models import Submission

    failures = []
    for subject in world.subjects[state]:
        url = reverse("leaderboard:publication_choose", kwargs={"pk": subject.pk})
        # An extension's publication is the next revision of the result it extends (docs/extensions.md).
        extension = Submission.objects.filter(pk=subject.pk, extends__isnull=False).exists()
        record = PublicationRevision if extension else Publication
        for role in ROLES:
            user = subject.users[role]
            published = record.objects.filter(submission_id=subject.pk, status="published")
            with transaction.atomic():
                before = published.exists()
                scheduled = record.objects.filter(submission_id=subject.pk).exists()
                response = _client(world, user, api=False).post(url, {"mode": "now"})
                after = published.exists()
                transaction.set_rollback(True)
            chooser = role == OWN and state == "audited"
            if user is None:
                ok = _login_redirect(response) and after == before
            elif chooser and not scheduled:
                ok = after and response.status_code == 302
            elif chooser:
                ok = response.status_code == 302  # an existing choice: rescheduling is the service's business
            else:
                ok = after == before and response.status_code in (302, 403, 404)
            if not ok:
                failures.append(
                    f"#{subject.pk} {role}: {response.status_code}, published {before} -> {after}"
                )
    assert not failures, f"publication_choose [{state}]: " + "; ".join(failures)


@pytest.mark.parametrize("state", STATES)
def test_an_extension_shows_on_its_public_result_only_once_published(state, world):
    """The result an extension extends is public; the extension's points are not until it is published: its stack
    label (on every point it measured) appears on no public page, data file or API answer of the result, for any
    role, its own organisation included; once published, it is the result's newest revision."""
    from leaderboard.models import Publication
    from submissions.models import Submission

    failures = []
    extensions = Submission.objects.filter(status=state, extends__isnull=False).select_related("extends")
    assert extensions.exists(), f"the matrix world holds an extension in state {state}"
    for extension in extensions:
        public_id = Publication.objects.get(submission=extension.extends).public_id
        urls = [
            f"/results/{public_id}/",
            f"/results/{public_id}/points.json",
            f"/results/{public_id}/points.csv",
            f"/api/v1/public/results/{public_id}/",
            f"/api/v1/public/results/{public_id}/?format=csv",
            "/api/v1/public/points/?limit=500",
            f"/leaderboard/{extension.benchmark.model_id}/",
        ]
        for role in ROLES:
            user = next(s for s in world.subjects[state] if s.pk == extension.pk).users[role]
            for url in urls:
                response = _request(world, user, "get", url)
                body = _body(response)
                if response.status_code != 200:
                    failures.append(f"{role} {url}: {response.status_code}")
                elif state != "published" and extension.stack in body:
                    failures.append(f"{role} {url} shows {extension.stack!r}")
        if state == "published":
            page = _body(_request(world, None, "get", f"/results/{public_id}/"))
            if extension.stack not in page or f'data-revision="{extension.revision}"' not in page:
                failures.append(f"revision {extension.revision} ({extension.stack}) missing from {public_id}")
    assert not failures, f"extension [{state}]: " + "; ".join(failures[:20])
