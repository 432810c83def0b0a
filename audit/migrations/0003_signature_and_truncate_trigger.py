"""Every audit event carries an HMAC (`signature`) with the portal's audit key; on PostgreSQL a statement-level
trigger refuses TRUNCATE of the log (the row-level trigger of 0002 never sees one)."""

from django.db import migrations, models

TRUNCATE_SQL = """
DROP TRIGGER IF EXISTS audit_event_no_truncate ON audit_auditevent;
CREATE TRIGGER audit_event_no_truncate
    BEFORE TRUNCATE ON audit_auditevent
    FOR EACH STATEMENT EXECUTE FUNCTION audit_event_refuse_change();
"""

DROP_TRUNCATE_SQL = "DROP TRIGGER IF EXISTS audit_event_no_truncate ON audit_auditevent;"


def sign_existing_events(apps, schema_editor):
    """Events recorded before this migration get their signature, once, with the key in use now."""
    from audit.hashing import event_signature

    AuditEvent = apps.get_model("audit", "AuditEvent")
    unsigned = list(AuditEvent.objects.filter(signature="").values_list("pk", "hash"))
    if not unsigned:
        return
    postgres = schema_editor.connection.vendor == "postgresql"
    if postgres:
        schema_editor.execute("ALTER TABLE audit_auditevent DISABLE TRIGGER audit_event_append_only")
    for pk, digest in unsigned:
        AuditEvent.objects.filter(pk=pk).update(signature=event_signature(digest))
    if postgres:
        schema_editor.execute("SET CONSTRAINTS ALL IMMEDIATE")  # no pending trigger events before ALTER TABLE
        schema_editor.execute("ALTER TABLE audit_auditevent ENABLE TRIGGER audit_event_append_only")


def install_truncate_trigger(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(TRUNCATE_SQL, params=None)


def remove_truncate_trigger(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(DROP_TRUNCATE_SQL, params=None)


class Migration(migrations.Migration):
    dependencies = [("audit", "0002_append_only_trigger")]

    operations = [
        migrations.AddField(
            model_name="auditevent",
            name="signature",
            field=models.CharField(
                default="",
                help_text="HMAC-SHA256 of the hash with the portal's audit key, which the database never holds.",
                max_length=64,
            ),
            preserve_default=False,
        ),
        migrations.RunPython(sign_existing_events, migrations.RunPython.noop),
        migrations.RunPython(install_truncate_trigger, remove_truncate_trigger),
    ]
