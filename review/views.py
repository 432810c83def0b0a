"""HTML pages of the review app: the reviewer's queue."""

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.shortcuts import render

from review.selectors import user_is_reviewer


@login_required
def queue(request):
    if not user_is_reviewer(request.user):
        raise PermissionDenied("Only reviewers have a review queue.")
    return render(request, "review/queue.html", {"assignments": []})
