"""Apps point one way, string model references included: import-linter sees imports, this test sees the
relations Django resolves from strings ("submissions.Submission") that no import statement shows."""

import tomllib
from pathlib import Path

import pytest
from django.apps import apps
from django.conf import settings
from django.db import models
from django.test.utils import isolate_apps

from access.visibility import VISIBLE_TO

BASE_DIR = Path(settings.BASE_DIR)


def _layers() -> list[str]:
    """The apps of the import-linter layers contract, highest first (the one order both checks use)."""
    contracts = tomllib.loads((BASE_DIR / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    (layers,) = [contract["layers"] for contract in contracts if contract["id"] == "layers"]
    return layers


LAYERS = _layers()
# Higher number = higher layer. Apps outside the list (Django's auth, contenttypes, knox) sit below.
RANK = {app: len(LAYERS) - index for index, app in enumerate(LAYERS)}
PROJECT_MODELS = [model for model in apps.get_models() if model._meta.app_label in RANK]


def upward_relations(model) -> list[str]:
    """The relations declared on `model` (FK, one-to-one, M2M) whose target sits in a higher layer."""
    upward = []
    for field in model._meta.get_fields():
        if not field.is_relation or field.auto_created:  # reverse relations are declared by the other side
            continue
        target = field.remote_field.model
        if isinstance(target, str):
            upward.append(f"{field.name} -> {target} (unresolved)")
        elif RANK.get(target._meta.app_label, 0) > RANK[model._meta.app_label]:
            upward.append(f"{field.name} -> {target._meta.label}")
    return upward


def test_every_project_app_is_a_layer():
    project_apps = {config.label for config in apps.get_app_configs() if Path(config.path).parent == BASE_DIR}
    assert project_apps <= set(LAYERS), "add the new app to the layers contract in pyproject.toml"


@pytest.mark.parametrize("model", PROJECT_MODELS, ids=lambda model: model._meta.label)
def test_model_relations_point_to_the_same_or_a_lower_layer(model):
    assert not upward_relations(model), (
        f"{model._meta.label} points up the layers ({' > '.join(LAYERS)}): {upward_relations(model)}. "
        "Declare the relation on the model of the higher layer instead."
    )


@isolate_apps("catalog", "submissions")
def test_a_string_reference_up_the_layers_is_caught():
    class Target(models.Model):
        class Meta:
            app_label = "submissions"

    class Source(models.Model):
        target = models.ForeignKey("submissions.Target", on_delete=models.CASCADE)
        many = models.ManyToManyField("submissions.Target", related_name="+")

        class Meta:
            app_label = "catalog"

    assert upward_relations(Source) == ["target -> submissions.Target", "many -> submissions.Target"]
    assert upward_relations(Target) == []


@pytest.mark.parametrize("model", PROJECT_MODELS, ids=lambda model: model._meta.label)
def test_every_model_has_a_visibility_rule(model):
    assert model in VISIBLE_TO, f"add {model._meta.label} to access.visibility.VISIBLE_TO"


HTTP_LAYER = {
    "views",
    "api",
    "urls",
    "admin",
    "forms",
    "management",
    "migrations",
    "templatetags",
    "apps",
    "middleware",
}


def _matches(pattern: str, module: str) -> bool:
    """import-linter's wildcards: `*` is one segment of the name, `**` one or more."""

    def match(parts: list[str], names: list[str]) -> bool:
        if not parts:
            return not names
        if parts[0] == "**":
            return any(match(parts[1:], names[take:]) for take in range(1, len(names) + 1))
        return bool(names) and parts[0] in ("*", names[0]) and match(parts[1:], names[1:])

    return match(pattern.split("."), module.split("."))


def test_every_domain_module_is_kept_off_the_http_layer_by_the_contract():
    """A new domain module (a service, a selector, a storage helper under any name) is guarded by the
    'http-on-top' contract from the start: its source patterns must match it."""
    contracts = tomllib.loads((BASE_DIR / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    (patterns,) = [contract["source_modules"] for contract in contracts if contract["id"] == "http-on-top"]
    unguarded = []
    for app in LAYERS:
        if app in (
            "access",
            "checker",
        ):  # access is the layer the HTTP code asks; checker has its own contract
            continue
        for path in sorted((BASE_DIR / app).rglob("*.py")):
            parts = path.relative_to(BASE_DIR).with_suffix("").parts
            http = {
                part.split("_")[0] for part in parts[1:]
            } & HTTP_LAYER  # views/, urls_results, api_throttles
            if parts[-1] == "__init__" and len(parts) <= 2 or http:
                continue
            module = ".".join(p for p in parts if p != "__init__")
            if not any(_matches(pattern, module) for pattern in patterns):
                unguarded.append(module)
    assert not unguarded, (
        f"add these domain modules to the http-on-top contract in pyproject.toml: {unguarded}"
    )


def test_the_contract_wildcards_read_as_import_linter_reads_them():
    assert _matches("*.services.**", "review.services.thread")
    assert not _matches("*.services.**", "review.services")
    assert _matches("*.models", "leaderboard.models") and not _matches("*.models", "leaderboard.models.x")
