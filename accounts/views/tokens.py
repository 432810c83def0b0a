"""The API tokens page (/accounts/tokens/): a user's own tokens — create one (shown once), see when each was last
used, revoke any. Nobody sees or revokes anyone else's (access.visibility.api_tokens_visible_to)."""

from __future__ import annotations

from datetime import timedelta

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.timesince import timesince
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST

from access.visibility import api_tokens_visible_to, get_visible_or_404
from accounts.models import ApiToken
from accounts.services.tokens import api_token_create, api_token_revoke
from portal.errors import ApplicationError

EXPIRY_CHOICES = [
    ("7", "7 days"),
    ("30", "30 days"),
    ("90", "90 days"),
    ("365", "1 year"),
    ("never", "Never"),
]


class TokenForm(forms.Form):
    name = forms.CharField(
        max_length=100,
        help_text="What will use it, e.g. 'lab CI' or 'alice laptop'.",
        widget=forms.TextInput(attrs={"placeholder": "e.g. lab CI", "autocomplete": "off"}),
    )
    scope = forms.ChoiceField(
        choices=ApiToken.Scope.choices, initial=ApiToken.Scope.READ, widget=forms.RadioSelect
    )
    expires = forms.ChoiceField(choices=EXPIRY_CHOICES, initial="90", label="Expires after")

    def expires_in(self) -> timedelta | None:
        value = self.cleaned_data["expires"]
        return None if value == "never" else timedelta(days=int(value))


def _page(
    request, form: TokenForm, *, new_key: str | None = None, new_token: ApiToken | None = None, status=200
):
    tokens = list(api_tokens_visible_to(request.user))
    now = timezone.now()
    for token in tokens:
        if token.last_used_at is not None:
            seconds = (now - token.last_used_at).total_seconds()
            token.used_ago = "just now" if seconds < 60 else f"{timesince(token.last_used_at, now)} ago"
    response = render(
        request,
        "accounts/tokens.html",
        {
            "form": form,
            "active": [token for token in tokens if token.is_active],
            "inactive": [token for token in tokens if not token.is_active],
            "new_key": new_key,
            "new_token": new_token,
            "site_url": request.build_absolute_uri("/").rstrip("/"),
        },
        status=status,
    )
    return response


@never_cache  # the page that shows a new key must not be kept by a browser or proxy cache
@login_required
@require_http_methods(["GET", "POST"])
def tokens(request):
    if request.method == "GET":
        return _page(request, TokenForm())
    form = TokenForm(request.POST)
    if not form.is_valid():
        return _page(request, form, status=400)
    try:
        token, key = api_token_create(
            user=request.user,
            name=form.cleaned_data["name"],
            scope=form.cleaned_data["scope"],
            expires_in=form.expires_in(),
            actor=request.user,
        )
    except ApplicationError as exc:
        form.add_error(None, exc.detail)
        return _page(request, form, status=400)
    # Rendered here, never put in the session or a message: the key is shown on this response only.
    return _page(request, TokenForm(), new_key=key, new_token=token, status=201)


@login_required
@require_POST
def token_revoke(request, pk: int):
    token = get_visible_or_404(request.user, ApiToken, pk=pk)
    was_active = token.revoked_at is None
    api_token_revoke(token=token, actor=request.user)
    if was_active:
        messages.success(request, f"Token '{token.name}' revoked: requests with it are refused from now on.")
    return redirect(reverse("accounts:tokens"))
