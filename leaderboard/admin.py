"""Admin of the leaderboard app: publications and their revisions, read-only. A published record is a snapshot
(leaderboard.publishing.snapshot) and is never edited in place: a correction is a new reviewed revision (an extension) or a
public annotation, both through services."""

from django.contrib import admin, messages

from leaderboard.models import Publication, PublicationRevision

REFUSED = (
    "A published record cannot be edited here: it is the snapshot the public reads. A correction is a new "
    "reviewed revision (extend the result) or a public annotation (resolve a challenge, or annotate)."
)


class PublishedRecordAdmin(admin.ModelAdmin):
    """Shows the record; every change, addition and deletion is refused with the reason."""

    def get_readonly_fields(self, request, obj=None):
        return [field.name for field in self.model._meta.fields]

    def has_add_permission(self, request):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def changeform_view(self, request, object_id=None, form_url="", extra_context=None):
        if request.method == "POST":
            messages.error(request, REFUSED)
        return super().changeform_view(request, object_id, form_url, extra_context)


@admin.register(Publication)
class PublicationAdmin(PublishedRecordAdmin):
    list_display = ("public_id", "status", "published_at", "retracted_at")
    list_filter = ("status",)
    search_fields = ("public_id",)


@admin.register(PublicationRevision)
class PublicationRevisionAdmin(PublishedRecordAdmin):
    list_display = ("publication", "number", "status", "published_at")
    list_filter = ("status",)
