"""Notifications name the submission they are about (shown at read time only to whoever may still read it); rows
made before name it only in their link, which gives the number back."""

import re

from django.db import migrations, models

_LINK = re.compile(r"^/(?:review/)?submissions/(\d+)/")


def refs_from_links(apps, schema_editor):
    Notification = apps.get_model("accounts", "Notification")
    for notification in Notification.objects.filter(submission_ref__isnull=True).exclude(url="").only("pk", "url"):
        match = _LINK.match(notification.url)
        if match:
            Notification.objects.filter(pk=notification.pk).update(submission_ref=int(match.group(1)))


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0005_verified_address"),
    ]

    operations = [
        migrations.AddField(
            model_name="notification",
            name="submission_ref",
            field=models.PositiveBigIntegerField(
                blank=True, help_text="The submission this is about (its id = its number), if any.", null=True
            ),
        ),
        migrations.RunPython(refs_from_links, migrations.RunPython.noop),
    ]
