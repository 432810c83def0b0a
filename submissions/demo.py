"""Demo data for `manage.py seed_demo`: idempotent, built through the same services the portal uses.

Later work extends seed_demo_submissions() (uploads of the sample bundle, reviews, publication).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model

from accounts.models import GlobalRole, Membership, Organisation
from accounts.services.organisations import (
    global_role_grant,
    membership_grant,
    organisation_create,
    user_create,
)
from catalog.models import Benchmark
from catalog.services import benchmark_ruleset_set
from submissions.demo_submissions import (
    DEMO_MODEL_ID,
    second_system_files,
    seed_demo_sample_submissions,
    system_description_of,
)
from submissions.models import System
from submissions.services import system_register

FIXTURE_BUNDLE = (
    Path(settings.BASE_DIR)
    / "tests"
    / "checker"
    / "fixtures"
    / "bundle"
    / "AcmeCompute"
    / "acme-2026-12-C0-endpoints-001"
)

DEMO_ORGANISATIONS = [
    ("AcmeCompute", "acmecompute", Organisation.Kind.HARDWARE_VENDOR),
    ("NimbusCloud", "nimbuscloud", Organisation.Kind.HYPERSCALER),
    ("Quill University", "quill-university", Organisation.Kind.ACADEMIC),
    # Two more reviewing organisations, so the chair's assignment has a choice (review.demo).
    ("Orbital Labs", "orbital-labs", Organisation.Kind.NEOCLOUD),
    ("Tessera AI", "tessera-ai", Organisation.Kind.MANAGED_API),
    # The maker of the embargoed Unreleased-Z9 (review.demo): nobody outside the review may learn its name.
    ("Zephyr Silicon", "zephyr-silicon", Organisation.Kind.HARDWARE_VENDOR),
]


@dataclass(frozen=True)
class DemoUser:
    username: str
    password: str
    description: str
    organisation_slug: str | None = None
    role: str | None = None
    global_role: str | None = None
    superuser: bool = False


# Fixed, printed passwords: this is a local demo database, never a deployment.
DEMO_USERS = [
    DemoUser(
        "demo-submitter",
        "demo-submitter-pass",
        "submitter at AcmeCompute",
        "acmecompute",
        Membership.Role.SUBMITTER,
    ),
    DemoUser(
        "demo-reviewer",
        "demo-reviewer-pass",
        "reviewer at NimbusCloud",
        "nimbuscloud",
        Membership.Role.REVIEWER,
    ),
    DemoUser(
        "demo-reviewer2",
        "demo-reviewer2-pass",
        "reviewer at Orbital Labs",
        "orbital-labs",
        Membership.Role.REVIEWER,
    ),
    DemoUser(
        "demo-reviewer3",
        "demo-reviewer3-pass",
        "reviewer at Tessera AI (in conflict with Zephyr Silicon)",
        "tessera-ai",
        Membership.Role.REVIEWER,
    ),
    DemoUser(
        "demo-nimbus",
        "demo-nimbus-pass",
        "submitter at NimbusCloud (Nimbus NB-2)",
        "nimbuscloud",
        Membership.Role.SUBMITTER,
    ),
    DemoUser(
        "demo-zephyr",
        "demo-zephyr-pass",
        "submitter at Zephyr Silicon (Unreleased-Z9)",
        "zephyr-silicon",
        Membership.Role.SUBMITTER,
    ),
    DemoUser("demo-auditor", "demo-auditor-pass", "auditor", global_role=GlobalRole.Role.AUDITOR),
    DemoUser(
        "demo-chair",
        "demo-chair-pass",
        "chair, Django admin",
        global_role=GlobalRole.Role.CHAIR,
        superuser=True,
    ),
]

# organisation, system, who registers it
DEMO_SYSTEMS = [
    ("acmecompute", "Acme_AX-8000", "demo-submitter"),
    ("acmecompute", "Acme_AX-4000", "demo-submitter"),
    ("nimbuscloud", "Nimbus_NB-2", "demo-nimbus"),
]


@dataclass
class DemoSeed:
    """What seed_demo made or found, handed to later seeding steps."""

    organisations: dict[str, Organisation] = field(default_factory=dict)
    users: dict[str, object] = field(default_factory=dict)
    systems: dict[str, System] = field(default_factory=dict)


def system_description_from_fixture(system_name: str) -> dict:
    """The system_desc.json of the system's first load point in the sample bundle."""
    candidates = sorted((FIXTURE_BUNDLE / "results" / system_name).glob("*/r*/system_desc.json"))
    if not candidates:
        raise FileNotFoundError(f"No system_desc.json for {system_name} under {FIXTURE_BUNDLE}")
    return json.loads(candidates[0].read_text(encoding="utf-8"))


# The sample runs last ~20 s, not the official 600 s: the demo benchmark is checked under the preview rule set, which
# every page and API answer names as such (docs/rules.md, "Rule sets"), so no demo result reads as official.
DEMO_RULESET = "endpoints-v1.0-preview"


def seed_demo_benchmark(seed: DemoSeed) -> None:
    """The chair puts the demo benchmark under the preview rule set (audited), before any demo upload is checked."""

    benchmark = Benchmark.objects.get(model_id=DEMO_MODEL_ID)
    if benchmark.ruleset_version != DEMO_RULESET:
        benchmark_ruleset_set(
            benchmark=benchmark, ruleset_version=DEMO_RULESET, actor=seed.users["demo-chair"]
        )


def seed_demo_organisations(seed: DemoSeed) -> None:
    for name, slug, kind in DEMO_ORGANISATIONS:
        organisation = Organisation.objects.filter(slug=slug).first()
        seed.organisations[slug] = organisation or organisation_create(name=name, slug=slug, kind=kind)


def seed_demo_users(seed: DemoSeed) -> None:
    User = get_user_model()
    for spec in DEMO_USERS:
        user = User.objects.filter(username=spec.username).first()
        if user is None:
            user = user_create(
                username=spec.username,
                email=f"{spec.username}@example.com",
                password=spec.password,
                is_superuser=spec.superuser,
            )
        if spec.organisation_slug:
            membership_grant(
                user=user, organisation=seed.organisations[spec.organisation_slug], role=spec.role
            )
        if spec.global_role:
            global_role_grant(user=user, role=spec.global_role)
        seed.users[spec.username] = user


def system_description_of_system(name: str) -> dict:
    """The system_desc.json of a demo system: from the sample bundle, or (NB-2) from its first run archive."""
    if name == "Nimbus_NB-2":
        return system_description_of(second_system_files())
    return system_description_from_fixture(name)


def seed_demo_systems(seed: DemoSeed) -> None:
    for slug, name, username in DEMO_SYSTEMS:
        organisation = seed.organisations[slug]
        system = System.objects.filter(organisation=organisation, name=name).first()
        seed.systems[name] = system or system_register(
            organisation=organisation,
            name=name,
            description=system_description_of_system(name),
            actor=seed.users[username],
        )


def seed_demo_submissions(seed: DemoSeed) -> None:
    """Demo submissions: one checked draft per sample system (submissions.demo_submissions); later work
    adds reviews and publication."""

    seed_demo_sample_submissions(seed)


def seed_demo() -> DemoSeed:
    """Organisations, users, systems and the sample drafts; review.demo.seed_demo_review takes them on through
    review and audit (the seed_demo command runs both)."""
    seed = DemoSeed()
    seed_demo_organisations(seed)
    seed_demo_users(seed)
    seed_demo_benchmark(seed)
    seed_demo_systems(seed)
    seed_demo_submissions(seed)
    return seed
