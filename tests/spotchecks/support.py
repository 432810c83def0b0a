"""A real endpoint for spot-checks: `guidellm mock-server` (GuideLLM 0.8.1, `make guidellm`) on loopback, and a
published result whose claimed point was measured against that same mock by the same runner the spot-check
uses, imported through checker/read/kinds/guidellm (never a relabelled MLPerf sample).

The mock is slow on purpose (TTFT 300 ms, ITL 15 ms, no spread): the machine's own noise on a loaded 2-core host
(tens of ms) stays well inside the tolerances, and the slowed mock (4 x both) falls far outside them while
its requests still complete within a short run."""

from __future__ import annotations

import socket
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest
from django.conf import settings

from checker.cli.import_pipeline import import_runs
from checker.recompute.curve import curve_of
from leaderboard.publishing.services import headline_of
from portal.egress import EgressProxy
from spotchecks.runner import LoadSpec, run_guidellm
from tests.conftest import IN_CI

ROOT = Path(__file__).resolve().parents[2]
GUIDELLM = ROOT / ".venv-guidellm" / "bin" / "guidellm"
MODEL = "mock-llama"
CONCURRENCY = 2
DURATION_S = 8
PROMPT_TOKENS, OUTPUT_TOKENS = 64, 16
NORMAL = {"ttft_ms": 300, "itl_ms": 15}
SLOWED = {"ttft_ms": 1200, "itl_ms": 60}  # 4 x: every figure falls far outside its tolerance
PORTS = range(9150, 9199)  # this suite's share of the helper's port range


def guidellm_or_skip() -> str:
    if not GUIDELLM.exists():
        message = f"GuideLLM is not installed at {GUIDELLM}: run `make guidellm`"
        if IN_CI:
            pytest.fail(f"{message} (CI must provide it)")
        pytest.skip(message)
    return str(GUIDELLM)


def free_port() -> int:
    for port in PORTS:
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port in {PORTS}")


class MockEndpoint:
    """`guidellm mock-server` on one loopback port; `start(**speed)` again after `stop()` restarts it."""

    def __init__(self, port: int, log_path: Path) -> None:
        self.port = port
        self.log_path = log_path
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, *, ttft_ms: int, itl_ms: int) -> None:
        log = open(self.log_path, "ab")  # noqa: SIM115 - the child writes it until stopped
        self.process = subprocess.Popen(
            [
                guidellm_or_skip(),
                "mock-server",
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--model",
                MODEL,
                "--ttft-ms",
                str(ttft_ms),
                "--ttft-ms-std",
                "0",
                "--itl-ms",
                str(itl_ms),
                "--itl-ms-std",
                "0",
                "--output-tokens",
                str(OUTPUT_TOKENS),
                "--output-tokens-std",
                "0",
            ],  # fmt: skip
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.close()
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the mock exited: {self.log_path.read_text()[-2000:]}")
            try:
                urllib.request.urlopen(f"{self.url}/health", timeout=2)
                return
            except OSError:
                time.sleep(0.5)
        self.stop()
        raise RuntimeError("the mock did not come up in 90 s")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None


def spec() -> LoadSpec:
    return LoadSpec(
        concurrency=CONCURRENCY,
        duration_s=DURATION_S,
        model_name=MODEL,
        prompt_tokens=PROMPT_TOKENS,
        output_tokens=OUTPUT_TOKENS,
    )


def measured_point(url: str, workdir: Path) -> dict:
    """One GuideLLM run through the egress guard against `url`, imported: the portal's figures of its point
    (the way a spot-check measures, so a claim made with it is re-measured alike)."""
    with EgressProxy(url, allow_loopback=True) as proxy:
        output = run_guidellm(
            proxy.url,
            spec(),
            guidellm_bin=guidellm_or_skip(),
            tokenizer=str(settings.PORTAL_SPOTCHECK_TOKENIZER),
            workdir=workdir,
        )
    assert output.benchmarks is not None, output.log[-3000:].decode(errors="replace")
    result = import_runs([output.benchmarks], tool="guidellm")
    (point,) = result.points
    portal = point["portal"]
    return {
        "point": f"mock/{MODEL}/c{point['concurrency']}",
        "basis": "recomputed",
        "concurrency": point["concurrency"],
        "system_tps": portal["system_tps"],
        "tps_per_user": portal["tps_per_user"],
        "ttft_p90_ms": portal["ttft_p90_ms"],
        "goodput": portal["goodput"],
    }


def claimed_curve(url: str, *, system: str, model_id: str) -> dict:
    with tempfile.TemporaryDirectory(prefix="spotcheck-claim-") as tmp:
        point = measured_point(url, Path(tmp))
    return curve_of(system=system, model=model_id, points=[point], ruleset=None)


def publish_measured(
    curve: dict, *, organisation, benchmark, endpoint_url: str, public: bool = True, stays_up: bool = True
):
    """A published result of `benchmark` whose curve is `curve`, with its endpoint declared (a credential set)."""
    from tests.factories import EndpointFactory, PublicationFactory, SubmissionFactory, SystemFactory

    system = SystemFactory(organisation=organisation, name=curve["system"])
    submission = SubmissionFactory(status="published", system=system, benchmark=benchmark)
    publication = PublicationFactory(submission=submission, curve=curve, headline=headline_of(curve))
    EndpointFactory(
        submission=submission,
        url=endpoint_url,
        model_name=MODEL,
        stays_up=stays_up,
        public=public,
        credential="sk-test-never-shown",
    )
    return publication
