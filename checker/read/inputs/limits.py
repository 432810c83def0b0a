"""Caps on what the checker agrees to read from hostile input (Limits)."""

from __future__ import annotations

from dataclasses import dataclass

MiB = 1024 * 1024
GiB = 1024 * MiB


@dataclass(frozen=True)
class Limits:
    """Caps applied to hostile input; every refusal becomes a finding, never an exception."""

    max_total_bytes: int = 64 * GiB  # total uncompressed bytes over all archives
    max_members: int = 200_000  # archive members over all archives
    max_member_ratio: float = 1000.0  # uncompressed / compressed, per member (and per archive stream)
    max_line_bytes: int = 64 * MiB  # one line of events.jsonl
    max_descriptor_bytes: int = 32 * MiB  # one JSON / YAML descriptor
    # Uncompressed bytes read out of all archives / their compressed size (None: no such cap). Real result files
    # compress 5 to 20 times; an archive under the per-member ratio can still inflate to gigabytes.
    max_inflation: float | None = None
    inflation_basis_bytes: int | None = (
        None  # the compressed size the ratio is of (default: the archives given)
    )
    inflated_before: int = 0  # bytes already inflated by earlier reads of the same check (counted in the cap)
