"""/accounts/organisations/: organisations run by their admins (members, roles, invitations) and the chair's list of
them. An organisation's page is its admins' and the chair's (404 to anyone else)."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from access.permissions import can
from accounts.models import Invitation, Membership, Organisation
from accounts.selectors import (
    invitations_pending,
    organisation_members,
    organisations_administered_by,
    user_administers,
)
from accounts.services.invitations import (
    invitation_create,
    invitation_revoke,
    organisation_create_with_admin,
)
from accounts.services.organisations import (
    membership_remove,
    membership_roles_set,
)
from portal.errors import ApplicationError

ROLE_CHOICES = Membership.Role.choices


# --- Organisations, members and invitations ------------------------------------------------------------


class InviteForm(forms.Form):
    email = forms.EmailField(label="E-mail address", max_length=254)
    roles = forms.MultipleChoiceField(choices=ROLE_CHOICES, widget=forms.CheckboxSelectMultiple)


class OrganisationForm(forms.Form):
    name = forms.CharField(max_length=200)
    kind = forms.ChoiceField(choices=Organisation.Kind.choices)
    admin_email = forms.EmailField(label="First admin's e-mail", max_length=254)


def _administered_or_404(request, slug: str) -> Organisation:
    organisation = get_object_or_404(Organisation, slug=slug)
    if not user_administers(request.user, organisation):
        raise Http404("No such organisation.")
    return organisation


def refusal_shown(request, exc: ApplicationError) -> None:
    messages.error(request, exc.detail)


@login_required
@require_http_methods(["GET", "POST"])
def organisations(request):
    """The organisations the user administers; the chair sees all of them and creates new ones."""
    form = OrganisationForm(request.POST or None)
    if request.method == "POST":
        if not can(request.user, "create_organisation"):
            raise Http404("Only the chair creates organisations.")
        if form.is_valid():
            try:
                organisation, invitation = organisation_create_with_admin(
                    name=form.cleaned_data["name"],
                    kind=form.cleaned_data["kind"],
                    admin_email=form.cleaned_data["admin_email"],
                    actor=request.user,
                )
            except ValidationError as exc:
                form.add_error(None, "; ".join(exc.messages))
            except ApplicationError as exc:
                form.add_error(None, exc.detail)
            else:
                messages.success(
                    request, f"{organisation.name} created; {invitation.email} is invited as its admin."
                )
                return redirect("accounts:organisation", slug=organisation.slug)
    return render(
        request,
        "accounts/organisations.html",
        {
            "organisations": organisations_administered_by(request.user),
            "is_chair": can(request.user, "chair"),
            "form": form,
        },
    )


@login_required
@require_GET
def organisation(request, slug: str):
    organisation = _administered_or_404(request, slug)
    return render(
        request,
        "accounts/organisation.html",
        {
            "organisation": organisation,
            "members": organisation_members(organisation),
            "pending": invitations_pending(organisation),
            "invite_form": InviteForm(),
            "role_choices": ROLE_CHOICES,
        },
    )


@login_required
@require_POST
def invite(request, slug: str):
    organisation = _administered_or_404(request, slug)
    form = InviteForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Give an e-mail address and at least one role (submitter, reviewer, admin).")
        return redirect("accounts:organisation", slug=slug)
    try:
        invitation = invitation_create(
            organisation=organisation,
            email=form.cleaned_data["email"],
            roles=form.cleaned_data["roles"],
            actor=request.user,
        )
    except ApplicationError as exc:
        refusal_shown(request, exc)
    else:
        messages.success(
            request, f"Invitation e-mailed to {invitation.email}; the link works once, for a week."
        )
    return redirect("accounts:organisation", slug=slug)


@login_required
@require_POST
def invitation_withdraw(request, slug: str, pk: int):
    organisation = _administered_or_404(request, slug)
    invitation = get_object_or_404(Invitation, pk=pk, organisation=organisation)
    try:
        invitation_revoke(invitation=invitation, actor=request.user)
    except ApplicationError as exc:
        refusal_shown(request, exc)
    else:
        messages.success(
            request, f"The invitation to {invitation.email} is withdrawn: its link no longer works."
        )
    return redirect("accounts:organisation", slug=slug)


@login_required
@require_POST
def member_roles(request, slug: str, user_id: int):
    organisation = _administered_or_404(request, slug)
    member = get_object_or_404(get_user_model(), pk=user_id, memberships__organisation=organisation)
    try:
        if request.POST.get("remove"):
            membership_remove(user=member, organisation=organisation, actor=request.user)
            messages.success(
                request, f"{member.get_username()} is no longer a member of {organisation.name}."
            )
        else:
            roles = membership_roles_set(
                user=member,
                organisation=organisation,
                roles=request.POST.getlist("roles"),
                actor=request.user,
            )
            labels = ", ".join(Membership.Role(role).label for role in roles)
            messages.success(request, f"{member.get_username()} is now: {labels}.")
    except ApplicationError as exc:
        refusal_shown(request, exc)
    return redirect("accounts:organisation", slug=slug)
