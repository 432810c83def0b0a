"""App config for review."""

from django.apps import AppConfig


class ReviewConfig(AppConfig):
    name = "review"
    verbose_name = "Review"

    def ready(self) -> None:
        # A membership change (accounts/, below us) may give a reviewer a conflict of interest: release what it
        # forbids, in the change's own transaction (accounts.signals says why this is a signal).
        from accounts.signals import membership_changed
        from review.services.assignments import membership_changed_release

        membership_changed.connect(
            membership_changed_release, dispatch_uid="review-release-on-membership-change"
        )
