"""API tokens kept as digests (django-rest-knox, accounts.ApiToken); DRF's authtoken table is dropped.

DRF's tokens were stored as the keys themselves and cannot be turned into digests of keys nobody has any more:
they are deleted with their table, and their users create new tokens on /accounts/tokens/ (docs/api-tokens.md).
"""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


def _forget_drf_tokens(apps, schema_editor):
    # Their content types (and with them their permissions) name models that no longer exist.
    apps.get_model("contenttypes", "ContentType").objects.filter(app_label="authtoken").delete()


class Migration(migrations.Migration):

    dependencies = [
        ('accounts', '0003_invitations_sign_ins_membership_added_by'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [
        migrations.CreateModel(
            name='ApiToken',
            fields=[
                ('token_key', models.CharField(db_index=True, max_length=25)),
                ('created', models.DateTimeField(auto_now_add=True)),
                ('expiry', models.DateTimeField(blank=True, null=True)),
                ('id', models.BigAutoField(primary_key=True, serialize=False)),
                ('digest', models.CharField(max_length=128, unique=True)),
                ('name', models.CharField(max_length=100)),
                ('scope', models.CharField(choices=[('read', 'Read only'), ('write', 'Read, upload and submit')], default='read', max_length=8)),
                ('last_used_at', models.DateTimeField(blank=True, null=True)),
                ('revoked_at', models.DateTimeField(blank=True, null=True)),
                ('user', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='auth_token_set', to=settings.AUTH_USER_MODEL)),
            ],
            options={
                'ordering': ['-created', '-id'],
                'indexes': [models.Index(fields=['user', 'revoked_at'], name='api_token_user_live_idx')],
            },
        ),
        # rest_framework.authtoken is no longer installed: its plain-text keys go, with its bookkeeping rows.
        migrations.RunSQL("DROP TABLE IF EXISTS authtoken_token", reverse_sql=migrations.RunSQL.noop),
        migrations.RunSQL("DELETE FROM django_migrations WHERE app = 'authtoken'", reverse_sql=migrations.RunSQL.noop),
        migrations.RunPython(_forget_drf_tokens, migrations.RunPython.noop),
    ]
