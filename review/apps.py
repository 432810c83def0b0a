"""App config for review."""

from django.apps import AppConfig


class ReviewConfig(AppConfig):
    name = "review"
    verbose_name = "Review"

    def ready(self) -> None:
        # The lifecycle table in submissions names the review's rules (assigned reviewer, quorum, waivers,
        # attestation); they are installed here so that submissions imports nothing above it.
        from review.services import plug_lifecycle_rules

        plug_lifecycle_rules()
