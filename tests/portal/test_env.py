"""The strict environment readers: good values parse, bad ones fail with a message naming the variable."""

import pytest

from portal.env import (
    EnvError,
    env_bool,
    env_choice,
    env_int,
    env_list,
    env_secret,
    env_str,
    env_url,
    parse_database_url,
    parse_email_url,
)


@pytest.mark.parametrize(
    ("raw", "expected"), [("1", True), ("TRUE", True), ("on", True), ("0", False), ("no", False)]
)
def test_env_bool_accepts_usual_spellings(raw, expected):
    assert env_bool("DEBUG", environ={"DEBUG": raw}) is expected


def test_env_bool_default_when_unset():
    assert env_bool("DEBUG", True, environ={}) is True


def test_env_bool_refuses_other_words():
    with pytest.raises(EnvError, match=r"DEBUG='maybe' is not a boolean"):
        env_bool("DEBUG", environ={"DEBUG": "maybe"})


def test_env_int_parses_and_checks_bounds():
    assert env_int("CAP", 5, environ={"CAP": "1_000"}) == 1000
    assert env_int("CAP", 5, environ={}) == 5
    with pytest.raises(EnvError, match=r"CAP='10GB' is not a whole number"):
        env_int("CAP", 5, environ={"CAP": "10GB"})
    with pytest.raises(EnvError, match=r"CAP=0 is below the minimum of 1"):
        env_int("CAP", 5, minimum=1, environ={"CAP": "0"})
    with pytest.raises(EnvError, match="above the maximum"):
        env_int("CAP", 5, maximum=10, environ={"CAP": "11"})


def test_env_list_splits_and_refuses_empty_items():
    assert env_list("HOSTS", environ={"HOSTS": "a.example, b.example"}) == ["a.example", "b.example"]
    assert env_list("HOSTS", ["x"], environ={}) == ["x"]
    with pytest.raises(EnvError, match="empty item"):
        env_list("HOSTS", environ={"HOSTS": "a,,b"})


def test_env_choice():
    assert env_choice("STORAGE_BACKEND", ("local", "s3"), "local", environ={"STORAGE_BACKEND": "s3"}) == "s3"
    with pytest.raises(EnvError, match=r"STORAGE_BACKEND='gcs' is not one of: local, s3"):
        env_choice("STORAGE_BACKEND", ("local", "s3"), "local", environ={"STORAGE_BACKEND": "gcs"})


def test_env_str_treats_blank_as_unset():
    assert env_str("X", "d", environ={"X": "  "}) == "d"


def test_env_secret_from_value_or_file(tmp_path):
    secret_file = tmp_path / "key"
    secret_file.write_text("s3cr3t\n")
    assert env_secret("SECRET_KEY", environ={"SECRET_KEY": "abc"}) == "abc"
    assert env_secret("SECRET_KEY", environ={"SECRET_KEY_FILE": str(secret_file)}) == "s3cr3t"
    assert env_secret("SECRET_KEY", environ={}) is None


def test_env_secret_refuses_both_missing_file_and_empty_file(tmp_path):
    with pytest.raises(EnvError, match="Both SECRET_KEY and SECRET_KEY_FILE"):
        env_secret("SECRET_KEY", environ={"SECRET_KEY": "a", "SECRET_KEY_FILE": "/x"})
    with pytest.raises(EnvError, match="SECRET_KEY_FILE='/nonexistent/key' cannot be read"):
        env_secret("SECRET_KEY", environ={"SECRET_KEY_FILE": "/nonexistent/key"})
    empty = tmp_path / "empty"
    empty.write_text("")
    with pytest.raises(EnvError, match="is empty"):
        env_secret("SECRET_KEY", environ={"SECRET_KEY_FILE": str(empty)})


def test_env_url_checks_scheme_and_host_and_hides_passwords():
    assert env_url("REDIS_URL", ("redis",), environ={"REDIS_URL": "redis://h:6379/0"}) == "redis://h:6379/0"
    assert env_url("REDIS_URL", ("redis",), environ={}) is None
    with pytest.raises(EnvError, match="must start with one of: redis://") as excinfo:
        env_url("REDIS_URL", ("redis",), environ={"REDIS_URL": "http://user:hunter2@h/"})
    assert "hunter2" not in str(excinfo.value)
    with pytest.raises(EnvError, match="invalid port"):
        env_url("REDIS_URL", ("redis",), environ={"REDIS_URL": "redis://h:notaport/0"})


def test_parse_database_url_postgres():
    config = parse_database_url(
        "postgres://alice:p%40ss@db.example:6543/portal?sslmode=require&conn_max_age=60"
    )
    assert config["ENGINE"] == "django.db.backends.postgresql"
    assert (config["NAME"], config["USER"], config["PASSWORD"]) == ("portal", "alice", "p@ss")
    assert (config["HOST"], config["PORT"]) == ("db.example", "6543")
    assert config["OPTIONS"] == {"sslmode": "require"}
    assert config["CONN_MAX_AGE"] == 60


def test_parse_database_url_sqlite_relative_and_absolute(tmp_path):
    relative = parse_database_url("sqlite:///var/db.sqlite3", base_dir=tmp_path)
    assert relative["NAME"] == str(tmp_path / "var" / "db.sqlite3")
    absolute = parse_database_url("sqlite:////srv/db.sqlite3", base_dir=tmp_path)
    assert absolute["NAME"] == "/srv/db.sqlite3"
    assert absolute["ENGINE"] == "django.db.backends.sqlite3"


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("mysql://root@localhost/db", "unsupported scheme 'mysql'"),
        ("postgres://postgres@localhost", "names no database"),
        ("postgres://postgres@localhost:99999/db", "invalid port"),
        ("sqlite://", "names no database file"),
        ("postgres://u:topsecret@h:x/db", "invalid port"),
    ],
)
def test_parse_database_url_refuses_bad_urls(url, message):
    with pytest.raises(EnvError, match=message) as excinfo:
        parse_database_url(url)
    assert "DATABASE_URL" in str(excinfo.value)
    assert "topsecret" not in str(excinfo.value)


def test_parse_email_url():
    assert parse_email_url("console://").backend.endswith("console.EmailBackend")
    smtp = parse_email_url("smtp://mailer:pw@smtp.example:587?tls=1")
    assert (smtp.host, smtp.port, smtp.user, smtp.password, smtp.use_tls) == (
        "smtp.example",
        587,
        "mailer",
        "pw",
        True,
    )
    assert parse_email_url("smtps://smtp.example").port == 465
    with pytest.raises(EnvError, match="unsupported scheme 'pigeon'"):
        parse_email_url("pigeon://coop")
