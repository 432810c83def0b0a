"""`make demo` on a database an older portal made stops before migrate, saying in one line what to delete."""

import pytest
from django.core.management import call_command
from django.db import connection

pytestmark = pytest.mark.django_db


def _check(capsys) -> tuple[int, list[str]]:
    with pytest.raises(SystemExit) as stopped:
        call_command("demo_database_check")
    return stopped.value.code, capsys.readouterr().err.strip().splitlines()


def test_current_database_passes(capsys):
    call_command("demo_database_check")
    assert capsys.readouterr().err == ""


def test_tables_of_moved_models_are_named_in_one_line(capsys):
    with connection.cursor() as cursor:  # DDL rolls back with the test's transaction
        cursor.execute("CREATE TABLE submissions_organisation (id integer)")
    code, lines = _check(capsys)
    assert code == 1 and len(lines) == 1
    assert "made by an older portal" in lines[0] and "submissions_organisation" in lines[0]


def test_migration_history_of_an_older_portal_is_named(capsys):
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO django_migrations (app, name, applied) "
            "VALUES ('submissions', '0003_submissions_versions_checks', now())"
        )
    code, lines = _check(capsys)
    assert code == 1 and len(lines) == 1 and "submissions.0003_submissions_versions_checks" in lines[0]
