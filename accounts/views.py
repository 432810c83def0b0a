"""HTML pages of accounts: the account page (memberships, tokens, two-factor, notification e-mail, recent sign-ins),
the user's notifications (mark read) and how they are e-mailed (immediately or in a daily digest), organisations
run by their admins (members, roles, invitations), the chair's organisations and global roles, and accepting an
invitation. A user sees only their own notifications and sign-ins (access.visibility); an organisation's page is
its admins' and the chair's (404 to anyone else)."""

from __future__ import annotations

from django import forms
from django.contrib import auth, messages
from django.contrib.auth import get_user_model, password_validation
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from access.notifications import notifications_shown_to
from access.permissions import can
from access.visibility import notifications_visible_to, sign_ins_visible_to
from accounts.models import ApiToken, GlobalRole, Invitation, Membership, NotificationPreference, Organisation
from accounts.selectors import (
    global_role_holders,
    invitations_pending,
    membership_labels,
    organisation_members,
    organisations_administered_by,
    recovery_codes_left,
    totp_device_of,
    user_administers,
    user_email_verified,
    user_find,
    user_requires_second_factor,
)
from accounts.services import (
    email_verification_send,
    email_verify,
    global_role_grant,
    global_role_revoke,
    invitation_accept,
    invitation_create,
    invitation_from_token,
    invitation_revoke,
    membership_remove,
    membership_roles_set,
    notification_preference_of,
    notification_preference_set,
    notifications_mark_read,
    organisation_create_with_admin,
    user_register_from_invitation,
)
from portal.errors import ApplicationError, NotAllowedError
from portal.parsers import parse_id

ROLE_CHOICES = Membership.Role.choices


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


# --- The account page -------------------------------------------------------------------------------


def _api_tokens_count(user) -> int:
    """How many active API tokens the user holds (accounts.ApiToken; their page is /accounts/tokens/)."""
    return (
        ApiToken.objects.filter(user=user, revoked_at__isnull=True)
        .exclude(expiry__lte=timezone.now())
        .count()
    )


@login_required
@require_GET
def account(request):
    user = request.user
    confirmed = totp_device_of(user)
    return render(
        request,
        "accounts/account.html",
        {
            "memberships": membership_labels(user),
            "global_roles": [
                GlobalRole.Role(role).label for role in user.global_roles.values_list("role", flat=True)
            ],
            "administered": list(organisations_administered_by(user)),
            "is_chair": can(user, "chair"),
            "two_factor": confirmed,
            "two_factor_required": user_requires_second_factor(user),
            "codes_left": recovery_codes_left(user) if confirmed else 0,
            "tokens_count": _api_tokens_count(user),
            "email_verified": user_email_verified(user),
            "preference_form": PreferenceForm(initial={"delivery": notification_preference_of(user)}),
            "sign_ins": sign_ins_visible_to(user)[:15],
        },
    )


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


def _refusal(request, exc: ApplicationError) -> None:
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
        _refusal(request, exc)
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
        _refusal(request, exc)
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
        _refusal(request, exc)
    return redirect("accounts:organisation", slug=slug)


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
        _refusal(request, exc)
    else:
        messages.success(
            request, f"{held.user.get_username()} is no longer {held.get_role_display().lower()}."
        )
    return redirect("accounts:global_roles")


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
