"""`manage.py check --deploy`: warn when the portal's database role could change or empty the audit log."""

from __future__ import annotations

from django.core.checks import Warning as CheckWarning
from django.core.checks import register
from django.db import DatabaseError, connection


@register("database", deploy=True)
def audit_log_role_check(app_configs=None, **kwargs):
    if connection.vendor != "postgresql":
        return []
    try:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT current_user, "
                "has_table_privilege(current_user, 'audit_auditevent', 'UPDATE, DELETE, TRUNCATE'), "
                "pg_has_role(current_user, (SELECT tableowner FROM pg_tables WHERE tablename = 'audit_auditevent'"
                " AND schemaname = current_schema()), 'MEMBER')"
            )
            role, may_change, owns = cursor.fetchone()
    except DatabaseError:
        return []  # not migrated yet, or no database: other checks and migrate say so
    if not (may_change or owns):
        return []
    return [
        CheckWarning(
            f"The portal connects to PostgreSQL as {role!r}, which may change, empty or disable the triggers of "
            "the audit log.",
            hint="Run `manage.py db_roles` as the owner and point DATABASE_URL at the app role it makes "
            "(docs/deploy.md).",
            id="audit.W001",
        )
    ]
