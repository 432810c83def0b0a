"""HTML pages of the review app: the reviewer's queue."""

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.shortcuts import render

from access.permissions import can


@login_required
def queue(request):
    if not can(request.user, "review"):
        raise PermissionDenied("Only reviewers have a review queue.")
    return render(request, "review/queue.html", {"assignments": []})
