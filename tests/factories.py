"""factory_boy factories for every model of the portal (tests/test_factories.py fails when one is missing).

Test setup only: they bypass the services (no permission checks) and, except AuditEventFactory, the audit
log. What they build is still consistent, so a test can start from any point of the lifecycle:

- ``SubmissionFactory(status=...)`` or one trait per lifecycle state (``SubmissionFactory(published=True)``):
  from ``submitted`` on the submission has a ``submitted_version`` whose latest check passed (as the
  ``submit`` row requires), ``status_changed_at`` is set, and withdrawn/rejected ones carry a reason.
  Pass ``system=`` to choose the system; the submission's organisation is the system's.
- ``SubmissionVersionFactory(files=[(name, bytes), ...])``: one VersionFile row per file, whose bytes are
  really in the default storage under their content-addressed key (use the ``storage_dir`` fixture);
  ``sample_run_archives=True`` uses the seven AX-8000 run archives.
- ``CheckRunFactory(status=...)``: the fields that status implies; a failed run has an error finding and
  every finished run a point metric, unless ``findings=[...]`` / ``point_metrics=[...]`` say otherwise;
  ``counts`` follows the findings.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from datetime import timedelta
from pathlib import Path

import factory
from django.contrib.auth import get_user_model
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.db import transaction
from django.utils import timezone
from django_otp.plugins.otp_static.models import StaticDevice, StaticToken
from django_otp.plugins.otp_totp.models import TOTPDevice

from accounts.models import (
    ApiToken,
    GlobalRole,
    Invitation,
    Membership,
    Notification,
    NotificationPreference,
    Organisation,
    SignIn,
    VerifiedAddress,
)
from audit.models import AuditEvent
from catalog.models import Benchmark
from leaderboard.models import (
    Annotation,
    Challenge,
    EvidencePack,
    LogCheckpoint,
    LogLeaf,
    Publication,
    PublicationRevision,
    RecheckCampaign,
    RecheckResult,
)
from previews.models import Preview
from review.models import Attestation, Comment, Conflict, EvidenceRequest, Review, ReviewAssignment, Waiver
from spotchecks.models import SpotCheck
from submissions.endpoints import credential_encrypt
from submissions.models import (
    CheckOutbox,
    CheckRun,
    Endpoint,
    Finding,
    IdempotencyKey,
    PointMetric,
    Submission,
    SubmissionVersion,
    System,
    SystemDescriptionRevision,
    Upload,
    UploadPart,
    VersionFile,
)
from submissions.storage import blob_key, storage_save_exact

PASSWORD = "correct-horse-battery"
ROOT = Path(__file__).resolve().parents[1]
RUN_ARCHIVES = sorted((ROOT / "tests" / "checker" / "fixtures" / "run_archives").glob("AX-8000_c*.tar.gz"))
SAMPLE_MODEL_ID = "llama3_1-8b"
# The sample runs last ~20 s: under the official rule set they fail point-duration, so the suite checks them under
# the preview rule set (docs/rules.md, "Rule sets"); tests of official durations name endpoints-v1.0 themselves.
SAMPLE_RULESET = "endpoints-v1.0-preview"
SAMPLE_SYSTEM_NAME = "Acme_AX-8000"

Status = Submission.Status
RunStatus = CheckRun.Status


def sha256_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def store_bytes(data: bytes) -> str:
    """Put `data` in the default storage under its content-addressed key, as a verified upload does."""
    return storage_save_exact(blob_key(sha256_of(data)), ContentFile(data))


def description_sha256(description: dict) -> str:
    """As submissions.services computes it: SHA-256 of the canonical JSON (sorted keys)."""
    canonical = json.dumps(description, sort_keys=True, separators=(",", ":"), default=str)
    return sha256_of(canonical.encode())


def version_sha256(files: list[tuple[str, bytes]]) -> str:
    """As submissions.uploads computes it: the file's SHA-256, or that of the sorted 'sha256  name' lines."""
    if len(files) == 1:
        return sha256_of(files[0][1])
    lines = "".join(
        f"{digest}  {name}\n" for name, digest in sorted((name, sha256_of(data)) for name, data in files)
    )
    return sha256_of(lines.encode())


class _Factory(factory.django.DjangoModelFactory):
    class Meta:
        abstract = True
        # Versions, version files, revisions and audit events refuse a second save().
        skip_postgeneration_save = True


# --- accounts -------------------------------------------------------------------------------------


class UserFactory(_Factory):
    class Meta:
        model = get_user_model()
        django_get_or_create = ("username",)

    username = factory.Sequence(lambda n: f"user{n}")
    email = factory.LazyAttribute(lambda u: f"{u.username}@example.com")
    password = factory.django.Password(PASSWORD)

    @factory.post_generation
    def second_factor(obj, create, extracted, **kwargs):
        """A superuser acts as the chair, who needs two-factor sign-in: a confirmed authenticator
        (second_factor=False: none)."""
        if create and obj.is_superuser and extracted is not False:
            _authenticator_for(obj)


