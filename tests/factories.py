"""factory_boy factories for the portal's models (test setup only: they bypass services and the audit log)."""

import factory
from django.contrib.auth import get_user_model

from accounts.models import GlobalRole, Membership, Organisation
from catalog.models import Benchmark
from submissions.models import System

PASSWORD = "correct-horse-battery"


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        django_get_or_create = ("username",)

    username = factory.Sequence(lambda n: f"user{n}")
    email = factory.LazyAttribute(lambda u: f"{u.username}@example.com")
    password = factory.django.Password(PASSWORD)


class OrganisationFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Organisation
        django_get_or_create = ("slug",)

    name = factory.Sequence(lambda n: f"Org {n}")
    slug = factory.Sequence(lambda n: f"org-{n}")
    kind = Organisation.Kind.HARDWARE_VENDOR


class MembershipFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Membership

    user = factory.SubFactory(UserFactory)
    organisation = factory.SubFactory(OrganisationFactory)
    role = Membership.Role.SUBMITTER


class GlobalRoleFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = GlobalRole

    user = factory.SubFactory(UserFactory)
    role = GlobalRole.Role.AUDITOR


class BenchmarkFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Benchmark

    model_id = factory.Sequence(lambda n: f"test-model-{n}")
    display_name = factory.LazyAttribute(lambda b: b.model_id)
    dataset = "test prompts"
    workload = Benchmark.Workload.CHAT
    tokenizer_path = "sample-bpe-4k/tokenizer.json"


class SystemFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = System

    organisation = factory.SubFactory(OrganisationFactory)
    name = factory.Sequence(lambda n: f"System_{n}")
    description = factory.LazyFunction(lambda: {"system_name": "Test system"})
