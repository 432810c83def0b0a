"""Running GuideLLM 0.8.1 at one concurrency for a set time against one URL (the egress guard's `proxy.url`).

Plain Python (no Django): the spot-check service passes every setting in, and the tests and bench/ scripts run it
the same way, so a claim made with it and its re-measurement are made alike. GuideLLM runs in its own venv
(`make guidellm`) as a child process with a scrubbed environment (no credential, no proxy variables, offline
Hugging Face): it only ever talks to the loopback proxy, which adds the credential itself.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

LOG_TAIL_BYTES = 64 * 1024


@dataclass(frozen=True)
class LoadSpec:
    """What one spot-check asks of GuideLLM: streams, seconds, synthetic prompts of a size, the model name."""

    concurrency: int
    duration_s: int
    model_name: str
    prompt_tokens: int = 128
    output_tokens: int = 128
    seed: int = 42
    read_timeout_s: float = 60.0


@dataclass(frozen=True)
class RunOutput:
    returncode: int | None  # None: GuideLLM was stopped after its time ran out
    benchmarks: Path | None  # benchmarks.json, when GuideLLM wrote one
    log: bytes  # the tail of its output (kept as evidence)


def scenario(url: str, spec: LoadSpec, *, tokenizer: str) -> dict:
    """GuideLLM's scenario for one point. `url` is the API's base, the declared path kept: the routes carry that
    path (GuideLLM drops a target's trailing /v1, so the target is the origin alone), and a base ending in /v1
    takes the routes without their /v1. No health probe (an API's base path rarely serves /health), no
    redirect followed, HTTP/1.1 (what the guard speaks)."""
    parts = urlsplit(url)
    base_path = parts.path.strip("/")
    prefix = f"{base_path}/" if base_path.rpartition("/")[2] == "v1" else f"{base_path}/v1/".lstrip("/")
    return {
        "backend": {
            "kind": "openai_http",
            "target": f"{parts.scheme}://{parts.netloc}",
            "model": spec.model_name,
            "request_format": "/v1/chat/completions",
            "api_routes": {
                "/v1/chat/completions": f"{prefix}chat/completions",
                "/v1/models": f"{prefix}models",
            },
            "validate_backend": False,
            "follow_redirects": False,
            "http2": False,
            "timeout": spec.read_timeout_s,
        },
        "profile": {"kind": "concurrent", "streams": spec.concurrency},
        "data": [
            {
                "kind": "synthetic_text",
                "prompt_tokens": spec.prompt_tokens,
                "output_tokens": spec.output_tokens,
            }
        ],
        "tokenizer": {"kind": "huggingface_auto", "model": tokenizer},
        "constraints": [{"kind": "max_duration", "seconds": spec.duration_s}],
        "seed": {"kind": "static", "value": spec.seed},
        "metrics": {"kind": "generative", "sample_size": 0},
        "outputs": [{"kind": "json", "path": "benchmarks.json"}],
    }


def not_installed(guidellm_bin: str) -> str:
    """Why re-measurement cannot run on this machine, with the command that adds it; "" when GuideLLM is there."""
    path = Path(guidellm_bin)
    if path.is_file() and os.access(path, os.X_OK):
        return ""
    return (
        f"Re-measurement is not installed here: GuideLLM was not found at {guidellm_bin}. Add it with `make "
        "guidellm` (GuideLLM 0.8.1 in .venv-guidellm, beside the portal's own venv), or point PORTAL_GUIDELLM_BIN "
        "at a guidellm 0.8.1 executable, on the machine that runs the spot-check worker."
    )


def run_guidellm(url: str, spec: LoadSpec, *, guidellm_bin: str, tokenizer: str, workdir: Path) -> RunOutput:
    """Run GuideLLM once in `workdir`; its time is bounded (the duration plus its start-up and wind-down)."""
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "scenario.json").write_text(json.dumps({"spec": scenario(url, spec, tokenizer=tokenizer)}))
    env = {
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "HF_HUB_DISABLE_TELEMETRY": "1",
        "PATH": "/usr/bin:/bin",
        "HOME": str(workdir),
        "LANG": os.environ.get("LANG", "C.UTF-8"),
    }
    log_path = workdir / "guidellm.log"
    returncode: int | None
    with open(log_path, "wb") as log:
        # A process group of its own: GuideLLM's worker processes go with it when its time runs out.
        process = subprocess.Popen(
            [guidellm_bin, "run", "--scenario", "scenario.json", "--disable-console-interactive"],
            cwd=workdir,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            returncode = process.wait(timeout=spec.duration_s + 180)
        except subprocess.TimeoutExpired:
            returncode = None
        finally:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
    data = log_path.read_bytes()
    benchmarks = workdir / "benchmarks.json"
    return RunOutput(
        returncode=returncode,
        benchmarks=benchmarks if benchmarks.is_file() else None,
        log=data[-LOG_TAIL_BYTES:],
    )