def _authenticator_for(user) -> None:
    if not TOTPDevice.objects.filter(user=user, confirmed=True).exists():
        TOTPDeviceFactory(user=user)


class OrganisationFactory(_Factory):
    class Meta:
        model = Organisation
        django_get_or_create = ("slug",)

    name = factory.Sequence(lambda n: f"Org {n}")
    slug = factory.Sequence(lambda n: f"org-{n}")
    kind = Organisation.Kind.HARDWARE_VENDOR


class MembershipFactory(_Factory):
    class Meta:
        model = Membership

    user = factory.SubFactory(UserFactory)
    organisation = factory.SubFactory(OrganisationFactory)
    role = Membership.Role.SUBMITTER


class GlobalRoleFactory(_Factory):
    class Meta:
        model = GlobalRole

    user = factory.SubFactory(UserFactory)
    role = GlobalRole.Role.AUDITOR

    @factory.post_generation
    def second_factor(obj, create, extracted, **kwargs):
        """Auditors and the chair act only with two-factor sign-in: a confirmed authenticator with the tests'
        secret (tests/accounts/support.py), so their API tokens act and force_login is verified
        (second_factor=False: none, for tests of the unprotected state)."""
        if create and extracted is not False:
            _authenticator_for(obj.user)


class ApiTokenFactory(_Factory):
    """An API token as knox makes it (a random key, only its digest stored); the key is on `obj.key`, for tests.

    Default scope write (what `portal submit` needs), no expiry."""

    class Meta:
        model = ApiToken

    user = factory.SubFactory(UserFactory)
    name = factory.Sequence(lambda n: f"token {n}")
    scope = ApiToken.Scope.WRITE
    expiry = None  # a timedelta from now, or None for never

    @classmethod
    def _create(cls, model_class, *args, **kwargs):
        token, key = model_class.objects.create(*args, **kwargs)
        token.key = key
        return token


class InvitationFactory(_Factory):
    """A pending invitation (its link: accounts.services.invitations.invitation_link)."""

    class Meta:
        model = Invitation

    organisation = factory.SubFactory(OrganisationFactory)
    email = factory.Sequence(lambda n: f"invitee{n}@example.com")
    roles = factory.LazyFunction(lambda: [Membership.Role.SUBMITTER])
    invited_by = factory.LazyAttribute(
        lambda i: MembershipFactory(organisation=i.organisation, role=Membership.Role.ORG_ADMIN).user
    )
    nonce = factory.LazyFunction(lambda: uuid.uuid4().hex)
    expires_at = factory.LazyFunction(lambda: timezone.now() + timedelta(days=7))


class SignInFactory(_Factory):
    class Meta:
        model = SignIn

    user = factory.SubFactory(UserFactory)
    address = "192.0.2.10"
    user_agent = "Mozilla/5.0 (X11; Linux x86_64) Chrome/131.0"
    outcome = SignIn.Outcome.SUCCESS


class VerifiedAddressFactory(_Factory):
    """The user's current address, confirmed (as opening the e-mailed confirmation link does)."""

    class Meta:
        model = VerifiedAddress

    user = factory.SubFactory(UserFactory)
    email = factory.LazyAttribute(lambda row: row.user.email.lower())


class TOTPDeviceFactory(_Factory):
    """A confirmed authenticator with the tests' known secret (tests/accounts/support.py computes its codes)."""

    class Meta:
        model = TOTPDevice

    user = factory.SubFactory(UserFactory)
    name = "Authenticator app"
    key = "3132333435363738393031323334353637383930"
    confirmed = True


class StaticDeviceFactory(_Factory):
    """The recovery codes' device."""

    class Meta:
        model = StaticDevice

    user = factory.SubFactory(UserFactory)
    name = "Recovery codes"
    confirmed = True


class StaticTokenFactory(_Factory):
    """One recovery code."""

    class Meta:
        model = StaticToken

    device = factory.SubFactory(StaticDeviceFactory)
    token = factory.Sequence(lambda n: f"code{n:04d}")


def submitter_of(organisation: Organisation):
    """A new user holding the submitter role in `organisation`."""
    return MembershipFactory(organisation=organisation, role=Membership.Role.SUBMITTER).user


# --- catalog --------------------------------------------------------------------------------------


class BenchmarkFactory(_Factory):
    class Meta:
        model = Benchmark
        django_get_or_create = ("model_id",)

    class Params:
        # The benchmark the sample run archives were made for (the catalog migration ships it).
        sample = factory.Trait(
            model_id=SAMPLE_MODEL_ID,
            display_name="Llama 3.1 8B Instruct",
            dataset="CNN/DailyMail",
            workload=Benchmark.Workload.CHAT,
            ruleset_version=SAMPLE_RULESET,
        )

    model_id = factory.Sequence(lambda n: f"test-model-{n}")
    display_name = factory.LazyAttribute(lambda b: b.model_id)
    dataset = "test prompts"
    workload = Benchmark.Workload.CHAT
    tokenizer_path = "sample-bpe-4k/tokenizer.json"

    @classmethod
    def _get_or_create(cls, model_class, *args, **kwargs):
        # The catalog migration ships llama3_1-8b under the official rule set; a factory call naming another one
        # (the sample trait's preview) moves the existing row to it.
        benchmark = super()._get_or_create(model_class, *args, **kwargs)
        wanted = kwargs.get("ruleset_version")
        if wanted and benchmark.ruleset_version != wanted:
            benchmark.ruleset_version = wanted
            benchmark.save(update_fields=["ruleset_version"])
        return benchmark


