"""/accounts/two-factor/: two-factor setup with a QR code drawn here, recovery codes, turning it off."""

from __future__ import annotations

import base64
from urllib.parse import urlencode

import segno
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.debug import sensitive_post_parameters
from django.views.decorators.http import require_http_methods, require_POST
from django_otp import login as otp_login

from accounts.selectors import (
    recovery_codes_left,
    totp_device_of,
    user_requires_second_factor,
)
from accounts.services.sign_in import (
    recovery_codes_regenerate,
    totp_device_confirm,
    totp_device_start,
    two_factor_disable,
)
from accounts.views.sign_in import clean_next
from portal.errors import ApplicationError


def _qr_svg(device) -> str:
    return segno.make(device.config_url, error="m").svg_inline(scale=4, dark="#111", light="#fff")


@sensitive_post_parameters("code")
@login_required
@require_http_methods(["GET", "POST"])
def two_factor(request):
    """Status, setup (QR code, secret, a code to confirm), new recovery codes, turning it off."""
    user = request.user
    confirmed = totp_device_of(user)
    context = {
        "confirmed": confirmed,
        "required": user_requires_second_factor(user),
        "verified": user.is_verified(),
        "codes_left": recovery_codes_left(user) if confirmed else 0,
        "next": clean_next(request, request.GET.get("next") or request.POST.get("next")),
        "error": "",
    }
    if confirmed is not None and not user.is_verified():
        return redirect(f"{reverse('accounts:verify')}?{urlencode({'next': context['next']})}")
    if confirmed is None:
        device = totp_device_start(user=user)
        if request.method == "POST":
            try:
                codes = totp_device_confirm(user=user, device=device, code=request.POST.get("code", ""))
            except ApplicationError as exc:
                context["error"] = exc.detail
            else:
                device.refresh_from_db()
                otp_login(request, device)
                messages.success(request, "Two-factor sign-in is on.")
                context.update(confirmed=device, verified=True, codes=codes, codes_left=len(codes))
                return render(request, "accounts/two_factor.html", context)
        context.update(
            device=device,
            qr_svg=_qr_svg(device),
            secret=_base32(device),
        )
    return render(request, "accounts/two_factor.html", context)


def _base32(device) -> str:

    raw = base64.b32encode(device.bin_key).decode().rstrip("=")
    return " ".join(raw[i : i + 4] for i in range(0, len(raw), 4))


@login_required
@require_POST
def recovery_codes(request):
    if not request.user.is_verified():
        return redirect("accounts:verify")
    codes = recovery_codes_regenerate(user=request.user)
    messages.success(request, "New recovery codes: the old ones no longer work.")
    return render(
        request,
        "accounts/two_factor.html",
        {
            "confirmed": totp_device_of(request.user),
            "required": user_requires_second_factor(request.user),
            "verified": True,
            "codes": codes,
            "codes_left": len(codes),
        },
    )


@login_required
@require_POST
def two_factor_off(request):
    if not request.user.is_verified():
        return redirect("accounts:verify")
    if not request.user.check_password(request.POST.get("password", "")):
        messages.error(request, "That is not your password: two-factor sign-in stays on.")
        return redirect("accounts:two_factor")
    try:
        two_factor_disable(user=request.user, actor=request.user)
    except ApplicationError as exc:
        messages.error(request, exc.detail)
    else:
        messages.success(request, "Two-factor sign-in is off.")
    return redirect("accounts:account")
