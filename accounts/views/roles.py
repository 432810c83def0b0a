"""/accounts/roles/: the chair's global roles (auditors, chairs): grant and remove. 404 to anyone but the chair."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from access.permissions import can
from accounts.models import GlobalRole
from accounts.selectors import (
    global_role_holders,
    user_find,
)
from accounts.services.organisations import (
    global_role_grant,
    global_role_revoke,
)
from accounts.views.organisations import refusal_shown
from portal.errors import ApplicationError

# --- Global roles (the chair) ---------------------------------------------------------------------------


class GlobalRoleForm(forms.Form):
    user = forms.CharField(label="Username or e-mail", max_length=254)
    role = forms.ChoiceField(choices=GlobalRole.Role.choices)


def _chair_or_404(request) -> None:
    if not can(request.user, "grant_global_roles"):
        raise Http404("Only the chair grants global roles.")


@login_required
@require_http_methods(["GET", "POST"])
def global_roles(request):
    _chair_or_404(request)
    form = GlobalRoleForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        user = user_find(form.cleaned_data["user"])
        if user is None:
            form.add_error("user", "No active account has that username or e-mail address.")
        else:
            try:
                global_role_grant(user=user, role=form.cleaned_data["role"], actor=request.user)
            except ApplicationError as exc:
                form.add_error(None, exc.detail)
            else:
                messages.success(
                    request,
                    f"{user.get_username()} is now {GlobalRole.Role(form.cleaned_data['role']).label.lower()}; "
                    "they act once they have set up two-factor sign-in.",
                )
                return redirect("accounts:global_roles")
    return render(request, "accounts/global_roles.html", {"holders": global_role_holders(), "form": form})


@login_required
@require_POST
def global_role_remove(request, pk: int):
    _chair_or_404(request)
    held = get_object_or_404(GlobalRole.objects.select_related("user"), pk=pk)
    try:
        global_role_revoke(user=held.user, role=held.role, actor=request.user)
    except ApplicationError as exc:
        refusal_shown(request, exc)
    else:
        messages.success(
            request, f"{held.user.get_username()} is no longer {held.get_role_display().lower()}."
        )
    return redirect("accounts:global_roles")
