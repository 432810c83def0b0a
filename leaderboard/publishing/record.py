"""A published result's frozen record, read by attribute (`publication.record.system_name`): plain Python over the
snapshot JSON that publishing wrote (leaderboard.publishing.snapshot), so templates, exports and the API read one thing."""

from __future__ import annotations

from functools import cached_property
from typing import Any

from checker.judge.verification import Verification
from submissions.system_desc import system_desc_facts


class PublishedRecord:
    """Attribute access to a frozen snapshot for templates and exports (`publication.record.system_name`)."""

    def __init__(self, snapshot: dict[str, Any] | None) -> None:
        self.data = snapshot if isinstance(snapshot, dict) else {}

    def _part(self, name: str) -> dict[str, Any]:
        part = self.data.get(name)
        return part if isinstance(part, dict) else {}

    @property
    def system_id(self) -> int | None:
        return self._part("system").get("id")

    @property
    def system_name(self) -> str:
        return self._part("system").get("name") or ""

    @property
    def description(self) -> dict[str, Any]:
        description = self._part("system").get("description")
        return description if isinstance(description, dict) else {}

    @cached_property
    def facts(self) -> dict[str, Any]:
        """The system as the revision's own points were measured on it (their system_desc.json; the registered
        description for a record without per-point evidence)."""
        return system_desc_facts(self.measured_description)

    @property
    def revision(self) -> int:
        return self.data.get("revision") or 1

    @property
    def sources(self) -> list[dict[str, Any]]:
        """The revisions whose points make this revision's curve, oldest first: each with its version, bundle,
        files, stack, checker, rule set, verdict, waivers and the system description its points carry."""
        return [s for s in self.data.get("sources") or [] if isinstance(s, dict)]

    @property
    def own_source(self) -> dict[str, Any]:
        return next((s for s in self.sources if s.get("revision") == self.revision), {})

    @property
    def measured_description(self) -> dict[str, Any]:
        description = self.own_source.get("system_description")
        return description if isinstance(description, dict) and description else self.description

    @property
    def point_evidence(self) -> dict[str, dict[str, Any]]:
        """Point key -> its own evidence: the revision and version that measured it, the archive holding its raw
        log (file name, SHA-256, position), the path inside it, the raw log's SHA-256 and its waivers."""
        points = self.data.get("points")
        return points if isinstance(points, dict) else {}

    @property
    def waivers_all(self) -> list[dict[str, Any]]:
        """Every granted waiver behind the curve, each with the revision whose version it was granted on."""
        return [{**w, "revision": s.get("revision")} for s in self.sources for w in s.get("waivers") or []]

    @property
    def accelerators(self) -> list[str]:
        """Accelerator model names, distinct, in order (what the accelerator filter offers)."""
        return list(
            dict.fromkeys(a["model"] for a in self.facts["accelerators"] if a["model"] and a["model"] != "?")
        )

    @property
    def accelerator_count(self) -> int | None:
        total = sum(a["total"] for a in self.facts["accelerators"])
        return total or None

    @property
    def accelerator_label(self) -> str:
        """The count beside the type ("8 × AX GPU"; "4 × A; 2 × B" for mixed systems), so 8 accelerators are never
        compared raw against 4 unawares; "" when the description names none."""
        parts = [
            f"{a['total']} × {a['model']}" if a["model"] != "?" else f"{a['total']} × (type not given)"
            for a in self.facts["accelerators"]
            if a["total"]
        ]
        if parts:
            return "; ".join(parts)
        return f"{self.accelerator_count} accelerators" if self.accelerator_count else ""

    @property
    def organisation_name(self) -> str:
        return self._part("organisation").get("name") or ""

    @property
    def organisation_slug(self) -> str:
        return self._part("organisation").get("slug") or ""

    @property
    def label(self) -> str:
        return f"{self.organisation_name} {self.system_name}"

    @property
    def division(self) -> str:
        return self.data.get("division") or ""

    @property
    def division_display(self) -> str:
        return self.data.get("division_display") or self.division

    @property
    def availability(self) -> str:
        return self.data.get("availability") or ""

    @property
    def availability_display(self) -> str:
        return self.data.get("availability_display") or self.availability

    @property
    def stack(self) -> str:
        return self.data.get("stack") or ""

    @cached_property
    def verification(self) -> Verification:
        return Verification.from_dict(self.data.get("verification"))

    @property
    def level(self) -> str:
        return self.verification.level

    @property
    def check(self) -> dict[str, Any]:
        return self._part("check")

    @property
    def check_label(self) -> str:
        return self.check.get("label") or ""

    @property
    def provenance(self) -> dict[str, Any]:
        return self._part("provenance")

    @property
    def bundle_sha256(self) -> str:
        return self.provenance.get("bundle_sha256") or ""

    @property
    def checker_version(self) -> str:
        return self.provenance.get("checker_version") or ""

    @property
    def ruleset(self) -> str:
        return self.provenance.get("ruleset") or ""

    @property
    def waivers(self) -> list[dict[str, Any]]:
        return [w for w in self.provenance.get("waivers") or [] if isinstance(w, dict)]
