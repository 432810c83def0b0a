"""Sign in with a username or an e-mail address (accounts.selectors.user_find), checked by Django's own
password hashing."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend

from accounts.selectors import user_find


class UsernameOrEmailBackend(ModelBackend):
    def authenticate(self, request, username=None, password=None, **kwargs):
        if username is None:
            username = kwargs.get("email")
        if username is None or password is None:
            return None
        user = user_find(str(username))
        if user is None:
            # Hash anyway, so an unknown name takes as long as a wrong password (no user enumeration by timing).
            get_user_model()().set_password(password)
            return None
        if user.check_password(password) and self.user_can_authenticate(user):
            return user
        return None
