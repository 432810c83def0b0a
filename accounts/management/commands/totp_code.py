"""manage.py totp_code demo-chair: the current two-factor code of a demo account (demo secrets only)."""

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django_otp.oath import totp
from django_otp.plugins.otp_totp.models import TOTPDevice

from accounts.demo import DEMO_TOTP_KEYS


class Command(BaseCommand):
    help = (
        "Print the current two-factor code of a demo account (demo-chair, demo-auditor); refuses any other."
    )

    def add_arguments(self, parser):
        parser.add_argument("username")

    def handle(self, *args, username, **options):
        user = get_user_model().objects.filter(username=username).first()
        device = TOTPDevice.objects.filter(user=user, confirmed=True).first() if user else None
        if device is None or device.key != DEMO_TOTP_KEYS.get(username):
            raise CommandError(
                f"{username} has no demo authenticator: this command only serves the demo's accounts "
                f"({', '.join(DEMO_TOTP_KEYS)}) after manage.py seed_demo."
            )
        code = totp(device.bin_key, step=device.step, t0=device.t0, digits=device.digits, drift=device.drift)
        self.stdout.write(str(code).zfill(device.digits))
