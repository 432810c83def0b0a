"""Read-only admin view of the audit log."""

from django.contrib import admin

from audit.models import AuditEvent
from audit.services import audit_event_record


@admin.register(AuditEvent)
class AuditEventAdmin(admin.ModelAdmin):
    list_display = ("sequence", "created_at", "action", "actor", "true_actor", "object_type", "object_id")
    list_filter = ("action", "object_type")
    search_fields = ("action", "object_id", "request_id", "actor__username")
    ordering = ("-sequence",)

    def get_readonly_fields(self, request, obj=None):
        return [field.name for field in self.model._meta.fields]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


class AuditedModelAdmin(admin.ModelAdmin):
    """A ModelAdmin whose saves and deletes record audit events (the admin's changes bypass services)."""

    def _audit(self, request, action: str, obj, data: dict) -> None:
        audit_event_record(
            actor=request.user,
            action=f"{obj._meta.model_name}.{action}",
            obj=obj,
            data={"via": "admin", **data},
        )

    def save_model(self, request, obj, form, change):
        super().save_model(request, obj, form, change)
        self._audit(request, "updated" if change else "created", obj, {"fields": sorted(form.changed_data)})

    def delete_model(self, request, obj):
        self._audit(request, "deleted", obj, {"repr": str(obj)})
        super().delete_model(request, obj)

    def delete_queryset(self, request, queryset):
        for obj in queryset:
            self._audit(request, "deleted", obj, {"repr": str(obj)})
        super().delete_queryset(request, queryset)

    def save_formset(self, request, form, formset, change):
        super().save_formset(request, form, formset, change)
        for obj in formset.new_objects:
            self._audit(request, "created", obj, {"inline_of": str(form.instance)})
        for obj, fields in formset.changed_objects:
            self._audit(request, "updated", obj, {"inline_of": str(form.instance), "fields": sorted(fields)})
        for obj in formset.deleted_objects:
            self._audit(request, "deleted", obj, {"inline_of": str(form.instance), "repr": str(obj)})
