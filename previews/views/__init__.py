"""Pages of previews (docs/previews.md): previews, by path."""

from __future__ import annotations