# --- submissions: systems ---------------------------------------------------------------------------


class SystemFactory(_Factory):
    class Meta:
        model = System

    class Params:
        # The system the sample run archives were made for.
        sample = factory.Trait(name=SAMPLE_SYSTEM_NAME)

    organisation = factory.SubFactory(OrganisationFactory)
    name = factory.Sequence(lambda n: f"System_{n}")
    description = factory.LazyFunction(lambda: {"system_name": "Test system"})


class SystemDescriptionRevisionFactory(_Factory):
    """The system's next description revision (1, 2, ...), by default of its current description."""

    class Meta:
        model = SystemDescriptionRevision

    system = factory.SubFactory(SystemFactory)
    number = factory.LazyAttribute(lambda r: r.system.description_revisions.count() + 1)
    description = factory.LazyAttribute(lambda r: dict(r.system.description))
    sha256 = factory.LazyAttribute(lambda r: description_sha256(r.description))
    changed_keys = factory.LazyFunction(list)
    created_by = factory.LazyAttribute(lambda r: submitter_of(r.system.organisation))


# --- submissions: versions and their files ----------------------------------------------------------


class VersionFileFactory(_Factory):
    """One stored file of a version; `content` (bytes) is written to the default storage."""

    class Meta:
        model = VersionFile

    version = factory.SubFactory("tests.factories.SubmissionVersionFactory", files=[])
    position = factory.LazyAttribute(lambda f: f.version.files.count())
    content = factory.Sequence(lambda n: f"stored file #{n}\n".encode() * 8)
    original_filename = factory.LazyAttribute(lambda f: f"file-{f.position}.tar.gz")
    storage_key = factory.LazyAttribute(lambda f: blob_key(sha256_of(f.content)))
    size_bytes = factory.LazyAttribute(lambda f: len(f.content))
    sha256 = factory.LazyAttribute(lambda f: sha256_of(f.content))

    @classmethod
    def _create(cls, model_class, *args, content: bytes, **kwargs):
        stored = store_bytes(content)
        assert stored == kwargs["storage_key"], f"storage saved {stored}, not {kwargs['storage_key']}"
        return super()._create(model_class, *args, **kwargs)

    @classmethod
    def _build(cls, model_class, *args, content: bytes, **kwargs):
        return super()._build(model_class, *args, **kwargs)


def _default_files(version) -> list[tuple[str, bytes]]:
    if version.sample_run_archives:
        return [(path.name, path.read_bytes()) for path in RUN_ARCHIVES]
    return [("bundle.tar.gz", f"bundle bytes of {uuid.uuid4()}\n".encode() * 8)]


class SubmissionVersionFactory(_Factory):
    """The submission's next version with `files` ((name, bytes) pairs) stored and recorded.

    `check_run=<status>` adds a check run in that status (CheckRunFactory)."""

    class Meta:
        model = SubmissionVersion

    class Params:
        sample_run_archives = False

    submission = factory.SubFactory("tests.factories.SubmissionFactory")
    number = factory.LazyAttribute(lambda v: v.submission.versions.count() + 1)
    files = factory.LazyAttribute(_default_files)
    kind = factory.LazyAttribute(
        lambda v: SubmissionVersion.Kind.RUN_ARCHIVES if len(v.files) > 1 else SubmissionVersion.Kind.BUNDLE
    )
    size_bytes = factory.LazyAttribute(lambda v: sum(len(data) for _, data in v.files))
    sha256 = factory.LazyAttribute(lambda v: version_sha256(v.files) if v.files else "0" * 64)
    uploader = factory.LazyAttribute(lambda v: v.submission.created_by)

    @classmethod
    def _create(cls, model_class, *args, files, **kwargs):
        version = super()._create(model_class, *args, **kwargs)
        for position, (name, data) in enumerate(files):
            VersionFileFactory(version=version, position=position, original_filename=name, content=data)
        return version

    @classmethod
    def _build(cls, model_class, *args, files, **kwargs):
        return super()._build(model_class, *args, **kwargs)

    @factory.post_generation
    def check_run(obj, create, extracted, **kwargs):
        if create and extracted:
            CheckRunFactory(version=obj, status=extracted, **kwargs)


# --- submissions: submissions in any lifecycle state -----------------------------------------------


REASONS = {
    Status.WITHDRAWN: "Withdrawn by the submitter: a newer driver is coming.",
    Status.REJECTED: "Rejected: the load points do not reproduce.",
}


