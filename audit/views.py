"""HTML pages of the audit app: the event log for auditors and the chair."""

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.shortcuts import render

from access.permissions import can
from access.visibility import audit_events_visible_to


@login_required
def event_list(request):
    if not can(request.user, "read_audit_log"):
        raise PermissionDenied("Only auditors and the chair can read the audit log.")
    page = Paginator(audit_events_visible_to(request.user), 50).get_page(request.GET.get("page"))
    return render(request, "audit/event_list.html", {"page": page})
