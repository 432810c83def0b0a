"""What every app's pages share: an anonymous visitor of a page they may not see is sent to sign in (for any id,
existing or not, so the redirect tells nothing), and the one form for the reason a lifecycle action needs."""

from __future__ import annotations

import functools

from django import forms
from django.contrib.auth.views import redirect_to_login


class LoginFirst(Exception):
    """Raised by a page's lookup when the visitor is anonymous: `with_login_redirect` turns it into the login page."""


def with_login_redirect(view):
    @functools.wraps(view)
    def wrapped(request, *args, **kwargs):
        try:
            return view(request, *args, **kwargs)
        except LoginFirst:
            return redirect_to_login(request.get_full_path())

    return wrapped


class ReasonForm(forms.Form):
    """The reason a lifecycle action needs (withdraw, reject, waive, ...): kept on the object and in the audit log."""

    reason = forms.CharField(max_length=2000, strip=True)
