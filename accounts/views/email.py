"""/accounts/email/: changing one's address (confirmed from the new one) and verifying it by a signed link."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.views.decorators.debug import sensitive_post_parameters
from django.views.decorators.http import require_http_methods, require_POST

from accounts.services.addresses import email_change_confirm, email_change_request, email_verification_send
from accounts.services.invitations import (
    email_verify,
)
from portal.errors import ApplicationError


class EmailForm(forms.Form):
    email = forms.EmailField(label="New e-mail address", max_length=254)
    password = forms.CharField(
        label="Your password", max_length=4096, strip=False, widget=forms.PasswordInput
    )


@sensitive_post_parameters("password")
@login_required
@require_http_methods(["GET", "POST"])
def email_change(request):
    form = EmailForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        if not request.user.check_password(form.cleaned_data["password"]):
            form.add_error("password", "That is not your password.")
        elif form.cleaned_data["email"].lower() == (request.user.email or "").lower():
            form.add_error("email", "That is already your address.")
        else:
            email_change_request(user=request.user, new_email=form.cleaned_data["email"])
            messages.success(
                request,
                f"We sent a link to {form.cleaned_data['email']}: open it to confirm the new address.",
            )
            return redirect("accounts:account")
    return render(request, "accounts/email_change.html", {"form": form})


@login_required
@require_http_methods(["GET", "POST"])
def email_confirm(request, token: str):
    if request.method == "GET":
        return render(request, "accounts/email_confirm.html", {"token": token})
    try:
        email = email_change_confirm(user=request.user, token=token)
    except ApplicationError as exc:
        messages.error(request, exc.detail)
    else:
        messages.success(request, f"Your e-mail address is now {email}.")
    return redirect("accounts:account")


@login_required
@require_POST
def email_verify_send(request):
    """Send the account's current address a confirmation link (from the account page)."""
    try:
        email_verification_send(user=request.user)
    except ApplicationError as exc:
        messages.error(request, exc.detail)
    else:
        messages.success(request, f"We sent a link to {request.user.email}: open it to confirm the address.")
    return redirect("accounts:account")


@login_required
@require_http_methods(["GET", "POST"])
def email_verify_page(request, token: str):
    """A confirmation link from an e-mail: GET asks to press the button (mail scanners open links), POST confirms
    the address (and joins the organisation it was sent for)."""
    if request.method == "GET":
        return render(request, "accounts/email_verify.html", {"token": token})
    try:
        organisation = email_verify(user=request.user, token=token)
    except ApplicationError as exc:
        messages.error(request, exc.detail)
        return render(
            request, "accounts/email_verify.html", {"token": token, "problem": exc}, status=exc.status_code
        )
    if organisation is not None:
        messages.success(request, f"{request.user.email} is confirmed. Welcome to {organisation.name}.")
    else:
        messages.success(request, f"{request.user.email} is confirmed.")
    return redirect("accounts:account")
