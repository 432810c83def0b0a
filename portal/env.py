"""Strict readers for settings taken from the environment: a bad value stops start-up with a clear message."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


class EnvError(ImproperlyConfigured):
    """An environment variable holds a value the portal cannot use."""


def _raw(name: str, environ: Mapping[str, str] | None) -> str | None:
    value = (os.environ if environ is None else environ).get(name)
    return None if value is None else value.strip()


def env_str(name: str, default: str | None = None, *, environ: Mapping[str, str] | None = None) -> str | None:
    """A plain string; an empty value counts as unset."""
    value = _raw(name, environ)
    return value if value else default


def env_bool(name: str, default: bool = False, *, environ: Mapping[str, str] | None = None) -> bool:
    """1/true/yes/on or 0/false/no/off (any case); anything else is refused."""
    value = _raw(name, environ)
    if value is None:
        return default
    lowered = value.lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise EnvError(f"{name}={value!r} is not a boolean: use 1/0, true/false, yes/no or on/off.")


def env_int(
    name: str,
    default: int,
    *,
    minimum: int | None = None,
    maximum: int | None = None,
    environ: Mapping[str, str] | None = None,
) -> int:
    """A whole number, with optional bounds. Accepts underscores as digit separators (1_000_000)."""
    value = _raw(name, environ)
    if not value:
        number = default
    else:
        try:
            number = int(value.replace("_", ""), 10)
        except ValueError:
            raise EnvError(f"{name}={value!r} is not a whole number.") from None
    if minimum is not None and number < minimum:
        raise EnvError(f"{name}={number} is below the minimum of {minimum}.")
    if maximum is not None and number > maximum:
        raise EnvError(f"{name}={number} is above the maximum of {maximum}.")
    return number


def env_list(
    name: str, default: list[str] | None = None, *, environ: Mapping[str, str] | None = None
) -> list[str]:
    """A comma-separated list; blanks around items are dropped, empty items refused."""
    value = _raw(name, environ)
    if not value:
        return list(default or [])
    items = [item.strip() for item in value.split(",")]
    if any(not item for item in items):
        raise EnvError(f"{name}={value!r} has an empty item: separate values with single commas.")
    return items


def env_choice(
    name: str, choices: tuple[str, ...], default: str, *, environ: Mapping[str, str] | None = None
) -> str:
    """One of a fixed set of words."""
    value = _raw(name, environ)
    if not value:
        return default
    if value not in choices:
        raise EnvError(f"{name}={value!r} is not one of: {', '.join(choices)}.")
    return value


def env_secret(name: str, *, environ: Mapping[str, str] | None = None) -> str | None:
    """A secret from NAME, or from the file named by NAME_FILE (Docker/Kubernetes secrets). Not both."""
    direct = _raw(name, environ)
    file_name = _raw(f"{name}_FILE", environ)
    if direct and file_name:
        raise EnvError(f"Both {name} and {name}_FILE are set: set only one.")
    if file_name:
        path = Path(file_name)
        try:
            content = path.read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise EnvError(f"{name}_FILE={file_name!r} cannot be read: {exc.strerror or exc}.") from None
        if not content:
            raise EnvError(f"{name}_FILE={file_name!r} is empty.")
        return content
    return direct or None


def env_url(name: str, schemes: tuple[str, ...], *, environ: Mapping[str, str] | None = None) -> str | None:
    """A URL whose scheme is one of `schemes` and which names a host; unset gives None."""
    value = _raw(name, environ)
    if not value:
        return None
    parts = urlsplit(value)
    if parts.scheme not in schemes:
        raise EnvError(
            f"{name}={_redact(value)!r} must start with one of: {', '.join(s + '://' for s in schemes)}."
        )
    if not parts.hostname:
        raise EnvError(f"{name}={_redact(value)!r} names no host.")
    try:
        parts.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError:
        raise EnvError(f"{name}={_redact(value)!r} has an invalid port.") from None
    return value


def _redact(url: str) -> str:
    """The URL with any password replaced, so error messages never print a secret."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return parts._replace(netloc=netloc).geturl()


