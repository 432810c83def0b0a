"""manage.py seed_demo: demo organisations, users (printed passwords) and systems; safe to run again."""

from django.core.management.base import BaseCommand

from submissions.demo import DEMO_USERS, seed_demo


class Command(BaseCommand):
    help = "Create (or keep) the demo organisations, users and systems. Idempotent."

    def handle(self, *args, **options):
        seed = seed_demo()
        self.stdout.write(
            self.style.SUCCESS(
                f"Demo data ready: {len(seed.organisations)} organisations, {len(seed.users)} users, "
                f"{len(seed.systems)} systems."
            )
        )
        self.stdout.write("Demo logins (local demo only):")
        for spec in DEMO_USERS:
            self.stdout.write(f"  {spec.username:<16} password: {spec.password:<22} {spec.description}")
