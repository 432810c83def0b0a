"""manage.py demo_database_check: before `migrate`, refuse a database an older portal made (its tables and
migration history predate the current migrations, which were rewritten before anything was deployed)."""

import sys
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.migrations.loader import MigrationLoader

# Tables of models that moved to another app (accounts, catalog) when the apps were layered.
MOVED_TABLES = {
    "submissions_organisation",
    "submissions_membership",
    "submissions_globalrole",
    "submissions_benchmark",
}


def _project_apps() -> set[str]:
    from django.apps import apps

    base = Path(settings.BASE_DIR)
    return {config.label for config in apps.get_app_configs() if Path(config.path).parent == base}


def older_portal_reason(connection) -> str | None:
    """Why the database cannot be migrated from here, or None when it can (a new one included)."""
    tables = set(connection.introspection.table_names())
    moved = sorted(tables & MOVED_TABLES)
    if moved:
        return f"it has the table {moved[0]} of a model that has moved"
    loader = MigrationLoader(connection, ignore_no_migrations=True)
    project_apps = _project_apps()
    unknown = sorted(
        f"{app}.{name}"
        for app, name in loader.applied_migrations or {}
        if app in project_apps and (app, name) not in loader.disk_migrations
    )
    if unknown:
        return f"it has applied migrations this portal does not have ({', '.join(unknown[:3])})"
    return None


class Command(BaseCommand):
    help = "Exit 1 with one line saying what to delete when the database was made by an older portal."

    def handle(self, *args, **options):
        connection = connections[DEFAULT_DB_ALIAS]
        reason = older_portal_reason(connection)
        if reason is None:
            return
        name = str(connection.settings_dict["NAME"])
        if connection.vendor == "sqlite":
            shown = Path(name)
            if shown.is_relative_to(settings.BASE_DIR):
                shown = shown.relative_to(settings.BASE_DIR)
            message = f"{shown} was made by an older portal ({reason}): delete it (rm {shown}) and run make demo again."
        else:
            message = f"Database {name!r} was made by an older portal ({reason}): drop and re-create it, then migrate."
        self.stderr.write(message)
        sys.exit(1)