def parse_database_url(url: str, *, name: str = "DATABASE_URL", base_dir: Path | None = None) -> dict:
    """Turn sqlite:///path or postgres://user:pass@host:port/db?opt=v into a Django DATABASES entry.

    sqlite:///relative/path is relative to base_dir; sqlite:////abs/path is absolute.
    """
    parts = urlsplit(url)
    scheme = parts.scheme
    if scheme == "sqlite":
        raw_path = unquote(parts.path)
        if parts.netloc:
            raise EnvError(f"{name}={url!r}: write sqlite:///relative/path or sqlite:////absolute/path.")
        if raw_path in ("", "/"):
            raise EnvError(f"{name}={url!r} names no database file.")
        if raw_path == "/:memory:":
            path: str = ":memory:"
        else:
            relative = raw_path[1:]  # sqlite:///x -> "/x" -> "x"; sqlite:////abs -> "//abs" -> "/abs"
            candidate = Path(relative)
            if not candidate.is_absolute() and base_dir is not None:
                candidate = base_dir / candidate
            path = str(candidate)
        return {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": path,
            # IMMEDIATE serialises writers up front, which the audit chain relies on under SQLite.
            "OPTIONS": {"transaction_mode": "IMMEDIATE", "timeout": 20},
        }
    if scheme in ("postgres", "postgresql", "pgsql"):
        db_name = unquote(parts.path.lstrip("/"))
        if not db_name:
            raise EnvError(f"{_redact_name(name, url)} names no database: add /DBNAME at the end.")
        if not parts.hostname:
            raise EnvError(f"{_redact_name(name, url)} names no host.")
        try:
            port = parts.port
        except ValueError:
            raise EnvError(f"{_redact_name(name, url)} has an invalid port.") from None
        options: dict[str, str] = {}
        conn_max_age = 0
        for key, values in parse_qs(parts.query, keep_blank_values=True).items():
            if key == "conn_max_age":
                try:
                    conn_max_age = int(values[-1])
                except ValueError:
                    raise EnvError(
                        f"{_redact_name(name, url)}: conn_max_age must be a whole number."
                    ) from None
            else:
                options[key] = values[-1]
        return {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": db_name,
            "USER": unquote(parts.username or ""),
            "PASSWORD": unquote(parts.password or ""),
            "HOST": parts.hostname,
            "PORT": str(port or 5432),
            "CONN_MAX_AGE": conn_max_age,
            "OPTIONS": options,
        }
    raise EnvError(
        f"{_redact_name(name, url)}: unsupported scheme {scheme!r}; use sqlite:/// or postgres://."
    )


def _redact_name(name: str, url: str) -> str:
    return f"{name}={_redact(url)!r}"


@dataclass(frozen=True)
class EmailConfig:
    """Django e-mail settings derived from EMAIL_URL."""

    backend: str
    host: str = "localhost"
    port: int = 25
    user: str = ""
    password: str = ""
    use_tls: bool = False
    use_ssl: bool = False


_EMAIL_BACKENDS = {
    "console": "django.core.mail.backends.console.EmailBackend",
    "locmem": "django.core.mail.backends.locmem.EmailBackend",
    "dummy": "django.core.mail.backends.dummy.EmailBackend",
}


def parse_email_url(url: str, *, name: str = "EMAIL_URL") -> EmailConfig:
    """console://, locmem://, dummy://, smtp://user:pass@host:587?tls=1, smtps://user:pass@host:465."""
    parts = urlsplit(url)
    if parts.scheme in _EMAIL_BACKENDS:
        return EmailConfig(backend=_EMAIL_BACKENDS[parts.scheme])
    if parts.scheme in ("smtp", "smtps"):
        if not parts.hostname:
            raise EnvError(f"{_redact_name(name, url)} names no SMTP host.")
        try:
            port = parts.port
        except ValueError:
            raise EnvError(f"{_redact_name(name, url)} has an invalid port.") from None
        query = parse_qs(parts.query)
        tls_values = query.get("tls", ["0"])
        use_tls = env_bool("tls", environ={"tls": tls_values[-1]}) if parts.scheme == "smtp" else False
        use_ssl = parts.scheme == "smtps"
        return EmailConfig(
            backend="django.core.mail.backends.smtp.EmailBackend",
            host=parts.hostname,
            port=port or (465 if use_ssl else 25),
            user=unquote(parts.username or ""),
            password=unquote(parts.password or ""),
            use_tls=use_tls,
            use_ssl=use_ssl,
        )
    raise EnvError(
        f"{_redact_name(name, url)}: unsupported scheme {parts.scheme!r}; use console://, locmem://, dummy://, "
        "smtp:// or smtps://."
    )