class SubmissionFactory(_Factory):
    """A submission in `status` (or one trait per state) with the fields that state implies.

    From `submitted` on it gets a frozen version (`submitted_version`) whose latest check passed, unless
    `submitted_version=` is given or `frozen_version=False` (e.g. a draft withdrawn before submitting).
    Keyword arguments `frozen_version__<name>` go to SubmissionVersionFactory."""

    class Meta:
        model = Submission

    class Params:
        draft = factory.Trait(status=Status.DRAFT)
        submitted = factory.Trait(status=Status.SUBMITTED)
        in_review = factory.Trait(status=Status.IN_REVIEW)
        changes_requested = factory.Trait(status=Status.CHANGES_REQUESTED)
        peer_reviewed = factory.Trait(status=Status.PEER_REVIEWED)
        audited = factory.Trait(status=Status.AUDITED)
        published = factory.Trait(status=Status.PUBLISHED)
        withdrawn = factory.Trait(status=Status.WITHDRAWN)
        rejected = factory.Trait(status=Status.REJECTED)

    system = factory.SubFactory(SystemFactory)
    organisation = factory.LazyAttribute(lambda s: s.system.organisation)
    benchmark = factory.SubFactory(BenchmarkFactory)
    title = factory.Sequence(lambda n: f"Submission {n}")
    created_by = factory.LazyAttribute(lambda s: submitter_of(s.organisation))
    status = Status.DRAFT
    status_changed_at = factory.LazyAttribute(lambda s: None if s.status == Status.DRAFT else timezone.now())
    status_reason = factory.LazyAttribute(lambda s: REASONS.get(s.status, ""))

    @factory.post_generation
    def frozen_version(obj, create, extracted, **kwargs):
        if not create or obj.status == Status.DRAFT or obj.submitted_version_id or extracted is False:
            return
        kwargs.setdefault("check_run", RunStatus.PASSED)
        version = SubmissionVersionFactory(submission=obj, **kwargs)
        Submission.objects.filter(pk=obj.pk).update(submitted_version=version)
        obj.submitted_version = version


# --- submissions: uploads -------------------------------------------------------------------------


