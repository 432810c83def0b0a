"""Sign-in pages (/accounts/login/, /accounts/login/verify/): username or e-mail and password, then (for an account
with two-factor sign-in) a code from the authenticator app or a recovery code; throttled per account and per
address (accounts.sign_in_lockout); every attempt on a known account recorded (SignIn); password change and reset
through accounts.services.sign_in.password_set; where each role lands after signing in."""

from __future__ import annotations

import time
from urllib.parse import urlencode

from django import forms
from django.conf import settings
from django.contrib import auth, messages
from django.contrib.auth import get_user_model
from django.contrib.auth import views as auth_views
from django.shortcuts import redirect, render
from django.urls import reverse, reverse_lazy
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.cache import never_cache
from django.views.decorators.csrf import csrf_protect
from django.views.decorators.debug import sensitive_post_parameters
from django.views.decorators.http import require_http_methods
from django_otp import login as otp_login

from access.permissions import can
from accounts import sign_in_lockout
from accounts.models import Membership, SignIn
from accounts.selectors import (
    recovery_codes_left,
    user_find,
    user_has_second_factor,
    user_requires_second_factor,
    user_roles,
)
from accounts.services.sign_in import (
    lockout_notify,
    password_set,
    second_factor_match,
    second_factor_wait,
    sign_in_record,
)
from portal.middleware import client_ip

PENDING = "accounts_2fa_pending"  # {"user": id, "backend": path, "at": epoch, "next": url}
PENDING_SECONDS = 300
BAD_CREDENTIALS = (
    "bad_credentials"  # the login page says: your username (or e-mail) and password didn't match
)


class LoginForm(forms.Form):
    username = forms.CharField(label="Username or e-mail", max_length=254)
    password = forms.CharField(label="Password", max_length=4096, strip=False, widget=forms.PasswordInput)


class CodeForm(forms.Form):
    code = forms.CharField(label="Code", max_length=40)


def _address(request) -> str | None:
    # The client's address: behind nginx (PORTAL_TRUSTED_PROXIES) the one it saw, never a client-sent header.
    return client_ip(request) or None


def _agent(request) -> str:
    return request.META.get("HTTP_USER_AGENT", "")


def clean_next(request, value: str | None) -> str:
    """`value` when it is a path of this site, else "" (a bare word such as `123` would be read by redirect()
    as a view name)."""
    if (
        value
        and value.startswith("/")
        and url_has_allowed_host_and_scheme(
            value, allowed_hosts={request.get_host()}, require_https=request.is_secure()
        )
    ):
        return value
    return ""


def _safe_next(request, value: str | None) -> str:
    return clean_next(request, value) or landing_url(request.user)


def landing_url(user) -> str:
    """Where a signed-in user starts, on their own work: the chair on the chair's dashboard, an auditor on the
    audit queue, a member who only reviews on the review queue, everyone else on the dashboard."""
    if user is None or not user.is_authenticated:
        return reverse(settings.LOGIN_REDIRECT_URL)
    if can(user, "chair"):
        return reverse("review:chair_dashboard")
    if can(user, "audit"):
        return reverse("review:audit_queue")
    roles = _member_roles(user)
    if roles and roles <= {Membership.Role.REVIEWER}:
        return reverse("review:queue")
    return reverse(settings.LOGIN_REDIRECT_URL)


def _member_roles(user) -> set[str]:
    return {role for roles in user_roles(user)["organisations"].values() for role in roles}


def _lock_message(lock: sign_in_lockout.Lock) -> str:
    until = time.strftime("%H:%M", time.gmtime(lock.until))
    if lock.scope == "account":
        return (
            f"Too many failed sign-ins: this account is locked for {lock.minutes_left} more minute"
            f"{'s' if lock.minutes_left != 1 else ''} (until {until} UTC), even with the right password. "
            "Its owner has been e-mailed. Forgotten your password? Reset it below."
        )
    return (
        f"Too many failed sign-ins from your address: try again in {lock.minutes_left} minute"
        f"{'s' if lock.minutes_left != 1 else ''} (after {until} UTC)."
    )


def _failure(request, *, user, identifier: str, outcome: str) -> sign_in_lockout.Lock | None:
    """Count and record a failed attempt; e-mail the owner when it locked the account. The lock, if any."""
    account = sign_in_lockout.account_key(user, identifier)
    started = sign_in_lockout.failure_record(account=account, address=_address(request) or "")
    if user is not None:
        sign_in_record(user=user, outcome=outcome, address=_address(request), user_agent=_agent(request))
    for lock in started:
        if lock.scope == "account":
            lockout_notify(user=user, address=_address(request), minutes=lock.minutes_left)
    return started[0] if started else None


