"""Run-to-run spread of GuideLLM 0.8.1 against `guidellm mock-server`: what a spot-check's tolerances rest on.

N repeated `guidellm run`s at one concurrency against one mock on loopback; each output is imported through
checker/read/kinds/guidellm and the portal's figures (system_tps, interactivity = tps_per_user, TTFT P90, goodput at
the SLO below) are read; prints (max - min) / mean per figure. docs/remeasurement.md keeps the figures and the
command. Needs the GuideLLM venv (`make guidellm`).

    .venv/bin/python bench/spotcheck_spread.py --runs 5 --concurrency 8 --requests 240 --port 9711
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from checker.cli.import_pipeline import import_runs  # noqa: E402
from checker.recompute.imported import Slo  # noqa: E402

FIGURES = ("system_tps", "tps_per_user", "ttft_p90_ms", "goodput")
MOCK_ARGS = [
    "--model", "mock-llama", "--ttft-ms", "60", "--ttft-ms-std", "15", "--itl-ms", "6", "--itl-ms-std", "1.5",
    "--output-tokens", "24", "--output-tokens-std", "6",
]  # fmt: skip


def _wait_up(port: int, timeout_s: float = 60.0) -> None:
    import urllib.request

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2)
            return
        except Exception:  # noqa: BLE001 - not up yet
            time.sleep(0.5)
    raise SystemExit(f"the mock did not come up on port {port}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--requests", type=int, default=240)
    parser.add_argument("--port", type=int, default=9711)
    parser.add_argument("--guidellm", default=str(ROOT / ".venv-guidellm" / "bin" / "guidellm"))
    parser.add_argument("--tokenizer", default=str(ROOT / "tests" / "checker" / "fixtures" / "tokenizer"))
    parser.add_argument("--slo-ttft-ms", type=float, default=100.0)
    parser.add_argument("--slo-tpot-ms", type=float, default=10.0)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="spotcheck-spread-"))
    mock = subprocess.Popen(
        [args.guidellm, "mock-server", "--host", "127.0.0.1", "--port", str(args.port), *MOCK_ARGS],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    figures: dict[str, list[float]] = {k: [] for k in FIGURES}
    try:
        _wait_up(args.port)
        for run in range(args.runs):
            folder = work / f"run{run}"
            folder.mkdir()
            scenario = {
                "backend": {
                    "kind": "openai_http",
                    "target": f"http://127.0.0.1:{args.port}",
                    "request_format": "/v1/chat/completions",
                },
                "profile": {"kind": "concurrent", "streams": args.concurrency},
                "data": [{"kind": "synthetic_text", "prompt_tokens": 64, "output_tokens": 24}],
                "tokenizer": {"kind": "huggingface_auto", "model": args.tokenizer},
                "constraints": [{"kind": "max_requests", "count": args.requests}],
                "seed": {"kind": "static", "value": 42 + run},
                "metrics": {"kind": "generative", "sample_size": 0},
                "outputs": [{"kind": "json", "path": "benchmarks.json"}],
            }
            (folder / "scenario.json").write_text(json.dumps({"spec": scenario}))
            env = {
                "HF_HUB_OFFLINE": "1",
                "TRANSFORMERS_OFFLINE": "1",
                "PATH": "/usr/bin:/bin",
                "HOME": str(work),
            }
            subprocess.run(
                [args.guidellm, "run", "--scenario", "scenario.json", "--disable-console-interactive"],
                cwd=folder,
                env=env,
                check=True,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            result = import_runs(
                [folder / "benchmarks.json"], slo=Slo(ttft_ms=args.slo_ttft_ms, tpot_ms=args.slo_tpot_ms)
            )
            (point,) = result.points
            for key in FIGURES:
                figures[key].append(float(point["portal"][key]))
            print(f"run {run}: " + ", ".join(f"{k}={figures[k][-1]:.4g}" for k in FIGURES), flush=True)
    finally:
        mock.terminate()
        mock.wait(timeout=30)
        shutil.rmtree(work, ignore_errors=True)
    print(f"\n{args.runs} runs, concurrency {args.concurrency}, {args.requests} requests each")
    for key in FIGURES:
        values = figures[key]
        mean = sum(values) / len(values)
        spread = (max(values) - min(values)) / mean if mean else float("nan")
        print(
            f"{key:14s} mean {mean:10.4g}  min {min(values):10.4g}  max {max(values):10.4g}  spread {spread:6.1%}"
        )


if __name__ == "__main__":
    main()
