"""Settings as a deployment sees them: loaded in a fresh process from environment variables."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PROBE = (
    "import json, django; from django.conf import settings; django.setup(); "
    "print(json.dumps({k: getattr(settings, k) for k in %r}, default=str))"
)


def load_settings(tmp_path, names, **env):
    base = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(
            (
                "DATABASE_URL",
                "REDIS_URL",
                "DEBUG",
                "PORTAL_",
                "STORAGE_",
                "SECRET_KEY",
                "AWS_",
                "EMAIL_",
                "CELERY_",
                "ALLOWED_HOSTS",
                "CSRF_",
            )
        )
    }
    base.update({"DJANGO_SETTINGS_MODULE": "portal.settings", "PORTAL_VAR_DIR": str(tmp_path / "var"), **env})
    result = subprocess.run(
        [sys.executable, "-c", PROBE % (list(names),)],
        cwd=ROOT,
        env=base,
        capture_output=True,
        text=True,
        timeout=60,
    )
    return result


def test_zero_config_is_sqlite_local_storage_eager_tasks_and_no_debug(tmp_path):
    result = load_settings(
        tmp_path, ["DATABASES", "STORAGES", "CELERY_TASK_ALWAYS_EAGER", "DEBUG", "SECRET_KEY"]
    )
    assert result.returncode == 0, result.stderr
    values = json.loads(result.stdout)
    assert values["DATABASES"]["default"]["ENGINE"] == "django.db.backends.sqlite3"
    assert values["DATABASES"]["default"]["NAME"].startswith(str(tmp_path / "var"))
    assert values["STORAGES"]["default"]["BACKEND"] == "django.core.files.storage.FileSystemStorage"
    assert values["CELERY_TASK_ALWAYS_EAGER"] is True
    assert values["DEBUG"] is False
    # A generated dev key is kept in var/, outside git, and reused on the next start.
    key_file = tmp_path / "var" / "secret_key"
    assert key_file.read_text() == values["SECRET_KEY"]
    assert key_file.stat().st_mode & 0o777 == 0o600
    assert json.loads(load_settings(tmp_path, ["SECRET_KEY"]).stdout) == {"SECRET_KEY": values["SECRET_KEY"]}


def test_production_safety_defaults_when_debug_is_off(tmp_path):
    names = [
        "SESSION_COOKIE_SECURE",
        "CSRF_COOKIE_SECURE",
        "SECURE_HSTS_SECONDS",
        "SECURE_CONTENT_TYPE_NOSNIFF",
        "X_FRAME_OPTIONS",
        "SECURE_REFERRER_POLICY",
    ]
    values = json.loads(load_settings(tmp_path, names).stdout)
    assert values == {
        "SESSION_COOKIE_SECURE": True,
        "CSRF_COOKIE_SECURE": True,
        "SECURE_HSTS_SECONDS": 31536000,
        "SECURE_CONTENT_TYPE_NOSNIFF": True,
        "X_FRAME_OPTIONS": "DENY",
        "SECURE_REFERRER_POLICY": "same-origin",
    }
    demo = json.loads(load_settings(tmp_path, names[:2], PORTAL_SECURE_COOKIES="0").stdout)
    assert demo == {"SESSION_COOKIE_SECURE": False, "CSRF_COOKIE_SECURE": False}


def test_s3_storage_and_redis_from_env(tmp_path):
    result = load_settings(
        tmp_path,
        ["STORAGES", "CELERY_BROKER_URL", "CELERY_TASK_ALWAYS_EAGER"],
        STORAGE_BACKEND="s3",
        AWS_STORAGE_BUCKET_NAME="bundles",
        AWS_S3_ENDPOINT_URL="http://127.0.0.1:8333",
        AWS_ACCESS_KEY_ID="ak",
        AWS_SECRET_ACCESS_KEY="sk",
        REDIS_URL="redis://127.0.0.1:6379/3",
    )
    assert result.returncode == 0, result.stderr
    values = json.loads(result.stdout)
    assert values["STORAGES"]["default"]["BACKEND"] == "storages.backends.s3.S3Storage"
    assert values["STORAGES"]["default"]["OPTIONS"]["bucket_name"] == "bundles"
    assert values["STORAGES"]["default"]["OPTIONS"]["endpoint_url"] == "http://127.0.0.1:8333"
    assert values["CELERY_BROKER_URL"] == "redis://127.0.0.1:6379/3"
    assert values["CELERY_TASK_ALWAYS_EAGER"] is False


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"DATABASE_URL": "mysql://root@localhost/portal"}, "unsupported scheme 'mysql'"),
        ({"DEBUG": "perhaps"}, "DEBUG='perhaps' is not a boolean"),
        ({"STORAGE_BACKEND": "s3"}, "STORAGE_BACKEND=s3 needs AWS_STORAGE_BUCKET_NAME"),
        ({"REDIS_URL": "localhost:6379"}, "REDIS_URL="),
        ({"PORTAL_MAX_UPLOAD_BYTES": "lots"}, "PORTAL_MAX_UPLOAD_BYTES='lots' is not a whole number"),
        ({"SECRET_KEY": "short"}, "SECRET_KEY is shorter than 32 characters"),
        ({"CSRF_TRUSTED_ORIGINS": "portal.example"}, "must start with http:// or https://"),
        # Production (a SECRET_KEY set, no DEBUG): the endpoint credentials' key must be set too.
        ({"SECRET_KEY": "k" * 40}, "PORTAL_ENDPOINT_KEY is not set"),
        ({"SECRET_KEY": "k" * 40, "PORTAL_ENDPOINT_KEY": "short"}, "PORTAL_ENDPOINT_KEY is shorter than 32"),
    ],
)
def test_bad_environment_stops_start_up_with_a_clear_message(tmp_path, env, message):
    result = load_settings(tmp_path, ["DEBUG"], **env)
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr or "EnvError" in result.stderr
    assert message in result.stderr
