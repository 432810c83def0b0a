"""The audit log: one row per recorded action, chained by SHA-256, signed by HMAC, never changed or removed."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from portal.visibility import VisibleQuerySet, visible_manager

GENESIS_HASH = "0" * 64


class AuditLogImmutableError(Exception):
    """Raised on any attempt to change or remove recorded audit events."""


class AuditEventQuerySet(VisibleQuerySet):
    """Refuses bulk changes: the log only grows, through audit.services.audit_event_record."""

    def update(self, **kwargs):
        raise AuditLogImmutableError("Audit events cannot be updated.")

    def delete(self):
        raise AuditLogImmutableError("Audit events cannot be deleted.")

    def bulk_update(self, objs, fields, batch_size=None):
        raise AuditLogImmutableError("Audit events cannot be updated.")

    def bulk_create(self, objs, *args, **kwargs):
        raise AuditLogImmutableError("Audit events are recorded one at a time, through audit_event_record.")

    def _raw_delete(self, using):
        raise AuditLogImmutableError("Audit events cannot be deleted.")


class AuditEvent(models.Model):
    """One recorded action: who (and on whose behalf), what, on which object, in which request."""

    sequence = models.PositiveBigIntegerField(unique=True, editable=False)
    created_at = models.DateTimeField(editable=False)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="audit_events",
        help_text="Who acted; empty for the system itself.",
    )
    true_actor = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="audit_events_as_true_actor",
        help_text="Who really acted when acting on behalf of the actor (e.g. staff impersonation).",
    )
    action = models.CharField(max_length=100, help_text='Dotted name, e.g. "submission.submitted".')
    object_type = models.CharField(max_length=100, blank=True, help_text='"app_label.model" of the object.')
    object_id = models.CharField(max_length=64, blank=True)
    data = models.JSONField(default=dict, blank=True)
    request_id = models.CharField(max_length=128, blank=True)
    prev_hash = models.CharField(max_length=64)
    hash = models.CharField(max_length=64, unique=True)
    signature = models.CharField(
        max_length=64,
        help_text="HMAC-SHA256 of the hash with the portal's audit key, which the database never holds.",
    )

    objects = visible_manager(AuditEventQuerySet)

    class Meta:
        ordering = ["sequence"]
        indexes = [
            models.Index(fields=["object_type", "object_id"], name="audit_event_object_idx"),
            models.Index(fields=["action"], name="audit_event_action_idx"),
        ]

    def __str__(self) -> str:
        return f"#{self.sequence} {self.action} {self.object_type}:{self.object_id}"

    def save(self, *args, **kwargs):
        if not self._state.adding:
            raise AuditLogImmutableError(f"Audit event #{self.sequence} is recorded and cannot be changed.")
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise AuditLogImmutableError(f"Audit event #{self.sequence} cannot be deleted.")
