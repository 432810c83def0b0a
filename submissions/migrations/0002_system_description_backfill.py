"""Systems registered before description revisions existed get their current description as revision 1
(kept from the first schema: a no-op on a new database)."""

import hashlib
import json

from django.db import migrations


def backfill_first_revisions(apps, schema_editor):
    System = apps.get_model("submissions", "System")
    Revision = apps.get_model("submissions", "SystemDescriptionRevision")
    for system in System.objects.filter(description_revisions__isnull=True):
        canonical = json.dumps(system.description or {}, sort_keys=True, separators=(",", ":"))
        Revision.objects.create(
            system=system,
            number=1,
            description=system.description or {},
            sha256=hashlib.sha256(canonical.encode()).hexdigest(),
            changed_keys=[],
        )


class Migration(migrations.Migration):
    dependencies = [("submissions", "0001_initial")]

    operations = [migrations.RunPython(backfill_first_revisions, migrations.RunPython.noop)]
