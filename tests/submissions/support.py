"""Helpers for the submissions tests: the sample run archives, a benchmark and system they fit, API uploads."""

from __future__ import annotations

from rest_framework.test import APIClient

from tests.factories import (  # noqa: F401 - the tests import RUN_ARCHIVES and sha256_of from here
    RUN_ARCHIVES,
    ApiTokenFactory,
    BenchmarkFactory,
    SystemFactory,
    sha256_of,
)


def make_catalog(organisation):
    """The benchmark and system the sample run archives were made for (the system registered by `organisation`)."""
    # The catalog migration ships llama3_1-8b; transactional tests flush it, so it is made when missing.
    return BenchmarkFactory(sample=True), SystemFactory(organisation=organisation, sample=True)


def api_client(user, *, scope: str = "write") -> APIClient:
    """An API client sending a new API token of `user` (scope write unless told; anonymous for None)."""
    client = APIClient()
    if user is not None:
        client.credentials(HTTP_AUTHORIZATION=f"Token {api_token_key(user, scope=scope)}")
    return client


def api_token_key(user, *, scope: str = "write") -> str:
    """The key of a new API token of `user` (only its digest is in the database)."""
    return ApiTokenFactory(user=user, scope=scope).key


def api_upload(
    client: APIClient,
    *,
    submission_id: int,
    name: str,
    data: bytes,
    create_version=True,
    include=(),
    part_order=None,
) -> dict:
    """Start, send every part (optionally in a given order), finish; returns the finish response JSON."""
    started = client.post(
        "/api/v1/uploads/",
        {"submission": submission_id, "filename": name, "size": len(data), "sha256": sha256_of(data)},
        format="json",
    )
    assert started.status_code == 201, started.json()
    upload = started.json()
    size = upload["part_size"]
    order = part_order or range(upload["parts_expected"])
    for index in order:
        put = client.put(
            f"/api/v1/uploads/{upload['id']}/parts/{index}/",
            data[index * size : (index + 1) * size],
            content_type="application/octet-stream",
        )
        assert put.status_code == 200, put.json()
    finished = client.post(
        f"/api/v1/uploads/{upload['id']}/finish/",
        {"sha256": sha256_of(data), "create_version": create_version, "include_uploads": list(include)},
        format="json",
    )
    assert finished.status_code == 200, finished.json()
    return finished.json()


def api_upload_run_archives(client: APIClient, *, submission_id: int, paths=RUN_ARCHIVES) -> dict:
    """Every run archive as its own upload, joined into one version by the last finish."""
    ids = []
    for path in paths[:-1]:
        ids.append(
            api_upload(
                client,
                submission_id=submission_id,
                name=path.name,
                data=path.read_bytes(),
                create_version=False,
            )["upload"]["id"]
        )
    last = paths[-1]
    return api_upload(
        client, submission_id=submission_id, name=last.name, data=last.read_bytes(), include=ids
    )


# What the checker finds in the sample run archives (pinned: a rule that starts or stops firing fails the tests).
# They are short runs, so the official accuracy rule fails them; one archive alone is one load point, so the
# coverage and point-count rules fail as well.
SEVEN_ARCHIVES_ERRORS = {"accuracy-sample-count"}
_ONE_POINT = {"accuracy-coverage", "low-concurrency-coverage", "med-concurrency-coverage", "point-count"}
ONE_ARCHIVE_ERRORS = {
    "AX-8000_c1.tar.gz": _ONE_POINT
    | {"accuracy-sample-count", "high-concurrency-coverage", "offline-point-present"},
    "AX-8000_c2.tar.gz": _ONE_POINT
    | {"accuracy-present", "high-concurrency-coverage", "offline-point-present"},
    "AX-8000_c4.tar.gz": _ONE_POINT
    | {"accuracy-sample-count", "high-concurrency-coverage", "offline-point-present"},
    "AX-8000_c8.tar.gz": _ONE_POINT
    | {"accuracy-present", "high-concurrency-coverage", "offline-point-present"},
    "AX-8000_c16.tar.gz": _ONE_POINT
    | {"accuracy-sample-count", "high-concurrency-coverage", "offline-point-present"},
    "AX-8000_c32.tar.gz": _ONE_POINT
    | {"accuracy-present", "high-concurrency-coverage", "offline-point-present"},
    "AX-8000_c64.tar.gz": _ONE_POINT | {"accuracy-sample-count", "ultra-low-concurrency-coverage"},
}


def error_rules(check_run) -> set[str]:
    return set(check_run.findings.filter(severity="error").values_list("rule", flat=True))


def assert_failed_on(check_run, expected: set[str]) -> None:
    """The run finished `failed` with exactly these error rule ids."""
    assert check_run.status == "failed", (check_run.status, check_run.error_message)
    assert error_rules(check_run) == expected, sorted(error_rules(check_run))
    assert check_run.counts["error"] == check_run.findings.filter(severity="error").count()
