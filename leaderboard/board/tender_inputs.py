"""The buyer's inputs of the tender desk, read in one place (docs/tender-desk.md): the prices and PUE every buyer view
takes, and a tender's whole definition (its model, both phases' requirements, prices and PUE, and the criteria with
their weights and directions). The scoring page, the score-sheet API, the sizing page and API and a saved tender
(leaderboard.board.saved_tenders.tender_save) all read their inputs through these functions, so a bad value gets the same
sentence, naming the same parameter, wherever it is typed. Plain functions, no Django."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from leaderboard.board.procurement import (
    COSTING_FIELDS,
    PHASE_FIELDS,
    PHASES,
    Costing,
    ModelRequirement,
    RequirementsError,
    costing_from_query,
    parameter_name,
    requirements_from_query,
)
from leaderboard.board.scoring import MAX_CRITERIA, Criterion, criteria_problems

NAME_MAX = 120

# Every parameter a tender's definition takes, in the order its canonical query lists them.
TENDER_PARAMETERS = (
    "model_1",
    *(parameter_name(phase, name, 1) for phase in PHASES for name, _ in PHASE_FIELDS),
    *(name for name, _ in COSTING_FIELDS),
    *(f"{part}_{i}" for i in range(1, MAX_CRITERIA + 1) for part in ("criterion", "weight", "direction")),
)


@dataclass(frozen=True)
class TenderDefinition:
    """A tender as the evaluator defines it once: the model and its phases' requirements, the prices and PUE of the
    cost criterion, the criteria; `parameters` is its canonical query (what a saved tender stores and its page's
    "edit" link carries)."""

    requirement: ModelRequirement
    costing: Costing
    criteria: tuple[Criterion, ...]
    parameters: dict[str, str]

    @property
    def model(self) -> str:
        return self.requirement.model


def tender_parameters(query: Mapping) -> dict[str, str]:
    """The tender's own parameters of a query string (anything else dropped), stripped, empty ones left out."""
    out = {}
    for name in TENDER_PARAMETERS:
        raw = query.get(name)
        value = ("" if raw is None else str(raw)).strip()[:64]
        if value:
            out[name] = value
    return out


def costing_of(query: Mapping) -> Costing:
    """The buyer's prices per accelerator-hour and per kWh and the PUE (leaderboard.board.procurement.costing_from_query):
    the one reading of them for every buyer view. Raises RequirementsError naming each bad one."""
    return costing_from_query(query)


def tender_from_query(query: Mapping) -> TenderDefinition:
    """A tender's definition from a query string (or a saved tender's stored parameters). Raises RequirementsError
    listing every bad field at once (the requirements', the prices', the criteria's), each with its parameter, the
    form's label and a sentence the evaluator can act on."""
    parameters = tender_parameters(query)
    problems: list[tuple[str, str, str]] = []
    requirement = costing = None
    try:
        requirement = requirements_from_query(parameters)[0]
    except RequirementsError as error:
        problems.extend(error.problems)
    try:
        costing = costing_of(parameters)
    except RequirementsError as error:
        problems.extend(error.problems)
    criteria, criteria_errors = criteria_problems(parameters)
    problems.extend(criteria_errors)
    if problems:
        raise RequirementsError(problems)
    return TenderDefinition(
        requirement=requirement, costing=costing, criteria=tuple(criteria), parameters=parameters
    )


def tender_name(raw: str | None) -> str:
    """A saved tender's name, stripped; raises RequirementsError when it is empty."""
    name = " ".join((raw or "").split())[:NAME_MAX]
    if not name:
        raise RequirementsError([("name", "Name", "give the tender a name (e.g. the call's reference).")])
    return name
