"""manage.py issue_token USERNAME [--name NAME] [--scope read|write] [--expires-days N] [--rotate]: create an API
token for a user and print its key (once: only its digest is kept). Users make their own on /accounts/tokens/."""

from datetime import timedelta

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from accounts.models import ApiToken
from accounts.services.tokens import api_token_create, api_tokens_revoke_named
from portal.errors import ApplicationError

DEFAULT_NAME = "issued by an operator"


class Command(BaseCommand):
    help = (
        "Create an API token for USERNAME and print its key (shown once, stored only as a digest). "
        "Default scope write (read, upload and submit), no expiry; --rotate first revokes USERNAME's tokens of the "
        "same name. Users can create and revoke their own tokens on /accounts/tokens/."
    )

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument(
            "--name", default=DEFAULT_NAME, help=f"The token's name (default {DEFAULT_NAME!r})."
        )
        parser.add_argument(
            "--scope",
            choices=ApiToken.Scope.values,
            default=ApiToken.Scope.WRITE,
            help="read: read only; write: read, upload and submit (default).",
        )
        parser.add_argument(
            "--expires-days", type=int, default=None, help="Expire after N days (default never)."
        )
        parser.add_argument(
            "--rotate", action="store_true", help="Revoke USERNAME's active tokens of the same name first."
        )

    def handle(self, *args, username, name, scope, expires_days, rotate, **options):
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"No user named {username!r}.")
        if not user.is_active:
            raise CommandError(f"User {username!r} is inactive.")
        if expires_days is not None and expires_days < 1:
            raise CommandError("--expires-days must be at least 1.")
        if rotate:
            revoked = api_tokens_revoke_named(user=user, name=name)
            if revoked:
                self.stderr.write(f"Revoked {revoked} token(s) named {name!r}.")
        try:
            _, key = api_token_create(
                user=user,
                name=name,
                scope=scope,
                expires_in=timedelta(days=expires_days) if expires_days else None,
            )
        except ApplicationError as exc:
            raise CommandError(exc.detail) from None
        self.stdout.write(key)
