"""What accounts/ announces to the layers above it, sent by its services inside their transaction.

`membership_changed(user, actor)`: someone joined or left an organisation, or a role of theirs changed. accounts/
may not import review/, and a conflict of interest is review's rule: review's service
(`review.services.assignments.assignments_release_conflicted`) listens and releases the assignments the change forbids, in the
same transaction, with its own audit events. The signal carries the fact only; the rule stays in the service."""

from django.dispatch import Signal

membership_changed = Signal()  # kwargs: user, actor
