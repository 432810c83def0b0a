"""What every input kind provides: the one per-request record, an imported load point, the kind's interface."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from checker.read.inputs.limits import Limits
from checker.report import Findings


@dataclass(frozen=True, slots=True)
class RequestRecord:
    """One request as any input kind recorded it, in seconds on the tool's own clock.

    `first_token_s` is None when no token arrived; `end_s` None when the request never finished (cancelled or
    cut by the end of the run); `output_tokens` None when the tool did not count them. `ok` is False for a
    request the tool counts as failed. `turn` is the turn of a multi-turn conversation (None: single turn).
    """

    issued_s: float
    first_token_s: float | None
    end_s: float | None
    output_tokens: int | None
    ok: bool
    turn: int | None = None


# What a record's numbers may be: clock readings within +-4e9 s (any two a difference of under 2^63 ns, what
# the portal's per-sample arrays hold), token counts up to a billion.
MAX_CLOCK_S = 4e9
MAX_OUTPUT_TOKENS = 10**9


def record_problem(record: RequestRecord) -> str | None:
    """The first field of a record that is not a number of its kind in range (None: every field is)."""
    for name in ("issued_s", "first_token_s", "end_s"):
        value = getattr(record, name)
        if value is None and name != "issued_s":
            continue
        if isinstance(value, bool) or not isinstance(value, int | float) or not abs(value) <= MAX_CLOCK_S:
            return f"{name} = {brief_value(value)}"
    tokens = record.output_tokens
    if tokens is not None and (
        isinstance(tokens, bool) or not isinstance(tokens, int) or not 0 <= tokens <= MAX_OUTPUT_TOKENS
    ):
        return f"output_tokens = {brief_value(tokens)}"
    return None


def brief_value(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:20]}... ({len(text)} characters)"


@dataclass
class ImportedPoint:
    """One load point of another tool's output: its own figures, the same recomputed, and its requests."""

    concurrency: int | None
    label: str  # how the tool names the point ("concurrent@4", "stage 0", "profile_export.jsonl")
    file: str  # display name of the file the point came from
    reported: dict[str, float | int] = field(default_factory=dict)
    recomputed: dict[str, float | int] = field(default_factory=dict)
    requests: list[RequestRecord] = field(default_factory=list)
    duration_s: float | None = None  # the tool's own measurement window (what its throughputs divide by)
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class ImportedRun:
    """Everything one tool's output files hold, point by point."""

    tool: str
    tool_version: str | None
    points: list[ImportedPoint] = field(default_factory=list)


class InputKind(Protocol):
    """One kind of input the portal reads. Each module of checker/read/kinds/ defines one, named KIND."""

    name: str  # the one spelling of the kind everywhere: "bundle", "run_archives", "guidellm", ...
    label: str  # for people: "Submission bundle", "GuideLLM benchmarks.json"
    importer: bool  # True: another tool's output, read by `portal import`; False: an MLPerf Endpoints input

    def detect_folder(self, folder: Path) -> bool:
        """True when `folder` (already on disk, in a sandbox or the user's own) is one input of this kind."""
        ...

    def claims(self, path: Path) -> bool:
        """True when the single file `path` is this kind's (by its name and its first bytes, never fully read)."""
        ...


class Importer(InputKind, Protocol):
    """An input kind made by another benchmark tool: it reads its files into load points."""

    # How the tool itself computes a percentile and a TTFT, in a sentence a reader of its figures understands: the
    # preview page says it beside the portal's own (MLPerf's) definition, so a small difference is explained.
    percentile_definition: str

    def read(self, paths: list[Path], *, findings: Findings, limits: Limits) -> ImportedRun | None:
        """The run the files hold, or None (with findings) when nothing usable is in them."""
        ...

    def requests(self, paths: list[Path], *, findings: Findings, limits: Limits) -> Iterator[RequestRecord]:
        """Every request of the files, in the one record type (the per-request reader)."""
        ...
