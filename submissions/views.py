"""HTML pages of the submissions app: the signed-in user's dashboard."""

from django.contrib.auth.decorators import login_required
from django.shortcuts import render

from submissions.selectors import organisations_of_user, systems_visible_to, user_roles


@login_required
def dashboard(request):
    return render(
        request,
        "submissions/dashboard.html",
        {
            "organisations": organisations_of_user(request.user),
            "roles": user_roles(request.user),
            "systems": systems_visible_to(request.user),
        },
    )
