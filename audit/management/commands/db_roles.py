"""manage.py db_roles: create (or update) the PostgreSQL role the application runs as, with the privileges it
needs and no more: SELECT and INSERT on the audit log, full row access (never TRUNCATE) on the other tables.

Run it as the owner/migrator role (the one that runs `migrate` and owns the tables) after every migrate. The
application connects as the app role: it cannot UPDATE, DELETE or TRUNCATE audit events, nor - not owning the
table - disable the append-only triggers. Idempotent; ALTER DEFAULT PRIVILEGES covers tables later migrations add.
"""

from __future__ import annotations

import re

from django.core.management.base import BaseCommand, CommandError
from django.db import connection, transaction

from audit.models import AuditEvent
from portal.env import EnvError, env_secret

ROLE_RE = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")
PASSWORD_VAR = "PORTAL_DB_APP_PASSWORD"


class Command(BaseCommand):
    help = (
        "Create or update the database role the application runs as (PostgreSQL): SELECT and INSERT only on the "
        "audit log, SELECT/INSERT/UPDATE/DELETE on every other table. Run as the owner role after migrate. "
        f"The password comes from {PASSWORD_VAR} (or {PASSWORD_VAR}_FILE)."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--app-role", default="portal_app", help="name of the app role (default portal_app)"
        )
        parser.add_argument(
            "--no-login",
            action="store_true",
            help=f"a role without LOGIN and password (to SET ROLE to, e.g. in tests) instead of {PASSWORD_VAR}",
        )

    def handle(self, *args, **options):
        if connection.vendor != "postgresql":
            raise CommandError("db_roles needs PostgreSQL (SQLite has no roles).", returncode=2)
        role = options["app_role"]
        if not ROLE_RE.match(role):
            raise CommandError(
                f"--app-role {role!r} must be a plain lower-case name (letters, digits, _).", returncode=2
            )
        password = None
        if not options["no_login"]:
            try:
                password = env_secret(PASSWORD_VAR)
            except EnvError as exc:
                raise CommandError(str(exc), returncode=2) from None
            if not password or len(password) < 16:
                raise CommandError(
                    f"Set {PASSWORD_VAR} (or {PASSWORD_VAR}_FILE) to the app role's password, at least 16 "
                    "characters, or pass --no-login.",
                    returncode=2,
                )
        with transaction.atomic(), connection.cursor() as cursor:
            self._apply(cursor, role, password)
        self.stdout.write(
            self.style.SUCCESS(
                f"Role {role}: SELECT, INSERT on {AuditEvent._meta.db_table}; SELECT, INSERT, UPDATE, DELETE on "
                "the other tables. Point the application's DATABASE_URL at it."
            )
        )

    def _apply(self, cursor, role: str, password: str | None) -> None:
        quote = connection.ops.quote_name
        cursor.execute("SELECT current_user, current_database(), current_schema()")
        owner, database, schema = cursor.fetchone()
        if role == owner:
            raise CommandError(
                f"{role} is the role running this command (the owner): the app role must be another one.",
                returncode=2,
            )
        cursor.execute("SELECT rolsuper FROM pg_roles WHERE rolname = %s", [role])
        row = cursor.fetchone()
        login = "LOGIN" if password is not None else "NOLOGIN"
        if row is None:
            cursor.execute(f"CREATE ROLE {quote(role)} {login} NOSUPERUSER NOCREATEDB NOCREATEROLE NOINHERIT")
        elif row[0]:
            raise CommandError(
                f"{role} is a superuser, which bypasses every privilege: use another role.", returncode=2
            )
        else:
            cursor.execute(f"ALTER ROLE {quote(role)} {login}")
        cursor.execute(f"ALTER ROLE {quote(role)} PASSWORD %s", [password])
        cursor.execute("SELECT pg_has_role(%s, %s, 'MEMBER')", [role, owner])
        if cursor.fetchone()[0]:
            raise CommandError(
                f"{role} is a member of {owner}, the owner of the tables: it could act as the owner.",
                returncode=2,
            )
        app, audit = quote(role), quote(AuditEvent._meta.db_table)
        for statement in (
            f"GRANT CONNECT ON DATABASE {quote(database)} TO {app}",
            f"GRANT USAGE ON SCHEMA {quote(schema)} TO {app}",
            f"REVOKE ALL ON ALL TABLES IN SCHEMA {quote(schema)} FROM {app}",
            f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA {quote(schema)} TO {app}",
            f"GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA {quote(schema)} TO {app}",
            # The audit log only grows: read it, append to it.
            f"REVOKE ALL ON {audit} FROM {app}",
            f"GRANT SELECT, INSERT ON {audit} TO {app}",
            # Tables and sequences the owner creates later (new migrations) are usable too.
            f"ALTER DEFAULT PRIVILEGES IN SCHEMA {quote(schema)} "
            f"GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO {app}",
            f"ALTER DEFAULT PRIVILEGES IN SCHEMA {quote(schema)} GRANT USAGE, SELECT ON SEQUENCES TO {app}",
        ):
            cursor.execute(statement)
