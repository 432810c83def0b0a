"""The one table of every route the portal serves, read by both matrices (issue 19, "one route table feeds both
matrices"): tests/test_permission_matrix.py asks each route of the demo world as every role in every state (its
`kind`, `pk`, `who`, `query`, `ok`), tests/test_route_matrix.py asks it of a small world of its own (its `access`
class and `url`). A route the URL conf serves and this table does not declare fails both matrices'
`test_every_route_is_declared`: declare it here, once, when it lands."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


class Access:
    """The route matrix's classes (tests/test_route_matrix.py says what each one asks of a route)."""

    PUBLIC, LOGIN, ROLE, OBJECT, LIST, FLOW = "public", "login", "role", "object", "list", "flow"
    # One object of a submission for auditors and the chair: 404 where the submission is hidden, 403 (or the
    # login page) for anyone else, whatever the state.
    OVERSEE = "oversee"
    # The submitting organisation's and the overseers' (auditors, chair): never anyone else's, never in a draft
    # for the overseers.
    SHARED = "shared"
    # One user's own rows (notifications, API tokens): 404 for everyone else, auditors and the chair included.
    OWN = "own"
    # A system: its organisation's members, auditors and the chair see it; everyone once it has a published result.
    SYSTEM = "system"
    # The reviewer's: the review of a submission, one's own assignments, the lists of review objects.
    REVIEW, MINE, REVIEW_LIST = "review", "mine", "review-list"
    # A published result's page or data; a public query page answering about published results only.
    PUBLISHED = "published-result"
    PUBLISHED_ONLY = "published-only"
    # A preview (previews/): its organisation's members only; 404 for everyone else, auditors and the chair
    # included (a preview is never a submission: there is nothing to oversee), whatever its state.
    PREVIEW = "preview"
    # A spot-check (spotchecks/): the submitting organisation's and the overseers' (never of a draft for the
    # overseers); everyone's once it is a finished re-measurement of a published curve. 404 for anyone else,
    # anonymous included.
    SPOTCHECK = "spotcheck"
    # A saved tender (leaderboard/, docs/tender-desk.md): its organisation's members only while private (404 for
    # everyone else, auditors and the chair included: it is no submission); everyone reads it once shared; only
    # its organisation's members write it, whatever its state.
    TENDER = "tender"


# --- Roles (relative to each submission) -------------------------------------------------------------
ANON, OWN, OTHER, CONFLICTED, ASSIGNED, UNASSIGNED, AUDITOR, CHAIR = (
    "anonymous",
    "own member",
    "other member",
    "conflicted reviewer",
    "assigned reviewer",
    "unassigned reviewer",
    "auditor",
    "chair",
)
ROLES = (ANON, OWN, OTHER, CONFLICTED, ASSIGNED, UNASSIGNED, AUDITOR, CHAIR)
REVIEWERS = (CONFLICTED, ASSIGNED, UNASSIGNED)
OVERSIGHT = (AUDITOR, CHAIR)


# --- The route table ----------------------------------------------------------------------------
# kind: PUBLIC (200 for all), FLOW (account flows: anyone, nothing about submissions), LOGIN (any signed-in
# user: 200; anonymous to the login page), ONLY (signed-in roles in `who`: 200, others 403/404), LIST (signed-in:
# 200, filtered), SUBJECT (one submission's object: hidden -> 404; visible -> 200 for `who`, or 403/404 for the
# others), SUBJECT_WRITE (a POST on one submission's object: hidden -> 404; visible -> anything but 404 and 5xx
# for `who`, 403/404/409/400 for the others), RESULT (a published result's public page, data, file or history:
# 200 to everyone once published, 404 to everyone before, the submitting organisation included; a POST on one:
# anonymous to the login page, anything but 404 and 5xx once published).
# `pk`: what the route's object id is (submission, version, check_run, upload, assignment, comment, waiver,
# evidence, notification, api_token, conflict, system).
# One user's own rows (world.<pk>_of: user pk -> that user's row): the user's alone, whatever the submission.
# A preview is its organisation's own (world.preview_of: user pk -> a preview of that user's organisation).
# A saved tender likewise (world.tender_of: user pk -> the uuid of a private tender of that user's organisation).
OWN_ROW_PKS = ("notification", "api_token", "preview", "tender")
# evidence, notification, conflict, system, account: fixed ids of the accounts pages).
PUBLIC, FLOW, LOGIN, ONLY, LIST, SUBJECT, SUBJECT_WRITE, RESULT = (
    "public",
    "flow",
    "login",
    "only",
    "list",
    "subject",
    "subject-write",
    "result",
)
ALL_SIGNED_IN = (OWN, OTHER, CONFLICTED, ASSIGNED, UNASSIGNED, AUDITOR, CHAIR)
SEES = ALL_SIGNED_IN  # `who` default: everyone who may see the submission


@dataclass(frozen=True)
class Route:
    kind: str
    method: str = "get"
    pk: str = "submission"
    who: tuple = SEES
    query: str = ""
    ok: tuple = (200,)  # what `who` gets when the submission is visible (GET)
    # The route matrix's: its access class, the URL in its world, the method it asks with when not `method`,
    # and the part of its file that reads the route ("" the general one, "reviewer", "leaderboard",
    # "public-query").
    access: str = ""
    url: Callable[[dict], str] | None = None
    url_method: str = ""
    group: str = ""


def _g(kind, **kw):
    return Route(kind, "get", **kw)


def _p(kind, **kw):
    return Route(kind, "post", **kw)


# The public query pages' queries (the SLO finder, the procurement report): every published result qualifies.
_SLO_QUERY = "benchmark=llama3_1-8b&ttft_p90_ms_max=100000&interactivity_min=0"
_PROCUREMENT_QUERY = "model_1=llama3_1-8b&ttft_p90_ms_max_1=100000"
_SIZING_QUERY = "benchmark=llama3_1-8b&users=100&ttft_p90_ms_max=100000&interactivity_min=0"
_CLAIMS_QUERY = "benchmark=llama3_1-8b&concurrency=64&system_tps=1000&system="
_TENDER_QUERY = "model_1=llama3_1-8b&ttft_p90_ms_max_1=100000&criterion_1=system_tps&weight_1=100"
_LEVELS_QUERY = "benchmark=llama3_1-8b&levels=0.001"


