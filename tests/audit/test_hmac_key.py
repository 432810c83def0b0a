"""The audit log's HMAC key: from PORTAL_AUDIT_HMAC_KEY(_FILE), else generated once into the var folder, never
committed and never in the database; the checkpoints' folder follows the var folder too."""

import json

from tests.portal.test_settings import load_settings

NAMES = ["PORTAL_AUDIT_HMAC_KEY", "SECRET_KEY", "STORAGES"]


def test_generated_once_into_the_var_folder_and_reused(tmp_path):
    result = load_settings(tmp_path, NAMES)
    assert result.returncode == 0, result.stderr
    values = json.loads(result.stdout)
    key_file = tmp_path / "var" / "audit_hmac_key"
    assert key_file.read_text() == values["PORTAL_AUDIT_HMAC_KEY"]
    assert key_file.stat().st_mode & 0o777 == 0o600
    assert len(values["PORTAL_AUDIT_HMAC_KEY"]) >= 32
    assert values["PORTAL_AUDIT_HMAC_KEY"] != values["SECRET_KEY"]
    again = json.loads(load_settings(tmp_path, NAMES).stdout)
    assert again["PORTAL_AUDIT_HMAC_KEY"] == values["PORTAL_AUDIT_HMAC_KEY"]
    location = values["STORAGES"]["audit_checkpoints"]["OPTIONS"]["location"]
    assert location == str(tmp_path / "var" / "audit-checkpoints")


def test_from_the_environment_or_a_file(tmp_path):
    key = "k" * 40
    values = json.loads(load_settings(tmp_path, NAMES, PORTAL_AUDIT_HMAC_KEY=key).stdout)
    assert values["PORTAL_AUDIT_HMAC_KEY"] == key
    assert not (tmp_path / "var" / "audit_hmac_key").exists()
    secret = tmp_path / "hmac"
    secret.write_text("f" * 40 + "\n")
    values = json.loads(load_settings(tmp_path, NAMES, PORTAL_AUDIT_HMAC_KEY_FILE=str(secret)).stdout)
    assert values["PORTAL_AUDIT_HMAC_KEY"] == "f" * 40


def test_a_short_key_stops_start_up_naming_the_variable(tmp_path):
    result = load_settings(tmp_path, NAMES, PORTAL_AUDIT_HMAC_KEY="short")
    assert result.returncode != 0
    assert "PORTAL_AUDIT_HMAC_KEY is shorter than 32 characters" in result.stderr


def test_s3_checkpoints_go_to_their_own_folder_of_the_bucket(tmp_path):
    values = json.loads(
        load_settings(
            tmp_path,
            NAMES,
            STORAGE_BACKEND="s3",
            AWS_STORAGE_BUCKET_NAME="bundles",
            AWS_S3_REGION_NAME="us-east-1",
        ).stdout
    )
    options = values["STORAGES"]["audit_checkpoints"]["OPTIONS"]
    assert options["bucket_name"] == "bundles" and options["location"] == "audit-checkpoints"
