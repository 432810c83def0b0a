"""The API's groups by who uses each endpoint (plain data, read by the settings and by portal.api_schema): Swagger
and Redoc show one section per group instead of one flat list of every endpoint."""

from __future__ import annotations

# (tag, description, the first path segments under /api/v1/ it holds), in the order the docs show them.
TAG_GROUPS = (
    (
        "Public results",
        "Published results, boards, the SLO finder and exports: no sign-in needed.",
        ("public",),
    ),
    ("Benchmarks", "The benchmark catalog and its rule sets.", ("benchmarks",)),
    (
        "Systems and submissions",
        "A submitter's systems, descriptions and submissions, and their lifecycle actions.",
        ("systems", "submissions", "submission-reviewers"),
    ),
    (
        "Uploads and checks",
        "Chunked, resumable uploads; the versions they make and the checks run on them.",
        ("uploads", "versions", "check-runs"),
    ),
    (
        "Previews",
        "Another tool's output recomputed as a private preview of a system: never an MLPerf result.",
        ("previews",),
    ),
    (
        "Review",
        "Assignments, the review thread (comments and objections), reviews and waivers.",
        ("review-assignments", "review-versions", "comments", "reviews", "waivers"),
    ),
    (
        "Audit",
        "Attestations, evidence requests, spot-checks (re-measurements of a point) and the audit log.",
        ("audit", "evidence-requests", "spotchecks"),
    ),
    (
        "Chair",
        "The chair's dashboard, reviewer draws, conflicts of interest and re-checks of published results.",
        ("chair", "conflicts"),
    ),
    (
        "Account",
        "The signed-in user, notifications and their preferences.",
        ("me", "notifications", "notification-preference"),
    ),
)
_TAG_OF = {segment: tag for tag, _, segments in TAG_GROUPS for segment in segments}
OTHER = "Other"


def tag_of(path: str) -> str:
    """The group of an API path such as /api/v1/review-assignments/{id}/accept/."""
    parts = [part for part in path.split("/") if part]
    segment = parts[2] if len(parts) > 2 and parts[:2] == ["api", "v1"] else ""
    return _TAG_OF.get(segment, OTHER)


SPECTACULAR_TAGS = [{"name": tag, "description": description} for tag, description, _ in TAG_GROUPS]
