"""The rules page (/rules/): every documented rule id with its documentation rows, grouped by area (the links from
findings land here). Public."""

from __future__ import annotations

from django.shortcuts import render
from django.views.decorators.http import require_GET

from checker.judge.portal_rules import PORTAL_ONLY_RULES
from submissions.rules_catalog import markdown_inline, rule_areas, rule_catalog


@require_GET
def rules(request):
    """Every documented rule id with its documentation rows, grouped by area (the links from findings land here)."""
    catalog = rule_catalog()
    areas = []
    for area in rule_areas():
        entries = []
        for rule in area.rules:
            entries.append(
                {
                    "rule": rule,
                    "portal_only": rule in PORTAL_ONLY_RULES,
                    "rows": [
                        {
                            "doc": e.doc,
                            "section": e.section,
                            "cells": [(header, markdown_inline(text)) for header, text in e.cells],
                        }
                        for e in catalog[rule].entries
                    ],
                }
            )
        areas.append({"title": area.title, "slug": area.slug, "entries": entries})
    return render(request, "submissions/rules.html", {"areas": areas, "rule_count": len(catalog)})
