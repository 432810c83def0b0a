"""Pages under /systems/: a submitter registers the systems their organisation submits results for, each with its
system_desc.json (checked with the checker's own loader and schema); a new description is a new revision."""

from __future__ import annotations

import json

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import Count, Q
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_POST

from access.permissions import can
from access.visibility import submissions_visible_to, systems_visible_to
from accounts.selectors import (
    user_org_ids,
)
from portal.errors import ApplicationError
from portal.pages import LoginFirst, with_login_redirect
from submissions import services
from submissions.forms import (
    SystemDescriptionForm,
    SystemRegisterForm,
)
from submissions.models import System
from submissions.selectors import (
    organisations_registering_systems,
    system_description_revisions,
)
from submissions.system_desc import system_desc_facts, system_desc_read


def _systems_page(request, *, form=None, status=200):
    user = request.user
    registrable = organisations_registering_systems(user)
    # Count only what the user may see: another organisation's drafts must not show up even as a number.
    visible_submissions = submissions_visible_to(user).values("pk")
    systems = systems_visible_to(user).annotate(
        submission_count=Count(
            "submissions", filter=Q(submissions__pk__in=visible_submissions), distinct=True
        )
    )
    own_ids = user_org_ids(user)
    return render(
        request,
        "submissions/systems.html",
        {
            "own_systems": systems.filter(organisation_id__in=own_ids).order_by("organisation__name", "name"),
            "other_systems": systems.exclude(organisation_id__in=own_ids).order_by(
                "organisation__name", "name"
            )[:500],
            "form": form
            if form is not None
            else (SystemRegisterForm(organisations=registrable) if registrable.exists() else None),
            "problems": getattr(form, "description_problems", []),
        },
        status=status,
    )


@login_required
@require_GET
def system_list(request):
    return _systems_page(request)


def _read_uploaded_description(form, field: str = "system_desc"):
    """The uploaded description, or None with the checker's findings attached to the form for the page."""
    upload = form.cleaned_data[field]
    read = system_desc_read(upload, display=getattr(upload, "name", None) or "system_desc.json")
    form.description_problems = read.problems
    if not read.ok:
        form.add_error(
            field,
            f"{len(read.problems)} problem{'s' if len(read.problems) != 1 else ''} in "
            f"{upload.name}: see the list below.",
        )
        return None
    return read.description


@login_required
@require_POST
def system_register(request):
    form = SystemRegisterForm(
        request.POST, request.FILES, organisations=organisations_registering_systems(request.user)
    )
    if not form.is_valid():
        return _systems_page(request, form=form, status=400)
    description = _read_uploaded_description(form)
    if description is None:
        return _systems_page(request, form=form, status=400)
    try:
        system = services.system_register(
            organisation=form.cleaned_data["organisation"],
            name=form.cleaned_data["name"],
            description=description,
            actor=request.user,
        )
    except ValidationError as exc:
        for field_name, errors in exc.message_dict.items():
            form.add_error("name" if field_name in ("name", "__all__", "organisation") else None, errors)
        return _systems_page(request, form=form, status=400)
    except ApplicationError as exc:
        messages.error(request, exc.detail)
        return redirect("submissions:systems")
    messages.success(request, f"System {system.name} registered. You can now create submissions for it.")
    return redirect("submissions:system_detail", pk=system.pk)


def _visible_system(request, pk: int):
    try:
        return systems_visible_to(request.user).get(pk=pk)
    except System.DoesNotExist:
        if not request.user.is_authenticated:
            raise LoginFirst from None
        raise Http404("No such system.") from None


def _system_page(request, system, *, form=None, status=200):
    can_edit = can(request.user, "describe", system)
    return render(
        request,
        "submissions/system_detail.html",
        {
            "system": system,
            "facts": system_desc_facts(system.description),
            "description_json": json.dumps(system.description, indent=2, sort_keys=False),
            "revisions": system_description_revisions(system),
            "submissions": submissions_visible_to(request.user).filter(system=system).order_by("-id")[:100],
            "can_edit": can_edit,
            "form": form if form is not None else (SystemDescriptionForm() if can_edit else None),
            "problems": getattr(form, "description_problems", []),
        },
        status=status,
    )


@with_login_redirect
@require_GET
def system_detail(request, pk: int):
    return _system_page(request, _visible_system(request, pk))


@login_required
@require_POST
def system_update_description(request, pk: int):
    system = get_object_or_404(systems_visible_to(request.user), pk=pk)
    if not can(request.user, "describe", system):
        raise PermissionDenied("Only submitters of the system's organisation can describe it.")
    form = SystemDescriptionForm(request.POST, request.FILES)
    if not form.is_valid():
        return _system_page(request, system, form=form, status=400)
    description = _read_uploaded_description(form)
    if description is None:
        return _system_page(request, system, form=form, status=400)
    try:
        system = services.system_update_description(
            system=system, description=description, actor=request.user
        )
    except ApplicationError as exc:
        messages.error(request, f"Description not updated: {exc.detail}")
    else:
        revision = system.description_revisions.order_by("-number").first()
        messages.success(
            request,
            f"Description of {system.name} updated (revision {revision.number}; changed: "
            f"{', '.join(revision.changed_keys)}).",
        )
    return redirect("submissions:system_detail", pk=system.pk)
