"""Suite-wide fixtures: service defaults, users per role, a Redis gate that fails under CI, a private
storage folder, and the sample catalog with a draft the sample run archives fit."""

from __future__ import annotations

import os

import pytest

# The same defaults as tests/settings.py, for subprocesses the tests start (manage.py, workers).
os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/test")
os.environ.setdefault("REDIS_URL", "redis://127.0.0.1:6379/0")

IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


def pytest_configure(config):
    """`client.force_login(chair_or_auditor)` signs in with the second factor too (tests/accounts/support.py):
    the chair and auditors act only from a verified session, and most tests are about something else."""
    from tests.accounts.support import install_verified_force_login

    install_verified_force_login()


@pytest.fixture(autouse=True)
def _fresh_login_throttle():
    """Failed sign-ins counted by one test never lock another test's accounts or 127.0.0.1."""
    from django.conf import settings
    from django.core.cache import caches

    caches[settings.PORTAL_LOGIN_THROTTLE_CACHE].clear()


def _redis_reachable(url: str) -> str | None:
    """None when Redis answers PING, else why not."""
    import redis

    try:
        client = redis.Redis.from_url(url, socket_connect_timeout=2, socket_timeout=2)
        client.ping()
        client.close()
    except Exception as exc:  # noqa: BLE001
        return f"{type(exc).__name__}: {exc}"
    return None


@pytest.fixture(scope="session")
def redis_url() -> str:
    """The Redis the tests use. Missing Redis skips locally but FAILS under CI=true."""
    url = os.environ["REDIS_URL"]
    problem = _redis_reachable(url)
    if problem:
        message = f"Redis at {url} is not reachable ({problem})"
        if IN_CI:
            pytest.fail(f"{message}; CI must run with Redis (.ci/run starts it).")
        pytest.skip(f"{message}; start redis-server or set REDIS_URL.")
    return url


@pytest.fixture(autouse=True)
def _fresh_public_cache():
    """Each test's database starts over, its public pages and answers too: a new generation of the public
    cache (leaderboard.board.cache, keyed by the database name, which every test shares) so that no test reads pages
    another test cached."""
    from leaderboard.board.cache import public_cache_bump

    public_cache_bump()


@pytest.fixture
def role_users(db):
    """One user per role of the visibility table, in two organisations (None = anonymous)."""
    from tests.factories import GlobalRoleFactory, MembershipFactory, OrganisationFactory, UserFactory

    acme = OrganisationFactory(name="AcmeCompute", slug="acmecompute", kind="hardware_vendor")
    nimbus = OrganisationFactory(name="NimbusCloud", slug="nimbuscloud", kind="hyperscaler")
    submitter = UserFactory(username="submitter")
    MembershipFactory(user=submitter, organisation=acme, role="submitter")
    reviewer = UserFactory(username="reviewer")
    MembershipFactory(user=reviewer, organisation=nimbus, role="reviewer")
    auditor = UserFactory(username="auditor")
    GlobalRoleFactory(user=auditor, role="auditor")
    chair = UserFactory(username="chair", is_staff=True, is_superuser=True)
    GlobalRoleFactory(user=chair, role="chair")
    return {
        "anonymous": None,
        "submitter": submitter,
        "reviewer": reviewer,
        "auditor": auditor,
        "chair": chair,
        "organisations": {"acme": acme, "nimbus": nimbus},
    }


@pytest.fixture(autouse=True)
def _celery_join_flag_reset():
    """Celery's "may this thread wait for a result" flag is one global for the whole process: an eager task sets it
    while it runs and puts back what it found. The live server's thread (browser tests) runs eager tasks beside the
    test's own, and two such tasks interleaved can leave it set, so a later test's `.delay().get()` fails with
    "Never call result.get() within a task!". Each test starts from the flag as it is outside any task."""
    from celery._state import _set_task_join_will_block

    _set_task_join_will_block(False)
    yield


@pytest.fixture
def storage_dir(tmp_path, settings):
    """The default storage is a fresh folder under tmp_path (returned); check runs stay in-process."""
    media = tmp_path / "media"
    settings.STORAGES = {
        **settings.STORAGES,
        "default": {
            "BACKEND": "django.core.files.storage.FileSystemStorage",
            "OPTIONS": {"location": str(media)},
        },
    }
    settings.CELERY_TASK_ALWAYS_EAGER = True
    return media


@pytest.fixture
def sample_catalog(role_users):
    """(benchmark, system) the sample run archives were made for, the system registered by acme."""
    from tests.submissions.support import make_catalog

    return make_catalog(role_users["organisations"]["acme"])


@pytest.fixture
def draft(role_users, sample_catalog):
    """acme's draft for the sample system and benchmark, created by its submitter through the service."""
    from submissions.services import submission_create

    benchmark, system = sample_catalog
    return submission_create(actor=role_users["submitter"], system=system, benchmark=benchmark)


