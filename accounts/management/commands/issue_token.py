"""manage.py issue_token USERNAME [--rotate]: print the user's API token (for the CLI and scripts)."""

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from accounts.services import api_token_issue


class Command(BaseCommand):
    help = "Print USERNAME's API token, creating it if needed; --rotate replaces the existing token."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument(
            "--rotate", action="store_true", help="Invalidate the current token and issue a new one."
        )

    def handle(self, *args, username, rotate, **options):
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"No user named {username!r}.")
        if not user.is_active:
            raise CommandError(f"User {username!r} is inactive.")
        token = api_token_issue(user=user, rotate=rotate, actor=None)
        self.stdout.write(token.key)