@sensitive_post_parameters("password")
@csrf_protect
@never_cache
@require_http_methods(["GET", "POST"])
def login_view(request):
    next_url = clean_next(request, request.POST.get("next") or request.GET.get("next"))
    form = LoginForm(request.POST or None)
    error = ""
    if request.method == "POST":
        if not form.is_valid():
            error = BAD_CREDENTIALS
        else:
            identifier = form.cleaned_data["username"]
            user = user_find(identifier)
            account = sign_in_lockout.account_key(user, identifier)
            lock = sign_in_lockout.lock_of(account=account, address=_address(request) or "")
            if lock is not None:
                if user is not None:
                    sign_in_record(
                        user=user,
                        outcome=SignIn.Outcome.LOCKED,
                        address=_address(request),
                        user_agent=_agent(request),
                    )
                error = _lock_message(lock)
            else:
                authenticated = auth.authenticate(
                    request, username=identifier, password=form.cleaned_data["password"]
                )
                if authenticated is None:
                    lock = _failure(
                        request, user=user, identifier=identifier, outcome=SignIn.Outcome.BAD_PASSWORD
                    )
                    error = _lock_message(lock) if lock else BAD_CREDENTIALS
                elif user_has_second_factor(authenticated):
                    request.session[PENDING] = {
                        "user": authenticated.pk,
                        "backend": authenticated.backend,
                        "at": time.time(),
                        "next": next_url,
                    }
                    return redirect("accounts:verify")
                else:
                    auth.login(request, authenticated)
                    sign_in_lockout.success_record(account=account)
                    sign_in_record(
                        user=authenticated,
                        outcome=SignIn.Outcome.SUCCESS,
                        address=_address(request),
                        user_agent=_agent(request),
                    )
                    if user_requires_second_factor(authenticated):
                        messages.warning(
                            request,
                            "Chair and auditor accounts need two-factor sign-in: set it up now to act.",
                        )
                        return redirect(f"{reverse('accounts:two_factor')}?{urlencode({'next': next_url})}")
                    return redirect(_safe_next(request, next_url))
    return render(
        request,
        "registration/login.html",
        {"form": form, "next": next_url, "error": error},
        status=200,
    )


@sensitive_post_parameters("code")
@csrf_protect
@never_cache
@require_http_methods(["GET", "POST"])
def verify_view(request):
    """The second step: a code from the authenticator app (or a recovery code). Serves a pending sign-in, or a
    signed-in session that is not verified yet."""

    pending = request.session.get(PENDING)
    if request.user.is_authenticated:
        user, backend = request.user, None
        next_url = clean_next(request, request.GET.get("next") or request.POST.get("next"))
        if request.user.is_verified():
            return redirect(_safe_next(request, next_url))
        if not user_has_second_factor(user):
            return redirect("accounts:two_factor")
    elif pending and time.time() - pending["at"] < PENDING_SECONDS:
        user = get_user_model().objects.filter(pk=pending["user"], is_active=True).first()
        backend, next_url = pending["backend"], pending.get("next", "")
        if user is None:
            return redirect("login")
    else:
        request.session.pop(PENDING, None)
        messages.error(request, "Sign in again: the two-factor step waits five minutes at most.")
        return redirect("login")
    form = CodeForm(request.POST or None)
    error = ""
    if request.method == "POST":
        account = sign_in_lockout.account_key(user, user.get_username())
        lock = sign_in_lockout.lock_of(account=account, address=_address(request) or "")
        wait = second_factor_wait(user=user) if lock is None else None
        if wait is not None:
            error = (
                f"Too many wrong codes in a row: wait until {wait:%H:%M:%S} UTC, then type the code your app "
                "shows then."
            )
        elif lock is not None:
            sign_in_record(
                user=user,
                outcome=SignIn.Outcome.LOCKED,
                address=_address(request),
                user_agent=_agent(request),
            )
            error = _lock_message(lock)
        elif (
            not form.is_valid()
            or (device := second_factor_match(user=user, code=form.cleaned_data["code"])) is None
        ):
            lock = _failure(
                request, user=user, identifier=user.get_username(), outcome=SignIn.Outcome.BAD_CODE
            )
            error = (
                _lock_message(lock)
                if lock
                else "That code does not match. Type the six digits your app shows now, or a recovery code."
            )
        else:
            if not request.user.is_authenticated:
                request.session.pop(PENDING, None)
                auth.login(request, user, backend=backend)
                sign_in_record(
                    user=user,
                    outcome=SignIn.Outcome.SUCCESS,
                    address=_address(request),
                    user_agent=_agent(request),
                )
            otp_login(request, device)
            sign_in_lockout.success_record(account=account)
            if device.__class__.__name__ == "StaticDevice":
                messages.warning(
                    request,
                    f"You signed in with a recovery code; {recovery_codes_left(user)} left. "
                    "Make new ones on your two-factor page if you are running out.",
                )
            return redirect(_safe_next(request, next_url))
    return render(
        request, "accounts/verify.html", {"form": form, "error": error, "next": next_url, "who": user}
    )


class PasswordChangeView(auth_views.PasswordChangeView):
    """Django's form; the new password is set by accounts.services.sign_in.password_set, which records the change in the
    audit log in the same transaction; the session stays signed in (and verified)."""

    success_url = reverse_lazy("password_change_done")

    def form_valid(self, form):
        password_set(
            user=form.user, password=form.cleaned_data["new_password1"], actor=self.request.user, how="change"
        )
        auth.update_session_auth_hash(self.request, form.user)
        return redirect(self.get_success_url())


class PasswordResetConfirmView(auth_views.PasswordResetConfirmView):
    """Django's reset link and form (the link's token checked by Django); the new password is set by
    accounts.services.sign_in.password_set, audited as `account.password_reset` with the account's owner as actor (the
    chair's account included) and e-mailed to the owner. No sign-in follows: the chair and auditors still need
    their second factor."""

    def form_valid(self, form):
        password_set(
            user=form.user, password=form.cleaned_data["new_password1"], actor=form.user, how="reset"
        )
        del self.request.session[auth_views.INTERNAL_RESET_SESSION_TOKEN]
        return redirect(self.get_success_url())