def _claims_url(path: str, w: dict) -> str:
    """The claims check names the system by its result's public id: the world's shown result is judged."""
    return f"{path}?{_CLAIMS_QUERY}{w['shown'].public_id if 'shown' in w else 'Acme_AX-8000'}"


ROUTES: dict[str, Route] = {
    "home": _g(PUBLIC, access=Access.PUBLIC, url=lambda w: "/"),
    "healthz": _g(PUBLIC, access=Access.PUBLIC, url=lambda w: "/healthz"),
    "audit:head": _g(PUBLIC, access=Access.PUBLIC, url=lambda w: "/audit/head"),
    "leaderboard:index": _g(PUBLIC, access=Access.PUBLIC, url=lambda w: "/leaderboard/"),
    "submissions:rules": _g(PUBLIC, access=Access.PUBLIC, url=lambda w: "/rules/"),
    "api-schema": _g(PUBLIC, access=Access.PUBLIC, url=lambda w: "/api/schema/"),
    "api-docs": _g(PUBLIC, access=Access.PUBLIC, url=lambda w: "/api/docs/"),
    "api-redoc": _g(PUBLIC, access=Access.PUBLIC, url=lambda w: "/api/redoc/"),
    "api:api-root": _g(PUBLIC, access=Access.PUBLIC, url=lambda w: "/api/v1/"),
    "api:benchmark-list": _g(PUBLIC, access=Access.PUBLIC, url=lambda w: "/api/v1/benchmarks/"),
    "api:benchmark-detail": _g(
        PUBLIC, pk="benchmark", access=Access.PUBLIC, url=lambda w: "/api/v1/benchmarks/llama3_1-8b/"
    ),
    "login": _g(FLOW, access=Access.FLOW, url=lambda w: "/accounts/login/"),
    "logout": _p(FLOW, access=Access.FLOW, url=lambda w: "/accounts/logout/"),
    "password_reset": _g(FLOW, access=Access.FLOW, url=lambda w: "/accounts/password_reset/"),
    "password_reset_done": _g(FLOW, access=Access.FLOW, url=lambda w: "/accounts/password_reset/done/"),
    "password_reset_confirm": _g(
        FLOW, pk="reset", access=Access.FLOW, url=lambda w: "/accounts/reset/MQ/set-password/"
    ),
    "password_reset_complete": _g(FLOW, access=Access.FLOW, url=lambda w: "/accounts/reset/done/"),
    "password_change": _g(FLOW, access=Access.LOGIN, url=lambda w: "/accounts/password_change/"),
    "password_change_done": _g(FLOW, access=Access.LOGIN, url=lambda w: "/accounts/password_change/done/"),
    "submissions:dashboard": _g(LOGIN, access=Access.LOGIN, url=lambda w: "/dashboard/"),
    "submissions:create": _p(LOGIN, access=Access.LOGIN, url=lambda w: "/submissions/new/"),
    "submissions:systems": _g(LOGIN, access=Access.LOGIN, url=lambda w: "/systems/"),
    "submissions:system_register": _p(LOGIN, access=Access.LOGIN, url=lambda w: "/systems/new/"),
    "accounts:notifications": _g(LOGIN, access=Access.LOGIN, url=lambda w: "/accounts/notifications/"),
    "accounts:notifications_read": _p(
        LOGIN, access=Access.LOGIN, url=lambda w: "/accounts/notifications/read/"
    ),
    "accounts:notification_preference": _p(
        LOGIN, access=Access.LOGIN, url=lambda w: "/accounts/notifications/preference/"
    ),
    # the account page, two-factor sign-in, e-mail change; organisations' pages for their admins and the chair
    # (the demo has no organisation admin), global roles for the chair. pk="account": fixed ids (_fixed_url).
    "accounts:account": _g(LOGIN, access=Access.LOGIN, url=lambda w: "/accounts/"),
    "admin_login": _g(FLOW, access=Access.FLOW, url=lambda w: "/admin/login/"),
    "accounts:verify": _g(FLOW, access=Access.FLOW, url=lambda w: "/accounts/login/verify/"),
    "accounts:two_factor": _g(LOGIN, access=Access.LOGIN, url=lambda w: "/accounts/two-factor/"),
    "accounts:recovery_codes": _p(
        LOGIN, access=Access.LOGIN, url=lambda w: "/accounts/two-factor/recovery-codes/"
    ),
    "accounts:two_factor_off": _p(LOGIN, access=Access.LOGIN, url=lambda w: "/accounts/two-factor/off/"),
    "accounts:email_change": _g(LOGIN, access=Access.LOGIN, url=lambda w: "/accounts/email/"),
    "accounts:email_confirm": _g(
        LOGIN, pk="account", access=Access.LOGIN, url=lambda w: "/accounts/email/confirm/not-a-token/"
    ),
    "accounts:email_verify": _g(
        LOGIN, pk="account", access=Access.LOGIN, url=lambda w: "/accounts/email/verify/not-a-token/"
    ),
    "accounts:email_verify_send": _p(LOGIN, access=Access.LOGIN, url=lambda w: "/accounts/email/verify/"),
    "accounts:organisations": _g(LOGIN, access=Access.LOGIN, url=lambda w: "/accounts/organisations/"),
    "accounts:organisation": _g(
        ONLY,
        pk="account",
        who=(CHAIR,),
        access=Access.ROLE,
        url=lambda w: "/accounts/organisations/acmecompute/",
    ),
    "accounts:invite": _p(
        ONLY,
        pk="account",
        who=(CHAIR,),
        access=Access.ROLE,
        url=lambda w: "/accounts/organisations/acmecompute/invite/",
    ),
    "accounts:invitation_withdraw": _p(
        ONLY,
        pk="account",
        who=(CHAIR,),
        access=Access.ROLE,
        url=lambda w: "/accounts/organisations/acmecompute/invitations/1/withdraw/",
    ),
    "accounts:member_roles": _p(
        ONLY,
        pk="account",
        who=(CHAIR,),
        access=Access.ROLE,
        url=lambda w: "/accounts/organisations/acmecompute/members/1/",
    ),
    "accounts:global_roles": _g(ONLY, who=(CHAIR,), access=Access.ROLE, url=lambda w: "/accounts/roles/"),
    "accounts:global_role_remove": _p(
        ONLY, pk="account", who=(CHAIR,), access=Access.ROLE, url=lambda w: "/accounts/roles/1/remove/"
    ),
    "accounts:invitation_accept": _g(
        FLOW, pk="account", access=Access.FLOW, url=lambda w: "/accounts/invitations/not-a-token/"
    ),
    "api:me": _g(LOGIN, access=Access.LOGIN, url=lambda w: "/api/v1/me/"),
    "api:notification-preference": _g(
        LOGIN, access=Access.LOGIN, url=lambda w: "/api/v1/notification-preference/"
    ),
    "api:notification-list": _g(LIST, access=Access.LOGIN, url=lambda w: "/api/v1/notifications/"),
    "api:notification-read-all": _p(
        LOGIN, access=Access.LOGIN, url=lambda w: "/api/v1/notifications/read-all/"
    ),
    "api:notification-detail": _g(
        SUBJECT,
        pk="notification",
        who=(),
        access=Access.OWN,
        url=lambda w: f"/api/v1/notifications/{w['notification'].pk}/",
    ),
    "api:notification-read": _p(
        SUBJECT_WRITE,
        pk="notification",
        who=(),
        access=Access.OWN,
        url=lambda w: f"/api/v1/notifications/{w['notification'].pk}/read/",
    ),
    "accounts:tokens": _g(LOGIN, access=Access.LOGIN, url=lambda w: "/accounts/tokens/"),
    "accounts:token_revoke": _p(
        SUBJECT_WRITE,
        pk="api_token",
        who=(),
        access=Access.OWN,
        url=lambda w: f"/accounts/tokens/{w['api_token'].pk}/revoke/",
    ),  # one user's own, like a notification
    "review:queue": _g(ONLY, who=REVIEWERS, access=Access.LOGIN, url=lambda w: "/review/"),
    "review:audit_queue": _g(ONLY, who=OVERSIGHT, access=Access.ROLE, url=lambda w: "/review/audit/"),
    "review:chair_dashboard": _g(ONLY, who=(CHAIR,), access=Access.ROLE, url=lambda w: "/review/chair/"),
    # the chair's re-checks of what is published (leaderboard.publishing.rechecks): the page with the report, start, decide
    "review:chair_rechecks": _g(
        ONLY, who=(CHAIR,), access=Access.ROLE, url=lambda w: "/review/chair/rechecks/"
    ),
    "review:chair_recheck_start": _p(
        ONLY, who=(CHAIR,), access=Access.ROLE, url=lambda w: "/review/chair/rechecks/start/"
    ),
    "review:chair_recheck_decide": _p(
        ONLY,
        pk="account",
        who=(CHAIR,),
        access=Access.ROLE,
        url=lambda w: "/review/chair/rechecks/results/1/decide/",
    ),
    "api:chair-recheck-list": _g(
        ONLY, who=(CHAIR,), access=Access.ROLE, url=lambda w: "/api/v1/chair/rechecks/"
    ),
    "api:chair-recheck-start": _p(
        ONLY, who=(CHAIR,), access=Access.ROLE, url=lambda w: "/api/v1/chair/rechecks/start/"
    ),
    "api:chair-recheck-result-list": _g(
        ONLY, who=(CHAIR,), access=Access.ROLE, url=lambda w: "/api/v1/chair/recheck-results/"
    ),
    "api:chair-recheck-result-decide": _p(
        ONLY,
        pk="account",
        who=(CHAIR,),
        access=Access.ROLE,
        url=lambda w: "/api/v1/chair/recheck-results/1/decide/",
    ),
    "review:conflicts": _g(ONLY, who=ALL_SIGNED_IN, access=Access.LOGIN, url=lambda w: "/review/conflicts/"),
    "review:conflict_declare": _p(LOGIN, access=Access.LOGIN, url=lambda w: "/review/conflicts/declare/"),
    "review:conflict_remove": _p(
        SUBJECT_WRITE,
        pk="conflict",
        who=(CHAIR,),
        access=Access.OVERSEE,
        url=lambda w: f"/review/conflicts/{w['conflict'].pk}/remove/",
    ),
    "audit:event_list": _g(ONLY, who=OVERSIGHT, access=Access.ROLE, url=lambda w: "/audit/"),
    # lists: filtered by visibility
    "api:submission-list": _g(
        LIST, query="?limit=500", access=Access.LIST, url=lambda w: "/api/v1/submissions/?limit=500"
    ),
    "api:version-list": _g(
        LIST, query="?limit=500", access=Access.LIST, url=lambda w: "/api/v1/versions/?limit=500"
    ),
    "api:check-run-list": _g(
        LIST, query="?limit=500", access=Access.LIST, url=lambda w: "/api/v1/check-runs/?limit=500"
    ),
    "api:upload-list": _g(
        LIST, query="?limit=500", access=Access.LIST, url=lambda w: "/api/v1/uploads/?limit=500"
    ),
    "api:system-list": _g(
        LIST, query="?limit=500", access=Access.SYSTEM, url=lambda w: "/api/v1/systems/?limit=500"
    ),
    "api:review-assignment-list": _g(
        LIST, access=Access.REVIEW_LIST, url=lambda w: "/api/v1/review-assignments/", group="reviewer"
    ),
    "api:review-list": _g(
        LIST, access=Access.REVIEW_LIST, url=lambda w: "/api/v1/reviews/", group="reviewer"
    ),
    "api:comment-list": _g(
        LIST, access=Access.REVIEW_LIST, url=lambda w: "/api/v1/comments/", group="reviewer"
    ),
    "api:audit-list": _g(LIST, access=Access.ROLE, url=lambda w: "/api/v1/audit/"),
    "api:evidence-request-list": _g(LIST, access=Access.LOGIN, url=lambda w: "/api/v1/evidence-requests/"),
    "api:waiver-list": _g(LIST, access=Access.LOGIN, url=lambda w: "/api/v1/waivers/"),
    "api:chair-assignment-list": _g(LIST, access=Access.ROLE, url=lambda w: "/api/v1/chair/assignments/"),
    "api:chair-dashboard-list": _g(LIST, access=Access.ROLE, url=lambda w: "/api/v1/chair/dashboard/"),
    "api:conflict-list": _g(LIST, access=Access.LOGIN, url=lambda w: "/api/v1/conflicts/"),
    "api:waiver-grant": _p(LOGIN, access=Access.LOGIN, url=lambda w: "/api/v1/waivers/grant/"),
    "api:waiver-request-group": _p(
        LOGIN, access=Access.LOGIN, url=lambda w: "/api/v1/waivers/request-group/"
    ),
    "api:waiver-decide-group": _p(LOGIN, access=Access.LOGIN, url=lambda w: "/api/v1/waivers/decide-group/"),
    "api:chair-assignment-draw": _p(
        LOGIN, access=Access.LOGIN, url=lambda w: "/api/v1/chair/assignments/draw/"
    ),
    # one submission's pages, API answers and downloads
    "submissions:detail": _g(SUBJECT, access=Access.OBJECT, url=lambda w: f"/submissions/{w['sub'].pk}/"),
    "submissions:check_fragment": _g(
        SUBJECT,
        pk="version_number",
        access=Access.OBJECT,
        url=lambda w: f"/submissions/{w['sub'].pk}/versions/1/check/",
    ),
    "submissions:download": _g(
        SUBJECT,
        pk="file",
        access=Access.OBJECT,
        url=lambda w: f"/submissions/{w['sub'].pk}/versions/1/files/0/",
    ),
    "submissions:report_json": _g(
        SUBJECT,
        pk="version_number",
        ok=(200, 409),
        access=Access.OBJECT,
        url=lambda w: f"/submissions/{w['sub'].pk}/versions/1/report.json",
    ),  # 409 before the check ends
    "submissions:summary": _g(
        SUBJECT,
        pk="version_number",
        access=Access.OBJECT,
        url=lambda w: f"/submissions/{w['sub'].pk}/versions/1/summary/",
    ),
    "submissions:compare": _g(
        SUBJECT, access=Access.OBJECT, url=lambda w: f"/submissions/{w['sub'].pk}/compare/"
    ),
    "submissions:submit": _p(
        SUBJECT_WRITE, who=(OWN,), access=Access.OBJECT, url=lambda w: f"/submissions/{w['sub'].pk}/submit/"
    ),
    "submissions:resubmit": _p(
        SUBJECT_WRITE, who=(OWN,), access=Access.OBJECT, url=lambda w: f"/submissions/{w['sub'].pk}/resubmit/"
    ),
    "submissions:withdraw": _p(
        SUBJECT_WRITE, who=(OWN,), access=Access.OBJECT, url=lambda w: f"/submissions/{w['sub'].pk}/withdraw/"
    ),
    "submissions:reject": _p(
        SUBJECT_WRITE,
        who=OVERSIGHT,
        access=Access.OBJECT,
        url=lambda w: f"/submissions/{w['sub'].pk}/reject/",
    ),
    "submissions:endpoint": _p(
        SUBJECT_WRITE, who=(OWN,), access=Access.OBJECT, url=lambda w: f"/submissions/{w['sub'].pk}/endpoint/"
    ),
    "api:submission-endpoint": _p(
        SUBJECT_WRITE,
        who=(OWN,),
        access=Access.OBJECT,
        url=lambda w: f"/api/v1/submissions/{w['sub'].pk}/endpoint/",
    ),
    "submissions:recheck": _p(
        SUBJECT_WRITE,
        pk="version_number",
        who=(OWN, *OVERSIGHT),
        access=Access.OBJECT,
        url=lambda w: f"/submissions/{w['sub'].pk}/versions/1/recheck/",
    ),
    "api:submission-detail": _g(
        SUBJECT, access=Access.OBJECT, url=lambda w: f"/api/v1/submissions/{w['sub'].pk}/"
    ),
    "api:submission-submit": _p(
        SUBJECT_WRITE,
        who=(OWN,),
        access=Access.OBJECT,
        url=lambda w: f"/api/v1/submissions/{w['sub'].pk}/submit/",
    ),
    "api:submission-withdraw": _p(
        SUBJECT_WRITE,
        who=(OWN,),
        access=Access.OBJECT,
        url=lambda w: f"/api/v1/submissions/{w['sub'].pk}/withdraw/",
    ),
    "api:submission-reject": _p(
        SUBJECT_WRITE,
        who=OVERSIGHT,
        access=Access.OBJECT,
        url=lambda w: f"/api/v1/submissions/{w['sub'].pk}/reject/",
    ),
    "api:submission-resubmit": _p(
        SUBJECT_WRITE,
        who=(OWN,),
        access=Access.OBJECT,
        url=lambda w: f"/api/v1/submissions/{w['sub'].pk}/resubmit/",
    ),
    "api:submission-extend": _p(
        SUBJECT_WRITE,
        who=(OWN,),
        access=Access.OBJECT,
        url=lambda w: f"/api/v1/submissions/{w['sub'].pk}/extend/",
    ),
    "api:version-detail": _g(
        SUBJECT, pk="version", access=Access.OBJECT, url=lambda w: f"/api/v1/versions/{w['version'].pk}/"
    ),
    "api:version-file": _g(
        SUBJECT,
        pk="version_file",
        access=Access.OBJECT,
        url=lambda w: f"/api/v1/versions/{w['version'].pk}/files/0/",
    ),
    "api:version-recheck": _p(
        SUBJECT_WRITE,
        pk="version",
        who=(OWN, *OVERSIGHT),
        access=Access.OBJECT,
        url=lambda w: f"/api/v1/versions/{w['version'].pk}/recheck/",
    ),
    "api:check-run-detail": _g(
        SUBJECT, pk="check_run", access=Access.OBJECT, url=lambda w: f"/api/v1/check-runs/{w['run'].pk}/"
    ),
    # upload sessions stay with the organisation, even once published
    "api:upload-detail": _g(
        SUBJECT,
        pk="upload",
        who=(OWN,),
        access=Access.OBJECT,
        url=lambda w: f"/api/v1/uploads/{w['upload'].pk}/",
    ),
    "api:upload-finish": _p(
        SUBJECT_WRITE,
        pk="upload",
        who=(OWN,),
        access=Access.OBJECT,
        url=lambda w: f"/api/v1/uploads/{w['upload'].pk}/finish/",
    ),
    "api:upload-part": Route(
        SUBJECT_WRITE,
        "put",
        pk="upload_part",
        who=(OWN,),
        access=Access.OBJECT,
        url=lambda w: f"/api/v1/uploads/{w['upload'].pk}/parts/0/",
    ),
    "api:upload-sign": _p(
        SUBJECT_WRITE,
        pk="upload",
        who=(OWN,),
        access=Access.OBJECT,
        url=lambda w: f"/api/v1/uploads/{w['upload'].pk}/sign/",
    ),
    # Previews (previews/): the organisation's own; the list and the upload are any signed-in user's page (a
    # user of no organisation sees an empty list and no form).
    "previews:list": _g(LOGIN, access=Access.LOGIN, url=lambda w: "/previews/"),
    "previews:detail": _g(
        SUBJECT, pk="preview", who=(), access=Access.PREVIEW, url=lambda w: f"/previews/{w['preview'].pk}/"
    ),
    "previews:recheck": _p(
        SUBJECT_WRITE,
        pk="preview",
        who=(),
        access=Access.PREVIEW,
        url=lambda w: f"/previews/{w['preview'].pk}/recheck/",
    ),
    "previews:delete": _p(
        SUBJECT_WRITE,
        pk="preview",
        who=(),
        access=Access.PREVIEW,
        url=lambda w: f"/previews/{w['preview'].pk}/delete/",
    ),
    "api:preview-list": _g(LIST, access=Access.LOGIN, url=lambda w: "/api/v1/previews/"),
    "api:preview-detail": _g(
        SUBJECT,
        pk="preview",
        who=(),
        access=Access.PREVIEW,
        url=lambda w: f"/api/v1/previews/{w['preview'].pk}/",
    ),
    "api:preview-recheck": _p(
        SUBJECT_WRITE,
        pk="preview",
        who=(),
        access=Access.PREVIEW,
        url=lambda w: f"/api/v1/previews/{w['preview'].pk}/recheck/",
    ),
    "submissions:system_detail": _g(
        SUBJECT, pk="system", access=Access.SYSTEM, url=lambda w: f"/systems/{w['system'].pk}/"
    ),
    "submissions:system_update_description": _p(
        SUBJECT_WRITE,
        pk="system",
        who=(OWN,),
        access=Access.SYSTEM,
        url=lambda w: f"/systems/{w['system'].pk}/description/",
    ),
    "api:system-detail": _g(
        SUBJECT, pk="system", access=Access.SYSTEM, url=lambda w: f"/api/v1/systems/{w['system'].pk}/"
    ),
    "api:system-update-description": _p(
        SUBJECT_WRITE,
        pk="system",
        who=(OWN,),
        access=Access.SYSTEM,
        url=lambda w: f"/api/v1/systems/{w['system'].pk}/description/",
    ),
    # the reviewer's pages and API
    "review:review_page": _g(
        SUBJECT,
        who=(ASSIGNED, *OVERSIGHT),
        access=Access.REVIEW,
        url=lambda w: f"/review/submissions/{w['sub'].pk}/",
        group="reviewer",
    ),
    "review:review_create": _p(
        SUBJECT_WRITE,
        who=(ASSIGNED,),
        access=Access.REVIEW,
        url=lambda w: f"/review/submissions/{w['sub'].pk}/review/",
        group="reviewer",
    ),
    # the submitter writes through review:submitter_comment, and may post here too (the same comment, never an
    # objection) while the thread is open; a draft has no thread (404 for its own members too)
    "review:comment_create": _p(
        SUBJECT_WRITE,
        who=(OWN, ASSIGNED, *OVERSIGHT),
        access=Access.REVIEW,
        url=lambda w: f"/review/submissions/{w['sub'].pk}/comments/",
        group="reviewer",
    ),
    "review:objection_close": _p(
        SUBJECT_WRITE,
        pk="comment",
        who=(ASSIGNED, CHAIR),
        access=Access.REVIEW,
        url=lambda w: f"/review/submissions/{w['sub'].pk}/comments/{w['comment'].pk}/close/",
        group="reviewer",
    ),
    "review:file_browser": _g(
        SUBJECT,
        pk="file",
        who=(ASSIGNED, *OVERSIGHT),
        access=Access.REVIEW,
        url=lambda w: f"/review/submissions/{w['sub'].pk}/versions/1/files/0/",
        group="reviewer",
    ),
    "review:assignment_accept": _p(
        SUBJECT_WRITE,
        pk="assignment",
        who=(ASSIGNED,),
        access=Access.MINE,
        url=lambda w: f"/review/assignments/{w['assignment'].pk}/accept/",
        group="reviewer",
    ),
    "review:assignment_decline": _p(
        SUBJECT_WRITE,
        pk="assignment",
        who=(ASSIGNED,),
        access=Access.MINE,
        url=lambda w: f"/review/assignments/{w['assignment'].pk}/decline/",
        group="reviewer",
    ),
    "api:review-assignment-detail": _g(
        SUBJECT,
        pk="assignment",
        who=(ASSIGNED,),
        access=Access.MINE,
        url=lambda w: f"/api/v1/review-assignments/{w['assignment'].pk}/",
        group="reviewer",
    ),
    "api:review-assignment-accept": _p(
        SUBJECT_WRITE,
        pk="assignment",
        who=(ASSIGNED,),
        access=Access.MINE,
        url=lambda w: f"/api/v1/review-assignments/{w['assignment'].pk}/accept/",
        group="reviewer",
    ),
    "api:review-assignment-decline": _p(
        SUBJECT_WRITE,
        pk="assignment",
        who=(ASSIGNED,),
        access=Access.MINE,
        url=lambda w: f"/api/v1/review-assignments/{w['assignment'].pk}/decline/",
        group="reviewer",
    ),
    "api:comment-detail": _g(
        SUBJECT,
        pk="comment",
        who=(OWN, ASSIGNED, *OVERSIGHT),
        access=Access.REVIEW,
        url=lambda w: f"/api/v1/comments/{w['comment'].pk}/",
        group="reviewer",
    ),
    "api:comment-close": _p(
        SUBJECT_WRITE,
        pk="comment",
        who=(ASSIGNED, CHAIR),
        access=Access.REVIEW,
        url=lambda w: f"/api/v1/comments/{w['comment'].pk}/close/",
        group="reviewer",
    ),
    # 400 no-version-to-compare on a first version
    "api:review-version-diff": _g(
        SUBJECT,
        pk="version",
        who=(ASSIGNED, *OVERSIGHT),
        ok=(200, 400),
        access=Access.REVIEW,
        url=lambda w: f"/api/v1/review-versions/{w['version2'].pk}/diff/",
        group="reviewer",
    ),
    "api:review-version-files": _g(
        SUBJECT,
        pk="version",
        who=(ASSIGNED, *OVERSIGHT),
        access=Access.REVIEW,
        url=lambda w: f"/api/v1/review-versions/{w['version'].pk}/files/",
        group="reviewer",
    ),
    "api:review-version-lines": _g(
        SUBJECT,
        pk="version_file",
        who=(ASSIGNED, *OVERSIGHT),
        query="?path=c1/report.txt",
        ok=(200, 400),
        access=Access.REVIEW,
        url=lambda w: f"/api/v1/review-versions/{w['version'].pk}/files/0/lines/?member=bundle",
        group="reviewer",
    ),
    # the submitter's side of the thread: comments and answers, waiver requests, evidence answers
    "review:submitter_comment": _p(
        SUBJECT_WRITE,
        who=(OWN,),
        access=Access.SHARED,
        url=lambda w: f"/review/submissions/{w['sub'].pk}/thread/",
    ),
    "review:waiver_request": _p(
        SUBJECT_WRITE,
        who=(OWN,),
        access=Access.SHARED,
        url=lambda w: f"/review/submissions/{w['sub'].pk}/waivers/",
    ),
    "review:evidence_answer": _p(
        SUBJECT_WRITE,
        pk="evidence",
        who=(OWN,),
        access=Access.SHARED,
        url=lambda w: f"/review/evidence/{w['evidence'].pk}/answer/",
    ),
    # the auditor's and the chair's
    "review:attestation": _g(
        SUBJECT, who=OVERSIGHT, access=Access.OVERSEE, url=lambda w: f"/review/audit/{w['sub'].pk}/"
    ),
    "review:attest": _p(
        SUBJECT_WRITE,
        who=(AUDITOR,),
        access=Access.OVERSEE,
        url=lambda w: f"/review/audit/{w['sub'].pk}/attest/",
    ),
    "review:evidence_request": _p(
        SUBJECT_WRITE,
        who=(AUDITOR,),
        access=Access.OVERSEE,
        url=lambda w: f"/review/audit/{w['sub'].pk}/evidence/",
    ),
    "review:audit_reject": _p(
        SUBJECT_WRITE,
        who=OVERSIGHT,
        access=Access.OVERSEE,
        url=lambda w: f"/review/audit/{w['sub'].pk}/reject/",
    ),
    "review:audit_recheck": _p(
        SUBJECT_WRITE,
        who=OVERSIGHT,
        access=Access.OVERSEE,
        url=lambda w: f"/review/audit/{w['sub'].pk}/recheck/",
    ),
    "review:waiver_grant": _p(
        SUBJECT_WRITE,
        who=OVERSIGHT,
        access=Access.OVERSEE,
        url=lambda w: f"/review/audit/{w['sub'].pk}/waive/",
    ),
    # spot-checks on the audit page (docs/remeasurement.md): start one, the polled panel, a raw output
    "review:spotcheck_start": _p(
        SUBJECT_WRITE,
        who=OVERSIGHT,
        access=Access.OVERSEE,
        url=lambda w: f"/review/audit/{w['sub'].pk}/spotchecks/start/",
    ),
    "review:spotcheck_panel": _g(
        SUBJECT,
        who=OVERSIGHT,
        access=Access.OVERSEE,
        url=lambda w: f"/review/audit/{w['sub'].pk}/spotchecks/",
    ),
    "review:spotcheck_evidence": _g(
        SUBJECT,
        pk="spotcheck",
        who=OVERSIGHT,
        access=Access.OVERSEE,
        url=lambda w: f"/review/audit/{w['sub'].pk}/spotchecks/{w['spotcheck'].pk}/evidence/0/",
    ),
    "api:spotcheck-list": _g(LIST, access=Access.LIST, url=lambda w: "/api/v1/spotchecks/"),
    "api:spotcheck-detail": _g(
        SUBJECT,
        pk="spotcheck_api",
        access=Access.SPOTCHECK,
        url=lambda w: f"/api/v1/spotchecks/{w['spotcheck'].pk}/",
    ),
    "review:waiver_decide": _p(
        SUBJECT_WRITE,
        pk="waiver",
        who=OVERSIGHT,
        access=Access.OVERSEE,
        url=lambda w: f"/review/waivers/{w['waiver'].pk}/decide/",
    ),
    "review:chair_submission": _g(
        SUBJECT,
        who=(CHAIR,),
        access=Access.OVERSEE,
        url=lambda w: f"/review/chair/submissions/{w['sub'].pk}/",
    ),
    "review:chair_assign": _p(
        SUBJECT_WRITE,
        who=(CHAIR,),
        access=Access.OVERSEE,
        url=lambda w: f"/review/chair/submissions/{w['sub'].pk}/assign/",
    ),
    "review:chair_draw": _p(
        SUBJECT_WRITE,
        who=(CHAIR,),
        access=Access.OVERSEE,
        url=lambda w: f"/review/chair/submissions/{w['sub'].pk}/draw/",
    ),
    "review:chair_release": _p(
        SUBJECT_WRITE,
        pk="assignment",
        who=(CHAIR,),
        access=Access.OVERSEE,
        url=lambda w: f"/review/chair/assignments/{w['assignment'].pk}/release/",
    ),
    "api:audit-detail": _g(
        SUBJECT, who=OVERSIGHT, access=Access.OVERSEE, url=lambda w: f"/api/v1/audit/{w['sub'].pk}/"
    ),
    "api:audit-attest": _p(
        SUBJECT_WRITE,
        who=(AUDITOR,),
        access=Access.OVERSEE,
        url=lambda w: f"/api/v1/audit/{w['sub'].pk}/attest/",
    ),
    "api:audit-recheck": _p(
        SUBJECT_WRITE,
        who=OVERSIGHT,
        access=Access.OVERSEE,
        url=lambda w: f"/api/v1/audit/{w['sub'].pk}/recheck/",
    ),
    "api:audit-request-evidence": _p(
        SUBJECT_WRITE,
        who=(AUDITOR,),
        access=Access.OVERSEE,
        url=lambda w: f"/api/v1/audit/{w['sub'].pk}/request-evidence/",
    ),
    "api:evidence-request-detail": _g(
        SUBJECT,
        pk="evidence",
        who=(OWN, *OVERSIGHT),
        access=Access.SHARED,
        url=lambda w: f"/api/v1/evidence-requests/{w['evidence'].pk}/",
    ),
    "api:evidence-request-answer": _p(
        SUBJECT_WRITE,
        pk="evidence",
        who=(OWN,),
        access=Access.SHARED,
        url=lambda w: f"/api/v1/evidence-requests/{w['evidence'].pk}/answer/",
    ),
    "api:waiver-detail": _g(
        SUBJECT, pk="waiver", access=Access.SHARED, url=lambda w: f"/api/v1/waivers/{w['waiver'].pk}/"
    ),
    "api:waiver-decide": _p(
        SUBJECT_WRITE,
        pk="waiver",
        who=OVERSIGHT,
        access=Access.OVERSEE,
        url=lambda w: f"/api/v1/waivers/{w['waiver'].pk}/decide/",
    ),
    "api:chair-assignment-release": _p(
        SUBJECT_WRITE,
        pk="assignment",
        who=(CHAIR,),
        access=Access.OVERSEE,
        url=lambda w: f"/api/v1/chair/assignments/{w['assignment'].pk}/release/",
    ),
    "api:conflict-detail": _g(
        SUBJECT,
        pk="conflict",
        who=(CHAIR, AUDITOR),
        access=Access.OVERSEE,
        url=lambda w: f"/api/v1/conflicts/{w['conflict'].pk}/",
    ),
    "api:submission-reviewer-list": _g(
        LIST, access=Access.LIST, url=lambda w: "/api/v1/submission-reviewers/?limit=500"
    ),
    # the public leaderboard: published results only, to everyone (DESIGN.md "Visibility", anonymous row)
    "leaderboard:benchmark": _g(
        PUBLIC,
        pk="benchmark",
        access=Access.PUBLIC,
        url=lambda w: "/leaderboard/llama3_1-8b/",
        group="leaderboard",
    ),
    "leaderboard:compare": _g(
        PUBLIC,
        pk="compare",
        access=Access.PUBLISHED,
        url=lambda w: f"/leaderboard/{w['model']}/compare/?ids={w['ids']}",
        group="leaderboard",
    ),
    "leaderboard:slo": _g(
        PUBLIC,
        query="?benchmark=llama3_1-8b&ttft_p90_ms_max=1000000&interactivity_min=0",
        access=Access.PUBLIC,
        url=lambda w: f"/leaderboard/slo/?{_SLO_QUERY}",
        group="public-query",
    ),
    "leaderboard:procurement": _g(
        PUBLIC,
        query="?model_1=llama3_1-8b",
        access=Access.PUBLIC,
        url=lambda w: f"/leaderboard/procurement/?{_PROCUREMENT_QUERY}",
        group="public-query",
    ),
    "leaderboard:sizing": _g(
        PUBLIC,
        query="?benchmark=llama3_1-8b&users=100&ttft_p90_ms_max=1000000&interactivity_min=0",
        access=Access.PUBLIC,
        url=lambda w: f"/leaderboard/sizing/?{_SIZING_QUERY}",
        group="public-query",
    ),
    "api:public-sizing-list": _g(
        PUBLIC,
        query="?benchmark=llama3_1-8b&users=100&ttft_p90_ms_max=1000000&interactivity_min=0",
        access=Access.PUBLIC,
        url=lambda w: f"/api/v1/public/sizing/?{_SIZING_QUERY}",
        group="public-query",
    ),
    "leaderboard:claims": _g(
        PUBLIC,
        query="?benchmark=llama3_1-8b&system=Acme_AX-8000&concurrency=64&system_tps=1000",
        access=Access.PUBLIC,
        url=lambda w: _claims_url("/leaderboard/claims/", w),
        group="public-query",
    ),
    "api:public-claims-list": _g(
        PUBLIC,
        query="?benchmark=llama3_1-8b&system=Acme_AX-8000&concurrency=64&system_tps=1000",
        access=Access.PUBLIC,
        url=lambda w: _claims_url("/api/v1/public/claims/", w),
        group="public-query",
    ),
    "leaderboard:tender_score": _g(
        PUBLIC,
        query="?model_1=llama3_1-8b&ttft_p90_ms_max_1=100000&criterion_1=system_tps&weight_1=100",
        access=Access.PUBLIC,
        url=lambda w: f"/leaderboard/tender/?{_TENDER_QUERY}",
        group="public-query",
    ),
    "api:public-tender-score-list": _g(
        PUBLIC,
        query="?model_1=llama3_1-8b&ttft_p90_ms_max_1=100000&criterion_1=system_tps&weight_1=100",
        access=Access.PUBLIC,
        url=lambda w: f"/api/v1/public/tender-score/?{_TENDER_QUERY}",
        group="public-query",
    ),
    # Saved tenders: saving is any signed-in user's POST (a user of no organisation is refused with a sentence);
    # each saved tender's page, printable page and CSV, and its writes, are its organisation's (Access.TENDER).
    "leaderboard:tender_save": _p(LOGIN, access=Access.LOGIN, url=lambda w: "/leaderboard/tender/save/"),
    **{
        f"leaderboard:tender_saved{suffix}": (_g if method == "get" else _p)(
            SUBJECT if method == "get" else SUBJECT_WRITE,
            pk="tender",
            who=(),
            access=Access.TENDER,
            url=lambda w, path=path: f"/leaderboard/tender/{w['tender'].uuid}/{path}",
        )
        for suffix, method, path in (
            ("", "get", ""),
            ("_print", "get", "print/"),
            ("_csv", "get", "score-sheet.csv"),
            ("_edit", "post", "edit/"),
            ("_share", "post", "share/"),
            ("_unshare", "post", "unshare/"),
            ("_delete", "post", "delete/"),
        )
    },
    "leaderboard:levels": _g(
        PUBLIC,
        query="?benchmark=llama3_1-8b&levels=0.001",
        access=Access.PUBLIC,
        url=lambda w: f"/leaderboard/levels/?{_LEVELS_QUERY}",
        group="public-query",
    ),
    "api:public-levels-list": _g(
        PUBLIC,
        query="?benchmark=llama3_1-8b&levels=0.001",
        access=Access.PUBLIC,
        url=lambda w: f"/api/v1/public/levels/?{_LEVELS_QUERY}",
        group="public-query",
    ),
    "api:public-benchmark-list": _g(
        PUBLIC, access=Access.PUBLIC, url=lambda w: "/api/v1/public/benchmarks/", group="public-query"
    ),
    "api:public-benchmark-detail": _g(
        PUBLIC,
        pk="benchmark",
        access=Access.PUBLIC,
        url=lambda w: "/api/v1/public/benchmarks/llama3_1-8b/",
        group="public-query",
    ),
    "api:public-result-list": _g(
        PUBLIC,
        query="?limit=500",
        access=Access.PUBLIC,
        url=lambda w: "/api/v1/public/results/",
        group="public-query",
    ),
    "api:public-point-list": _g(
        PUBLIC,
        query="?limit=500",
        access=Access.PUBLIC,
        url=lambda w: "/api/v1/public/points/",
        group="public-query",
    ),
    "api:public-curve-list": _g(
        PUBLIC,
        query="?limit=500",
        access=Access.PUBLIC,
        url=lambda w: "/api/v1/public/curves/",
        group="public-query",
    ),
    "api:public-slo-list": _g(
        PUBLIC,
        query="?benchmark=llama3_1-8b&ttft_p90_ms_max=1000000&interactivity_min=0",
        access=Access.PUBLIC,
        url=lambda w: f"/api/v1/public/slo/?{_SLO_QUERY}",
        group="public-query",
    ),
    "api:public-procurement-list": _g(
        PUBLIC,
        query="?model_1=llama3_1-8b",
        access=Access.PUBLIC,
        url=lambda w: f"/api/v1/public/procurement/?{_PROCUREMENT_QUERY}",
        group="public-query",
    ),
    "api:public-result-detail": _g(
        RESULT,
        pk="public_id",
        access=Access.PUBLISHED_ONLY,
        url=lambda w: f"/api/v1/public/results/{w['embargoed'].public_id}/",
        group="public-query",
    ),
    "results:detail": _g(
        RESULT,
        pk="public_id",
        access=Access.PUBLISHED,
        url=lambda w: f"/results/{w['public_id']}/",
        group="leaderboard",
    ),
    "results:data_json": _g(
        RESULT,
        pk="public_id",
        access=Access.PUBLISHED,
        url=lambda w: f"/results/{w['public_id']}/points.json",
        group="leaderboard",
    ),
    "results:data_csv": _g(
        RESULT,
        pk="public_id",
        access=Access.PUBLISHED,
        url=lambda w: f"/results/{w['public_id']}/points.csv",
        group="leaderboard",
    ),
    "results:file": _g(
        RESULT,
        pk="public_file",
        access=Access.PUBLISHED,
        url=lambda w: f"/results/{w['public_id']}/files/0/",
        group="leaderboard",
    ),
    # a published revision's (an annotation's, a retraction's) evidence pack: public once published (docs/evidence.md)
    "results:evidence_pack": _g(
        RESULT,
        pk="public_pack",
        access=Access.PUBLISHED,
        url=lambda w: f"/results/{w['public_id']}/revisions/1/evidence-pack/",
        group="leaderboard",
    ),
    "results:annotation_evidence_pack": _g(
        RESULT,
        pk="public_annotation_pack",
        access=Access.PUBLISHED,
        url=lambda w: f"/results/{w['public_id']}/annotations/{w['annotation_id']}/evidence-pack/",
        group="leaderboard",
    ),
    # the public transparency log: public facts only, the same for everyone
    "log:checkpoint": _g(PUBLIC, access=Access.PUBLIC, url=lambda w: "/log/checkpoint", group="log"),
    "log:checkpoint_at": _g(
        PUBLIC, pk="log", access=Access.PUBLIC, url=lambda w: "/log/checkpoints/1", group="log"
    ),
    "log:keys": _g(PUBLIC, access=Access.PUBLIC, url=lambda w: "/log/keys", group="log"),
    "log:leaf": _g(PUBLIC, pk="log", access=Access.PUBLIC, url=lambda w: "/log/leaves/0", group="log"),
    "log:proof_inclusion": _g(
        PUBLIC,
        query="?index=0&size=2",
        access=Access.PUBLIC,
        url=lambda w: "/log/proof/inclusion?index=0&size=2",
        group="log",
    ),
    "log:proof_consistency": _g(
        PUBLIC,
        query="?old=1&new=2",
        access=Access.PUBLIC,
        url=lambda w: "/log/proof/consistency?old=1&new=2",
        group="log",
    ),
    # a published result's re-measurement evidence: public once published, when the endpoint is public
    "remeasurements:acceptance": _g(
        RESULT,
        pk="public_id",
        access=Access.PUBLISHED,
        url=lambda w: f"/results/{w['public_id']}/acceptance/",
        group="leaderboard",
    ),
    "remeasurements:evidence": _g(
        RESULT,
        pk="public_spotcheck",
        access=Access.PUBLISHED,
        url=lambda w: f"/results/{w['public_id']}/remeasurements/{w['spotcheck_id']}/evidence/0/",
        group="leaderboard",
    ),
    "results:system_history": _g(
        RESULT,
        pk="system_history",
        access=Access.PUBLISHED,
        url=lambda w: f"/systems/{w['system_id']}/history/",
        group="leaderboard",
    ),
    "results:challenge": _p(
        RESULT,
        pk="public_id",
        access=Access.LOGIN,
        url=lambda w: "/results/EP-000001/challenge/",
        group="leaderboard",
    ),
    # the chair resolves; the challenger's and the challenged organisations see it (a redirect with a message)
    "results:challenge_resolve": _p(
        SUBJECT_WRITE,
        pk="challenge",
        who=(CHAIR,),
        access=Access.LOGIN,
        url=lambda w: "/results/challenges/1/resolve/",
        group="leaderboard",
    ),
    # the publication date is chosen by the submitting organisation's submitters, on an audited submission
    "leaderboard:publication_choose": _p(
        SUBJECT_WRITE,
        who=(OWN,),
        access=Access.LOGIN,
        url=lambda w: "/leaderboard/submissions/1/publish/",
        group="leaderboard",
    ),
    "leaderboard:extension_open": _p(
        SUBJECT_WRITE,
        who=(OWN,),
        access=Access.LOGIN,
        url=lambda w: "/leaderboard/submissions/1/extend/",
        group="leaderboard",
    ),
}