@pytest.fixture(scope="session")
def sample_events(tmp_path_factory) -> dict:
    """{(system, concurrency): path of its events.jsonl} for every sample run tests publish as AX-8000 and NB-2
    (tests/leaderboard/goodput_support.RUNS), unpacked once per test process: what a test computes expected figures
    from, independently of the portal."""
    import tarfile

    from tests.leaderboard.goodput_support import RUNS

    root = tmp_path_factory.mktemp("sample-events")
    events = {}
    for system, archives in RUNS.items():
        for archive in archives:
            concurrency = int(archive.name.split("_c")[1].split(".")[0])
            with tarfile.open(archive) as tar:
                tar.extractall(root / archive.name, filter="data")
            events[(system, concurrency)] = root / archive.name / f"c{concurrency}" / "events.jsonl"
    return events


def pytest_sessionfinish(session, exitstatus):
    """Under CI=true a skipped test is a failure: every service, browser and optional extra the suite needs is
    installed there, so a skip means something is missing, never that it may be left out."""
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    skipped = len(reporter.stats.get("skipped", [])) if reporter is not None else 0
    if IN_CI and skipped and exitstatus == 0:
        if reporter is not None:
            reporter.write_line(
                f"CI=true: {skipped} test(s) skipped; failing the run (see -ra above).", red=True
            )
        session.exitstatus = 1


# What a test needs besides PostgreSQL and Redis, by the fixtures it uses (transitively) or the folder it lives in.
# `make test-fast` leaves these out; `make test` and CI run everything (pyproject.toml lists the markers).
_NEEDS = {
    "browser": {"chromium"},
    "worker": {"live_pipeline", "live_portal", "live_beat", "private_redis"},
    "s3": {"seaweedfs"},
    "server": {"served"},
}
_NEEDS_BY_FOLDER = {"browser": "browser"}
# Modules that start a process of their own (a mock endpoint, the `portal` CLI against a live server, GuideLLM).
_NEEDS_BY_MODULE = {
    "tests/spotchecks/test_services.py": "server",
    "tests/spotchecks/test_spotcheck_worker.py": "worker",
    "tests/submissions/test_cli_submitter.py": "server",
    "tests/checker/test_remeasure.py": "server",
}

# Sweeps: a test that seeds the whole demo (every role's journey through the real services and checks) or walks every
# route, field or descriptor with hostile values: 9-65 s each on this machine (`--durations` of a 2-process run),
# together about 40 % of the suite's time without browsers and servers. `make test-fast` leaves them out; `make test`
# and CI run them. A test is one when its module is listed with no names, or its name is listed.
_SLOW = {
    "tests/submissions/test_seed_demo.py": (),
    # The permission matrix's every role x route x state over the seeded demo (1,552 cells, ~200 s of one process):
    # the declaration tests stay in the fast loop, the cells run in `make test` and CI.
    "tests/test_permission_matrix.py": (
        "test_non_object_routes_per_role",
        "test_object_routes_per_role_and_state",
        "test_seeding_emails_never_carry_z9",
        "test_publication_choice_is_the_own_submitters_on_an_audited_submission",
        "test_an_extension_shows_on_its_public_result_only_once_published",
    ),
    "tests/leaderboard/test_evidence_demo.py": (),
    "tests/leaderboard/test_verification_level.py": (
        "test_the_demo_shows_one_level_per_result_on_every_surface",
    ),
    "tests/leaderboard/test_point_provenance.py": (
        "test_every_point_of_a_revision_cites_the_archive_holding_its_own_raw_log",
        "test_one_vocabulary_for_checks_and_every_answer_says_what_it_is",
    ),
    "tests/portal/test_edge_suite.py": ("test_every_route_survives_hostile_values_in_every_query_parameter",),
    "tests/portal/test_hardening_edge.py": (
        "test_every_page_survives_unicode_digits_and_huge_numbers_in_its_query_and_form",
    ),
    "tests/checker/test_hostile_descriptors.py": ("test_hostile_values_never_raise",),
    "tests/checker/test_hostile_imports.py": (
        "test_previews_of_hostile_outputs_all_finish",
        "test_portal_import_answers_every_hostile_output_with_findings_not_a_traceback",
    ),
    "tests/checker/test_broken_bundles.py": ("test_cli_and_in_process_official_verdicts_are_equal",),
    "tests/portal/test_api_fuzz.py": ("test_random_json_at_every_write_endpoint_never_answers_5xx",),
    "tests/submissions/test_s3_and_cli.py": (
        "test_cli_usage_errors_exit_2",
    ),  # every usage error, a process each
}


def _is_slow(relative: str, name: str) -> bool:
    names = _SLOW.get(relative)
    return names is not None and (not names or name in names)


def pytest_collection_modifyitems(config, items):
    """Marks every test with what it starts (browser, worker, s3, server) and the sweeps (slow), so the fast loop can
    leave those out."""
    root = config.rootpath
    for item in items:
        relative = item.path.relative_to(root).as_posix() if item.path.is_relative_to(root) else ""
        needs = {marker for marker, fixtures in _NEEDS.items() if fixtures & set(item.fixturenames)}
        parts = relative.split("/")
        if len(parts) > 1 and parts[1] in _NEEDS_BY_FOLDER:
            needs.add(_NEEDS_BY_FOLDER[parts[1]])
        if relative in _NEEDS_BY_MODULE:
            needs.add(_NEEDS_BY_MODULE[relative])
        if _is_slow(relative, getattr(item, "originalname", item.name)):
            needs.add("slow")
        for marker in sorted(needs):
            item.add_marker(marker)
