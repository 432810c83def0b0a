"""/accounts/notifications/: the user's notifications (mark read) and how they are e-mailed (at once or in a daily
digest). Only one's own (access.notifications)."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from access.notifications import notifications_shown_to
from access.visibility import notifications_visible_to
from accounts.models import NotificationPreference
from accounts.services.notifications import (
    notification_preference_of,
    notification_preference_set,
    notifications_mark_read,
)
from portal.errors import ApplicationError
from portal.parsers import parse_id


class PreferenceForm(forms.Form):
    delivery = forms.ChoiceField(choices=NotificationPreference.Delivery.choices, widget=forms.RadioSelect)


@login_required
@require_GET
def notifications(request):
    rows = notifications_visible_to(request.user)
    if request.GET.get("show") == "unread":
        rows = rows.filter(read_at__isnull=True)
    page = Paginator(rows, 50).get_page(request.GET.get("page"))
    # Rendered now through the visibility table: a submission the reader no longer sees shows its number only.
    page.object_list = notifications_shown_to(request.user, page.object_list)
    return render(
        request,
        "accounts/notifications.html",
        {
            "page": page,
            "unread": notifications_visible_to(request.user).filter(read_at__isnull=True).count(),
            "show": request.GET.get("show", ""),
            "preference_form": PreferenceForm(initial={"delivery": notification_preference_of(request.user)}),
        },
    )


@login_required
@require_POST
def mark_read(request):
    """Mark one notification (`id`) or all of them read; someone else's id changes nothing."""
    ids = [number for number in map(parse_id, request.POST.getlist("id")) if number is not None]
    changed = notifications_mark_read(user=request.user, notification_ids=ids or None)
    if not ids:
        messages.success(request, f"{changed} notification{'s' if changed != 1 else ''} marked read.")
    return redirect("accounts:notifications")


@login_required
@require_POST
def preference(request):
    form = PreferenceForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Choose immediate e-mails or a daily digest.")
        return redirect("accounts:notifications")
    try:
        chosen = notification_preference_set(user=request.user, delivery=form.cleaned_data["delivery"])
    except ApplicationError as exc:
        messages.error(request, exc.detail)
    else:
        messages.success(
            request,
            "You get one e-mail a day with your notifications."
            if chosen.delivery == NotificationPreference.Delivery.DIGEST
            else "You get an e-mail for each notification.",
        )
    return redirect("accounts:account" if request.POST.get("back") == "account" else "accounts:notifications")
