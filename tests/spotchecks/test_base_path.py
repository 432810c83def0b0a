"""An endpoint declared with a base path (http://host:port/v1) is re-measured: GuideLLM, through the egress guard,
reaches the routes under that path (GuideLLM drops a target's trailing /v1; before, every request was refused
`egress-path`)."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings

from checker.cli.import_pipeline import import_runs
from portal.egress import EgressProxy
from spotchecks.runner import run_guidellm
from tests.spotchecks.support import MockEndpoint, free_port, guidellm_or_skip, spec


def test_an_endpoint_with_a_v1_base_path_is_re_measured(tmp_path: Path):
    mock = MockEndpoint(free_port(), tmp_path / "mock.log")
    mock.start(ttft_ms=50, itl_ms=5)
    try:
        with EgressProxy(f"{mock.url}/v1", allow_loopback=True) as proxy:
            output = run_guidellm(
                proxy.url,
                spec(),
                guidellm_bin=guidellm_or_skip(),
                tokenizer=str(settings.PORTAL_SPOTCHECK_TOKENIZER),
                workdir=tmp_path,
            )
    finally:
        mock.stop()
    assert proxy.record.refused == {}, proxy.record.last_refusal
    assert proxy.record.forwarded > 0
    (point,) = import_runs([output.benchmarks], tool="guidellm").points
    assert point["reported"]["requests_completed"] > 0
