"""Pages of the audit log: log (the filtered list of events and the chain's head)."""

from __future__ import annotations