class UploadFactory(_Factory):
    """A chunked upload of `content`; `verified=True` / `done=True` assemble it (the blob in storage)."""

    class Meta:
        model = Upload

    class Params:
        content = factory.Sequence(lambda n: f"upload #{n}\n".encode() * 64)
        open = factory.Trait(status=Upload.Status.OPEN)
        verified = factory.Trait(
            status=Upload.Status.VERIFIED,
            storage_key=factory.LazyAttribute(lambda u: store_bytes(u.content)),
        )
        done = factory.Trait(
            status=Upload.Status.DONE,
            storage_key=factory.LazyAttribute(lambda u: store_bytes(u.content)),
            version=factory.SubFactory(
                SubmissionVersionFactory,
                submission=factory.SelfAttribute("..submission"),
                files=factory.LazyAttribute(
                    lambda v: [(v.factory_parent.filename, v.factory_parent.content)]
                ),
            ),
        )
        aborted = factory.Trait(status=Upload.Status.ABORTED)

    id = factory.LazyFunction(uuid.uuid4)
    submission = factory.SubFactory(SubmissionFactory)
    created_by = factory.LazyAttribute(lambda u: u.submission.created_by)
    filename = factory.Sequence(lambda n: f"upload-{n}.tar.gz")
    size_bytes = factory.LazyAttribute(lambda u: len(u.content))
    sha256 = factory.LazyAttribute(lambda u: sha256_of(u.content))
    part_size = 256
    parts_expected = factory.LazyAttribute(lambda u: max(1, -(-u.size_bytes // u.part_size)))
    status = Upload.Status.OPEN
    storage_key = ""


class UploadPartFactory(_Factory):
    """One received part (`content` bytes written to storage under the part's own key)."""

    class Meta:
        model = UploadPart

    upload = factory.SubFactory(UploadFactory)
    index = factory.LazyAttribute(lambda p: p.upload.parts.count())
    content = factory.Sequence(lambda n: f"part #{n}\n".encode() * 16)
    size_bytes = factory.LazyAttribute(lambda p: len(p.content))
    sha256 = factory.LazyAttribute(lambda p: sha256_of(p.content))
    storage_key = factory.LazyAttribute(lambda p: f"uploads/{p.upload.id}/{p.index:06d}-{p.sha256}")

    @classmethod
    def _create(cls, model_class, *args, content: bytes, **kwargs):
        stored = default_storage.save(kwargs["storage_key"], ContentFile(content))
        assert stored == kwargs["storage_key"], f"storage saved {stored}, not {kwargs['storage_key']}"
        return super()._create(model_class, *args, **kwargs)

    @classmethod
    def _build(cls, model_class, *args, content: bytes, **kwargs):
        return super()._build(model_class, *args, **kwargs)


# --- submissions: check runs, findings, point metrics ----------------------------------------------


FINISHED = (RunStatus.PASSED, RunStatus.FAILED, RunStatus.ERROR)


class FindingFactory(_Factory):
    class Meta:
        model = Finding

    check_run = factory.SubFactory("tests.factories.CheckRunFactory")
    rule = "raw-log-consistency"
    severity = "error"
    point = factory.LazyAttribute(
        lambda f: (
            f"{f.check_run.version.submission.system.name}/{f.check_run.version.submission.benchmark}/r16"
        )
    )
    file = "AX-8000_c16.tar.gz:c16/result_summary.json"
    line = 3
    pointer = "/tps"
    message = "tps: result_summary.json claims 2512.4, the raw log gives 2093.7."
    fix = "Upload the result_summary.json the client wrote for this events.jsonl, unedited."


class PointMetricFactory(_Factory):
    class Meta:
        model = PointMetric

    check_run = factory.SubFactory("tests.factories.CheckRunFactory")
    system = factory.LazyAttribute(lambda m: m.check_run.version.submission.system.name)
    model = factory.LazyAttribute(lambda m: m.check_run.version.submission.benchmark.model_id)
    concurrency = factory.Sequence(lambda n: 2 ** (n % 12))
    key = factory.LazyAttribute(lambda m: f"{m.system}/{m.model}/r{m.concurrency}")
    source = "run-archive"
    claimed = factory.LazyFunction(
        lambda: {"system_tps": 2512.4, "tps_per_user": 99.7, "ttft_p90_ms": 136.2, "n_samples_completed": 192}
    )
    recomputed = factory.LazyFunction(
        lambda: {"system_tps": 2093.7, "tps_per_user": 99.7, "ttft_p90_ms": 136.2, "n_samples_completed": 192}
    )
    extra = factory.LazyFunction(lambda: {"region": "med_concurrency"})


def _started(run):
    return None if run.status == RunStatus.QUEUED else run.created_at_ - timedelta(seconds=1)


class CheckRunFactory(_Factory):
    """A check run in `status` (or a trait per status) with what that status implies.

    Finished runs have started/finished times, the checker version and rule set; a failed run has one
    error finding and an errored run an error message. `findings=[...]` (rule ids, or FindingFactory
    kwargs) and `point_metrics=[...]` (PointMetricFactory kwargs) replace the defaults; `counts`
    is computed from the findings unless given."""

    class Meta:
        model = CheckRun

    class Params:
        created_at_ = factory.LazyFunction(timezone.now)
        queued = factory.Trait(status=RunStatus.QUEUED)
        running = factory.Trait(status=RunStatus.RUNNING)
        passed = factory.Trait(status=RunStatus.PASSED)
        failed = factory.Trait(status=RunStatus.FAILED)
        error = factory.Trait(status=RunStatus.ERROR)

    version = factory.SubFactory(SubmissionVersionFactory)
    status = RunStatus.QUEUED
    started_at = factory.LazyAttribute(_started)
    heartbeat_at = factory.SelfAttribute("started_at")
    finished_at = factory.LazyAttribute(lambda r: r.created_at_ if r.status in FINISHED else None)
    checker_version = factory.LazyAttribute(lambda r: "" if r.status == RunStatus.QUEUED else "test")
    ruleset = factory.LazyAttribute(
        lambda r: "" if r.status == RunStatus.QUEUED else r.version.submission.benchmark.ruleset_version
    )
    error_message = factory.LazyAttribute(
        lambda r: "RuntimeError: the checker crashed" if r.status == RunStatus.ERROR else ""
    )
    progress_stage = factory.LazyAttribute(lambda r: {RunStatus.RUNNING: "points"}.get(r.status, ""))
    progress_total = factory.LazyAttribute(lambda r: 0 if r.status == RunStatus.QUEUED else 1)
    progress_done = factory.LazyAttribute(lambda r: 1 if r.status in FINISHED else 0)
    counts = factory.LazyFunction(dict)

    @factory.post_generation
    def findings(obj, create, extracted, **kwargs):
        if not create:
            return
        if extracted is None:
            extracted = ["raw-log-consistency"] if obj.status == RunStatus.FAILED else []
        for item in extracted:
            FindingFactory(check_run=obj, **({"rule": item} if isinstance(item, str) else item))
        if obj.status in (RunStatus.PASSED, RunStatus.FAILED) and not obj.counts:
            counts = {"error": 0, "warning": 0, "info": 0}
            for severity in obj.findings.values_list("severity", flat=True):
                counts[severity] = counts.get(severity, 0) + 1
            CheckRun.objects.filter(pk=obj.pk).update(counts=counts)
            obj.counts = counts

    @factory.post_generation
    def point_metrics(obj, create, extracted, **kwargs):
        if not create:
            return
        if extracted is None:
            extracted = [{}] if obj.status in (RunStatus.PASSED, RunStatus.FAILED) else []
        for item in extracted:
            PointMetricFactory(check_run=obj, **item)


class CheckOutboxFactory(_Factory):
    """A queued run's start message still waiting for the broker (it was down when the run was committed)."""

    class Meta:
        model = CheckOutbox

    check_run = factory.SubFactory(CheckRunFactory, queued=True)
    attempt = factory.SelfAttribute("check_run.attempts")
    send_attempts = 1
    last_error = "OperationalError: Error 111 connecting to 127.0.0.1:6379. Connection refused."


class IdempotencyKeyFactory(_Factory):
    """A finished write request's Idempotency-Key with its stored response."""

    class Meta:
        model = IdempotencyKey

    user = factory.SubFactory(UserFactory)
    key = factory.LazyFunction(lambda: str(uuid.uuid4()))
    endpoint = "POST /api/v1/uploads/"
    request_hash = factory.Sequence(lambda n: sha256_of(f"request {n}".encode()))
    response_status = 201
    response_body = factory.LazyFunction(lambda: {"id": str(uuid.uuid4())})


# --- review ---------------------------------------------------------------------------------------


class ReviewAssignmentFactory(_Factory):
    """A reviewer of another organisation assigned to a submitted submission (invited; `accepted=True` for an
    accepted one), due in two weeks."""

    class Meta:
        model = ReviewAssignment

    class Params:
        accepted = factory.Trait(
            status=ReviewAssignment.Status.ACCEPTED, responded_at=factory.LazyFunction(timezone.now)
        )

    submission = factory.SubFactory(SubmissionFactory, submitted=True)
    organisation = factory.SubFactory(OrganisationFactory)
    reviewer = factory.LazyAttribute(
        lambda a: MembershipFactory(organisation=a.organisation, role=Membership.Role.REVIEWER).user
    )
    assigned_by = factory.LazyAttribute(lambda a: GlobalRoleFactory(role=GlobalRole.Role.CHAIR).user)
    due_at = factory.LazyFunction(lambda: timezone.now() + timedelta(days=14))


class ConflictFactory(_Factory):
    """A conflict of interest between two organisations, declared by the chair (pinned) unless told otherwise."""

    class Meta:
        model = Conflict

    organisation = factory.SubFactory(OrganisationFactory)
    other = factory.SubFactory(OrganisationFactory)
    kind = Conflict.Kind.COMPETITOR
    reason = "Direct competitors in the same accelerator market."
    pinned = True
    declared_by = factory.LazyAttribute(lambda c: GlobalRoleFactory(role=GlobalRole.Role.CHAIR).user)


class ReviewFactory(_Factory):
    """An accepted reviewer's decision on the submission's frozen version."""

    class Meta:
        model = Review

    assignment = factory.SubFactory(ReviewAssignmentFactory, accepted=True, submission__in_review=True)
    version = factory.LazyAttribute(lambda r: r.assignment.submission.submitted_version)
    decision = Review.Decision.APPROVE
    body = ""


class CommentFactory(_Factory):
    """A comment in a submission's thread (`objection=True`: an open objection with its answer deadline)."""

    class Meta:
        model = Comment

    class Params:
        objection = factory.Trait(
            kind=Comment.Kind.OBJECTION,
            objection_type=Comment.ObjectionType.METHODOLOGY,
            objection_status=Comment.ObjectionStatus.OPEN,
            answer_due_at=factory.LazyFunction(lambda: timezone.now() + timedelta(days=3)),
        )

    submission = factory.SubFactory(SubmissionFactory, in_review=True)
    version = factory.LazyAttribute(lambda c: c.submission.submitted_version)
    author = factory.LazyAttribute(lambda c: GlobalRoleFactory(role=GlobalRole.Role.AUDITOR).user)
    body = "Please explain the warm-up of the c64 point."


class WaiverFactory(_Factory):
    """A waiver asked for on an error finding of a version."""

    class Meta:
        model = Waiver

    version = factory.LazyAttribute(lambda w: SubmissionFactory(submitted=True).submitted_version)
    rule = "accuracy-sample-count"
    point = "System/model/r1"
    request_reason = "The rule is written for full-length runs."
    requested_by = factory.LazyAttribute(lambda w: w.version.submission.created_by)


class AttestationFactory(_Factory):
    class Meta:
        model = Attestation

    submission = factory.SubFactory(SubmissionFactory, audited=True)
    version = factory.LazyAttribute(lambda a: a.submission.submitted_version)
    auditor = factory.LazyAttribute(lambda a: GlobalRoleFactory(role=GlobalRole.Role.AUDITOR).user)
    notes = "Re-ran the checks on the frozen version; the official verdict agrees."


class EvidenceRequestFactory(_Factory):
    class Meta:
        model = EvidenceRequest

    submission = factory.SubFactory(SubmissionFactory, peer_reviewed=True)
    version = factory.LazyAttribute(lambda e: e.submission.submitted_version)
    auditor = factory.LazyAttribute(lambda e: GlobalRoleFactory(role=GlobalRole.Role.AUDITOR).user)
    question = "Send the power analyser log of the c64 point."
    due_at = factory.LazyFunction(lambda: timezone.now() + timedelta(days=5))


# --- leaderboard ----------------------------------------------------------------------------------


def _freeze(obj, create, *, submission) -> None:
    from checker.judge.verification import curve_with_verification
    from leaderboard.snapshot import snapshot_build

    if not create or obj.status != "published" or obj.snapshot:
        return
    curve = curve_with_verification(obj.curve or {})
    check_run = obj.check_run or (obj.version.check_runs.order_by("-id").first() if obj.version else None)
    snapshot = snapshot_build(submission=submission, version=obj.version, check_run=check_run, curve=curve)
    type(obj).objects.filter(pk=obj.pk).update(curve=curve, snapshot=snapshot)
    obj.curve, obj.snapshot = curve, snapshot


class PublicationFactory(_Factory):
    """The public record of a published submission (`scheduled=True`: an audited one waiting for its date)."""

    class Meta:
        model = Publication

    class Params:
        scheduled = factory.Trait(
            status=Publication.Status.SCHEDULED,
            published_at=None,
            publish_at=factory.LazyFunction(lambda: timezone.now() + timedelta(days=7)),
            submission=factory.SubFactory(SubmissionFactory, audited=True),
        )

    submission = factory.SubFactory(SubmissionFactory, published=True)
    version = factory.LazyAttribute(lambda p: p.submission.submitted_version)
    public_id = factory.Sequence(lambda n: f"EP-T{n:05d}")
    mode = Publication.Mode.NOW
    status = Publication.Status.PUBLISHED
    publish_at = factory.LazyFunction(timezone.now)
    published_at = factory.LazyFunction(timezone.now)
    chosen_by = factory.LazyAttribute(lambda p: p.submission.created_by)

    @factory.post_generation
    def frozen(obj, create, extracted, **kwargs):
        """A published record is frozen as publishing freezes it (leaderboard.snapshot): the curve's points
        labelled with their verification and the snapshot of the system, check and provenance."""
        _freeze(obj, create, submission=obj.submission)


class PublicationRevisionFactory(_Factory):
    """A published revision of a result (`scheduled=True`: an audited extension waiting for its date)."""

    class Meta:
        model = PublicationRevision

    class Params:
        scheduled = factory.Trait(
            status=PublicationRevision.Status.SCHEDULED,
            number=None,
            published_at=None,
            submission=factory.LazyAttribute(
                lambda r: SubmissionFactory(
                    audited=True,
                    organisation=r.publication.submission.organisation,
                    system=r.publication.submission.system,
                    benchmark=r.publication.submission.benchmark,
                    extends=r.publication.submission,
                )
            ),
        )

    publication = factory.SubFactory(PublicationFactory)
    submission = factory.LazyAttribute(lambda r: r.publication.submission)
    number = 1
    version = factory.LazyAttribute(lambda r: r.submission.submitted_version)
    stack = "acme-serve 0.9"
    status = PublicationRevision.Status.PUBLISHED
    publish_at = factory.LazyFunction(timezone.now)
    published_at = factory.LazyFunction(timezone.now)
    chosen_by = factory.LazyAttribute(lambda r: r.submission.created_by)

    @factory.post_generation
    def frozen(obj, create, extracted, **kwargs):
        _freeze(obj, create, submission=obj.submission)


class ChallengeFactory(_Factory):
    class Meta:
        model = Challenge

    publication = factory.SubFactory(PublicationFactory)
    organisation = factory.SubFactory(OrganisationFactory)
    raised_by = factory.LazyAttribute(lambda c: MembershipFactory(organisation=c.organisation).user)
    reason = "The c64 point cannot be reproduced on the disclosed hardware."


class AnnotationFactory(_Factory):
    class Meta:
        model = Annotation

    publication = factory.SubFactory(PublicationFactory)
    text = "The accuracy probe used the previous dataset revision; results remain comparable."
    created_by = factory.LazyAttribute(lambda a: GlobalRoleFactory(role=GlobalRole.Role.CHAIR).user)


class RecheckCampaignFactory(_Factory):
    """A re-check started by the chair on the checker of now (`reported=True`: every run ended)."""

    class Meta:
        model = RecheckCampaign

    class Params:
        reported = factory.Trait(
            status=RecheckCampaign.Status.REPORTED,
            reported_at=factory.LazyFunction(timezone.now),
            summary=factory.LazyFunction(lambda: {"results": 1, "changed": 0}),
        )

    checker_version = "test"
    started_by = factory.LazyAttribute(lambda c: GlobalRoleFactory(role=GlobalRole.Role.CHAIR).user)
    reason = "The TTFT rule was tightened."


class RecheckResultFactory(_Factory):
    """One published revision in a re-check, its new run passed and nothing decided yet."""

    class Meta:
        model = RecheckResult

    campaign = factory.SubFactory(RecheckCampaignFactory)
    revision = factory.SubFactory(PublicationRevisionFactory)
    publication = factory.LazyAttribute(lambda r: r.revision.publication)
    published_run = factory.LazyAttribute(lambda r: r.revision.version.check_runs.order_by("-id").first())
    check_run = factory.LazyAttribute(lambda r: CheckRunFactory(version=r.revision.version, passed=True))
    ruleset = factory.LazyAttribute(lambda r: r.revision.submission.benchmark.ruleset_version)


class LogLeafFactory(_Factory):
    """A leaf appended to the public log through the log's own service, which also signs its checkpoint."""

    class Meta:
        model = LogLeaf

    envelope = factory.Sequence(lambda n: json.dumps({"payloadType": "test", "n": n}).encode())
    public_id = factory.Sequence(lambda n: f"EP-T{n:05d}")

    @classmethod
    def _create(cls, model_class, *args, envelope, public_id, **kwargs):
        from leaderboard.evidence import log_append

        return log_append(envelope, public_id)[0]


class LogCheckpointFactory(_Factory):
    """The signed checkpoint the log wrote when a leaf was appended (the newest size)."""

    class Meta:
        model = LogCheckpoint

    @classmethod
    def _create(cls, model_class, *args, **kwargs):
        leaf = LogLeafFactory()
        return model_class.objects.get(size=leaf.index + 1)


class EvidencePackFactory(_Factory):
    """The signed, logged pack of a published revision, built as publishing builds it."""

    class Meta:
        model = EvidencePack

    revision = factory.SubFactory(PublicationRevisionFactory)

    @classmethod
    def _create(cls, model_class, *args, revision, **kwargs):
        from leaderboard.evidence import evidence_pack_build_revision

        return evidence_pack_build_revision(revision=revision)


# --- previews and declared endpoints --------------------------------------------------------------


class PreviewFactory(_Factory):
    """A preview of an organisation's system, still being checked (no files read yet)."""

    class Meta:
        model = Preview

    system = factory.SubFactory(SystemFactory)
    organisation = factory.LazyAttribute(lambda p: p.system.organisation)
    benchmark = factory.SubFactory(BenchmarkFactory, sample=True)
    name = factory.Sequence(lambda n: f"vLLM bench sweep {n}")
    created_by = factory.LazyAttribute(lambda p: MembershipFactory(organisation=p.organisation).user)


class EndpointFactory(_Factory):
    """The endpoint a submission declares, without a credential (`credential=` stores one encrypted)."""

    class Meta:
        model = Endpoint
        exclude = ("credential",)

    credential = ""
    submission = factory.SubFactory(SubmissionFactory)
    url = "http://127.0.0.1:8000"
    model_name = "meta-llama/Llama-3.1-8B-Instruct"
    declared_by = factory.LazyAttribute(lambda e: e.submission.created_by)
    credential_encrypted = factory.LazyAttribute(
        lambda e: credential_encrypt(e.credential) if e.credential else ""
    )


class SpotCheckFactory(_Factory):
    """A spot-check of a published result's point at concurrency 2, queued (nothing measured yet)."""

    class Meta:
        model = SpotCheck

    publication = factory.SubFactory(PublicationFactory)
    submission = factory.LazyAttribute(lambda s: s.publication.submission)
    check_run = factory.LazyAttribute(lambda s: s.publication.check_run if s.publication else None)
    source = SpotCheck.Source.PUBLICATION
    point = "Test system/llama3_1-8b/r2"
    concurrency = 2
    duration_s = 30
    claimed = factory.LazyFunction(
        lambda: {"system_tps": 180.0, "tps_per_user": 130.0, "ttft_p90_ms": 90.0, "goodput": 8.0}
    )
    endpoint_url = "http://127.0.0.1:8000"
    model_name = "mock-llama"
    started_by = factory.LazyAttribute(lambda s: GlobalRoleFactory(role=GlobalRole.Role.AUDITOR).user)


# --- accounts: notifications ----------------------------------------------------------------------


class NotificationPreferenceFactory(_Factory):
    class Meta:
        model = NotificationPreference

    user = factory.SubFactory(UserFactory)
    delivery = NotificationPreference.Delivery.DIGEST


class NotificationFactory(_Factory):
    class Meta:
        model = Notification

    user = factory.SubFactory(UserFactory)
    kind = "review.assigned"
    subject = "Please review submission #1 (llama3_1-8b)"
    url = "/review/"


# --- audit ----------------------------------------------------------------------------------------


class AuditEventFactory(factory.Factory):
    """An event appended to the chain through audit.services.audit_event_record (never a bare INSERT)."""

    class Meta:
        model = AuditEvent

    actor = None
    action = "test.recorded"
    obj = None
    data = factory.LazyFunction(dict)
    true_actor = None
    request_id = None

    @classmethod
    def _create(cls, model_class, *args, **kwargs):
        from audit.services import audit_event_record

        with transaction.atomic():
            return audit_event_record(**kwargs)

    @classmethod
    def _build(cls, model_class, *args, **kwargs):
        raise TypeError("AuditEventFactory only creates: events exist once recorded in the chain.")


def submission_take(submission, action: str, actor, *, reason: str = ""):
    """Take a row of the submission's table as `actor` (the policy's one door) and return the submission as it
    stands after."""
    from review.lifecycle import SUBMISSION

    SUBMISSION.take(actor, submission, action, reason=reason)
    submission.refresh_from_db()
    return submission
