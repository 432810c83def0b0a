"""/accounts/invitations/<token>/: accepting an invitation, signed in or by registering (the address is verified
first: the invitation is bound to it)."""

from __future__ import annotations

from django import forms
from django.contrib import auth, messages
from django.contrib.auth import get_user_model, password_validation
from django.core.exceptions import ValidationError
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from accounts.models import Membership
from accounts.selectors import (
    user_email_verified,
)
from accounts.services.addresses import email_verification_send
from accounts.services.invitations import (
    invitation_accept,
    invitation_from_token,
    user_register_from_invitation,
)
from portal.errors import ApplicationError, NotAllowedError

# --- Accepting an invitation ----------------------------------------------------------------------------


class RegisterForm(forms.Form):
    username = forms.CharField(max_length=150)
    password1 = forms.CharField(label="Password", max_length=4096, strip=False, widget=forms.PasswordInput)
    password2 = forms.CharField(label="Again", max_length=4096, strip=False, widget=forms.PasswordInput)

    def __init__(self, *args, email: str = "", **kwargs):
        super().__init__(*args, **kwargs)
        self.email = email

    def clean_username(self):
        username = self.cleaned_data["username"].strip()
        get_user_model().username_validator(username)
        if get_user_model().objects.filter(username__iexact=username).exists():
            raise ValidationError("That username is taken: choose another, or log in if it is yours.")
        return username

    def clean(self):
        cleaned = super().clean()
        first, second = cleaned.get("password1"), cleaned.get("password2")
        if first and second and first != second:
            self.add_error("password2", "The two passwords differ.")
        elif first:
            probe = get_user_model()(username=cleaned.get("username", ""), email=self.email)
            try:
                password_validation.validate_password(first, probe)
            except ValidationError as exc:
                self.add_error("password1", exc)
        return cleaned


def _invitation_page(request, invitation, register, *, problem=None, status=200):
    return render(
        request,
        "accounts/invitation.html",
        {
            "invitation": invitation,
            "roles": [Membership.Role(role).label for role in invitation.roles],
            "register": register,
            "refusal": problem,
            "address_matches": request.user.is_authenticated
            and (request.user.email or "").strip().lower() == invitation.email.strip().lower(),
            "address_verified": request.user.is_authenticated and user_email_verified(request.user),
        },
        status=status,
    )


@require_http_methods(["GET", "POST"])
def invitation_accept_page(request, token: str):
    """Join with the signed-in account (its verified address must be the invited one), or create an account for
    the invited address, which joins once the address is confirmed from the e-mail it gets."""
    try:
        invitation = invitation_from_token(token)
    except ApplicationError as exc:
        return render(request, "accounts/invitation.html", {"problem": exc}, status=410)
    register = RegisterForm(
        request.POST if request.method == "POST" and not request.user.is_authenticated else None,
        email=invitation.email,
    )
    if request.method != "POST":
        return _invitation_page(request, invitation, register)
    if request.user.is_authenticated:
        if request.POST.get("action") == "verify":
            try:
                email_verification_send(user=request.user, invitation=invitation)
            except ApplicationError as exc:
                return _invitation_page(request, invitation, register, problem=exc, status=exc.status_code)
            messages.success(
                request,
                f"We sent a link to {request.user.email}: open it (signed in as {request.user.get_username()}) "
                f"to confirm the address and join {invitation.organisation.name}.",
            )
            return redirect("accounts:account")
        try:
            invitation_accept(invitation=invitation, user=request.user)
        except NotAllowedError as exc:
            return _invitation_page(request, invitation, register, problem=exc, status=exc.status_code)
        except ApplicationError as exc:
            return render(request, "accounts/invitation.html", {"problem": exc}, status=410)
        messages.success(request, f"Welcome to {invitation.organisation.name}.")
        return redirect("accounts:account")
    if not register.is_valid():
        return _invitation_page(request, invitation, register)
    user = user_register_from_invitation(
        invitation=invitation,
        username=register.cleaned_data["username"],
        password=register.cleaned_data["password1"],
    )
    auth.login(request, user, backend="accounts.backends.UsernameOrEmailBackend")
    messages.success(
        request,
        f"Your account is ready. We sent a link to {user.email}: open it to confirm the address and join "
        f"{invitation.organisation.name}.",
    )
    return redirect("accounts:account")
